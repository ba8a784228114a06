"""CLI commands (filled in by the module owner)."""
COMMANDS: list = []
