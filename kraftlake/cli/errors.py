"""Errors shared by the library and the CLI, kept apart from `kraftlake.cli.main` so that library modules can
raise them without importing the command line."""


class UserFacingError(Exception):
    """An error whose message is the whole story for the user: printed without a traceback."""
