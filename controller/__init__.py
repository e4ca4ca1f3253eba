"""The KRaft-style controller that runs on the Raft leader of the metadata log (Kafka's QuorumController),
its operations (one module per control manager), and the admin interface in front of it."""

from controller.clock import Clock, ManualClock, SystemClock
from controller.cluster import BrokerRegistrationRequest, BrokerState, HeartbeatReply, Listener
from controller.config import ControllerConfig
from controller.configs import ConfigChange, ConfigOp
from controller.controller import QuorumController
from controller.errors import ControllerError, NotControllerError
from controller.features import UpgradeType
from controller.metadata_log import LeaderAndEpoch, LocalMetadataLog, MetadataListener, MetadataLog
from controller.partition_change import Election
from controller.replication import IsrChange, NewTopic
from controller.security import AclBinding, AclFilter, ScramUpsertion

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
