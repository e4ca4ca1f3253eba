"""`python -m kraftlake …` is the `kraftlake` command."""

from kraftlake.cli.main import entry

entry()
