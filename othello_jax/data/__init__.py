"""Expert game data: the WThor database reader, batched rule-checked replay, and the
move-prediction dataset built from it (host-side numpy plus one jitted replay)."""
