"""The KRaft-style controller that runs on the Raft leader of the metadata log (Kafka's QuorumController),
its operations (one module per control manager), and the admin interface in front of it."""

from kraftlake.controller.clock import Clock, ManualClock, SystemClock
from kraftlake.controller.cluster import BrokerRegistrationRequest, BrokerState, HeartbeatReply, Listener
from kraftlake.controller.config import ControllerConfig
from kraftlake.controller.configs import ConfigChange, ConfigOp
from kraftlake.controller.controller import QuorumController
from kraftlake.controller.errors import ControllerError, NotControllerError
from kraftlake.controller.features import UpgradeType
from kraftlake.controller.metadata_log import LeaderAndEpoch, LocalMetadataLog, MetadataListener, MetadataLog
from kraftlake.controller.partition_change import Election
from kraftlake.controller.replication import IsrChange, NewTopic
from kraftlake.controller.security import AclBinding, AclFilter, ScramUpsertion

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
