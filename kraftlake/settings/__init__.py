"""Every configuration file's typed definition, and the one TOML loader (bottom level: imports nothing of
the project, so the CLI, raft, the controller and the jobs all use it). A bad file raises `SettingsError`
naming the file and the key; the CLI turns it into one line on stderr and exit code 2."""

from kraftlake.settings.controller import AdminSettings, ControllerFile, PublisherSettings, load_controller_file
from kraftlake.settings.errors import SettingsError
from kraftlake.settings.kraftlake import (
    DEFAULT_STALL_SECONDS,
    DEFAULT_TOPIC,
    MIN_STALL_SECONDS,
    FollowSettings,
    KafkaSettings,
    KraftlakeSettings,
    MaterializeSettings,
    load_kraftlake,
)
from kraftlake.settings.loader import read_toml, validate
from kraftlake.settings.quorum import DEFAULT_SEGMENT_BYTES, QuorumSettings, load_quorum

__all__ = [
    "DEFAULT_SEGMENT_BYTES",
    "DEFAULT_STALL_SECONDS",
    "DEFAULT_TOPIC",
    "MIN_STALL_SECONDS",
    "AdminSettings",
    "ControllerFile",
    "FollowSettings",
    "KafkaSettings",
    "KraftlakeSettings",
    "MaterializeSettings",
    "PublisherSettings",
    "QuorumSettings",
    "SettingsError",
    "load_controller_file",
    "load_kraftlake",
    "load_quorum",
    "read_toml",
    "validate",
]
