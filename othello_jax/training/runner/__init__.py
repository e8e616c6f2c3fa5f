"""The host's run: compile each stage, run iterations, checkpoint, log metrics, play in-run matches."""
