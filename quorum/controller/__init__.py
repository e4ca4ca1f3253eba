"""The KRaft-style controller that runs on the Raft leader of the metadata log (Kafka's QuorumController),
its operations (one module per control manager), and the admin interface in front of it."""

from quorum.controller.clock import Clock, ManualClock, SystemClock
from quorum.controller.cluster import BrokerRegistrationRequest, BrokerState, HeartbeatReply, Listener
from quorum.controller.config import ControllerConfig
from quorum.controller.configs import ConfigChange, ConfigOp
from quorum.controller.controller import QuorumController
from quorum.controller.errors import ControllerError, NotControllerError
from quorum.controller.features import UpgradeType
from quorum.controller.metadata_log import LeaderAndEpoch, LocalMetadataLog, MetadataListener, MetadataLog
from quorum.controller.partition_change import Election
from quorum.controller.replication import IsrChange, NewTopic
from quorum.controller.security import AclBinding, AclFilter, ScramUpsertion

__all__ = [
    "AclBinding",
    "AclFilter",
    "BrokerRegistrationRequest",
    "BrokerState",
    "Clock",
    "ConfigChange",
    "ConfigOp",
    "ControllerConfig",
    "ControllerError",
    "Election",
    "HeartbeatReply",
    "IsrChange",
    "LeaderAndEpoch",
    "Listener",
    "LocalMetadataLog",
    "ManualClock",
    "MetadataListener",
    "MetadataLog",
    "NewTopic",
    "NotControllerError",
    "QuorumController",
    "ScramUpsertion",
    "SystemClock",
    "UpgradeType",
]
