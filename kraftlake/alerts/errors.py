"""The alerts package's errors: each message is one line naming the file and rule, or the receiver's address."""


class AlertsFileError(Exception):
    """The alerts file cannot be used: not TOML, or a rule names an unknown table, key, condition or field."""


class DeliveryError(Exception):
    """A receiver did not take the alerts (down, or answering an error): retried with backoff."""
