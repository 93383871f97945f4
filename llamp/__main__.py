"""``python -m llamp`` runs the CLI."""

from llamp.cli import main

main()
