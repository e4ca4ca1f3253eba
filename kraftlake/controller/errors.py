"""Errors a controller request can fail with, named after Kafka's error codes so that a client (the admin
CLI, the simulator) can react to the code and show the message as it is."""

from __future__ import annotations


class ControllerError(Exception):
    """A request the controller refused; `code` is Kafka's error name, the message says what to do."""

    code = "UNKNOWN_SERVER_ERROR"
    http_status = 500

    def to_json(self) -> dict[str, object]:
        return {"code": self.code, "message": str(self)}


class NotControllerError(ControllerError):
    """This node is not the active controller: names the leader it knows of so the caller can go there."""

    code = "NOT_CONTROLLER"
    http_status = 421

    def __init__(self, leader_id: int | None, leader_address: str | None = None, detail: str = "") -> None:
        self.leader_id = leader_id
        self.leader_address = leader_address
        if leader_id is None:
            where = "no controller is known yet (an election may be in progress)"
        elif leader_address:
            where = f"the active controller is node {leader_id} at {leader_address}"
        else:
            where = f"the active controller is node {leader_id}"
        super().__init__(f"this node is not the active controller{detail}: {where}")

    def to_json(self) -> dict[str, object]:
        return {**super().to_json(), "leader_id": self.leader_id, "leader_address": self.leader_address}


class InvalidRequestError(ControllerError):
    code = "INVALID_REQUEST"
    http_status = 400


class UnknownTopicError(ControllerError):
    code = "UNKNOWN_TOPIC_OR_PARTITION"
    http_status = 404


class TopicExistsError(ControllerError):
    code = "TOPIC_ALREADY_EXISTS"
    http_status = 409


class InvalidTopicError(ControllerError):
    code = "INVALID_TOPIC_EXCEPTION"
    http_status = 400


class InvalidReplicationFactorError(ControllerError):
    code = "INVALID_REPLICATION_FACTOR"
    http_status = 400


class InvalidPartitionsError(ControllerError):
    code = "INVALID_PARTITIONS"
    http_status = 400


class InvalidReplicaAssignmentError(ControllerError):
    code = "INVALID_REPLICA_ASSIGNMENT"
    http_status = 400


class InvalidConfigError(ControllerError):
    code = "INVALID_CONFIG"
    http_status = 400


class BrokerNotRegisteredError(ControllerError):
    code = "BROKER_ID_NOT_REGISTERED"
    http_status = 404


class StaleBrokerEpochError(ControllerError):
    code = "STALE_BROKER_EPOCH"
    http_status = 409


class DuplicateBrokerRegistrationError(ControllerError):
    code = "DUPLICATE_BROKER_REGISTRATION"
    http_status = 409


class UnsupportedVersionError(ControllerError):
    code = "UNSUPPORTED_VERSION"
    http_status = 400


class InvalidUpdateVersionError(ControllerError):
    code = "INVALID_UPDATE_VERSION"
    http_status = 409


class FencedLeaderEpochError(ControllerError):
    code = "FENCED_LEADER_EPOCH"
    http_status = 409


class NotLeaderOrFollowerError(ControllerError):
    code = "NOT_LEADER_OR_FOLLOWER"
    http_status = 409


class IneligibleReplicaError(ControllerError):
    code = "INELIGIBLE_REPLICA"
    http_status = 409


class ElectionNotNeededError(ControllerError):
    code = "ELECTION_NOT_NEEDED"
    http_status = 409


class EligibleLeadersNotAvailableError(ControllerError):
    code = "ELIGIBLE_LEADERS_NOT_AVAILABLE"
    http_status = 409


class PreferredLeaderNotAvailableError(ControllerError):
    code = "PREFERRED_LEADER_NOT_AVAILABLE"
    http_status = 409


class InvalidFeatureUpdateError(ControllerError):
    code = "INVALID_UPDATE_VERSION"
    http_status = 400


class ResourceNotFoundError(ControllerError):
    code = "RESOURCE_NOT_FOUND"
    http_status = 404


class DelegationTokenDisabledError(ControllerError):
    code = "DELEGATION_TOKEN_AUTH_DISABLED"
    http_status = 400


class DelegationTokenNotFoundError(ControllerError):
    code = "DELEGATION_TOKEN_NOT_FOUND"
    http_status = 404


class DelegationTokenExpiredError(ControllerError):
    code = "DELEGATION_TOKEN_EXPIRED"
    http_status = 409


class DelegationTokenOwnerMismatchError(ControllerError):
    code = "DELEGATION_TOKEN_OWNER_MISMATCH"
    http_status = 403


class UnacceptableCredentialError(ControllerError):
    code = "UNACCEPTABLE_CREDENTIAL"
    http_status = 400


class PolicyViolationError(ControllerError):
    code = "POLICY_VIOLATION"
    http_status = 400


class RequestTooLargeError(ControllerError):
    code = "INVALID_REQUEST"
    http_status = 413


class InternalControllerError(ControllerError):
    """A bug surfaced: the request's records did not replay; nothing of it was committed."""

    code = "UNKNOWN_SERVER_ERROR"
    http_status = 500



class NewLeaderElectedError(ControllerError):
    """An AlterPartition was applied, but it also moved leadership (e.g. it completed a reassignment that
    dropped the leader): the old leader must wait for the new partition state."""

    code = "NEW_LEADER_ELECTED"
    http_status = 409


class NoReassignmentInProgressError(ControllerError):
    code = "NO_REASSIGNMENT_IN_PROGRESS"
    http_status = 409


class InvalidReplicaStateError(ControllerError):
    code = "INVALID_REPLICA_STATE"
    http_status = 409
