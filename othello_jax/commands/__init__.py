"""Command-line commands; each module exposes ``main(argv) -> int`` and is registered in ``cli.COMMANDS``."""
