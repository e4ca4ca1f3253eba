"""Subcommands of the `kraftlake` CLI, one module per area."""
