"""The metrics package's errors: each message is one line naming what was asked."""


class MetricsError(Exception):
    """The metrics endpoint cannot start (a bad `--metrics-address`, an address in use)."""
