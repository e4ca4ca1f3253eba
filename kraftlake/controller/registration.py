"""Controller registration (KIP-919, Kafka's ControllerRegistrationManager and
ClusterControlManager.registerController): every controller, active or standby, gets its own
RegisterControllerRecord (incarnation, endpoints, supported features) into the log once metadata.version
allows it, so the cluster knows what each controller supports before a feature is finalized."""

from __future__ import annotations

import base64
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kraftlake.controller.context import ControllerResult, WriteContext
from kraftlake.controller.errors import InvalidRequestError, UnsupportedVersionError
from kraftlake.controller.versions import MV_3_7_IV0
from kraftlake.records import metadata_types as mt
from kraftlake.records.wire import uuid_from_text
from kraftlake.replay.cluster import ControllerRegistration


@dataclass(frozen=True)
class ControllerRegistrationRequest:
    controller_id: int
    incarnation_id: str
    endpoints: Sequence[tuple[str, str, int]]  # (listener name, host, port)
    features: Mapping[str, tuple[int, int]]  # supported (min, max) level per feature

    def to_json(self) -> dict[str, Any]:
        return {
            "controller_id": self.controller_id, "incarnation_id": self.incarnation_id,
            "endpoints": [list(e) for e in self.endpoints],
            "features": {name: list(levels) for name, levels in self.features.items()},
        }

    @classmethod
    def from_json(cls, body: Mapping[str, Any]) -> ControllerRegistrationRequest:
        return cls(
            controller_id=int(body["controller_id"]),
            incarnation_id=str(body["incarnation_id"]),
            endpoints=tuple((str(n), str(h), int(p)) for n, h, p in body.get("endpoints", ())),
            features={str(k): (int(v[0]), int(v[1])) for k, v in body.get("features", {}).items()},
        )

    def matches(self, registered: ControllerRegistration | None) -> bool:
        """Whether the log already holds this very registration (nothing to write)."""
        return registered is not None and registered.incarnation_id == self.incarnation_id


def new_incarnation_id() -> str:
    """A fresh Kafka Uuid in text form for one run of a controller process."""
    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes)[:22].decode("ascii")
        if not text.startswith("-"):
            return text


def register_controller(ctx: WriteContext, request: ControllerRegistrationRequest) -> ControllerResult[None]:
    """One RegisterControllerRecord, unless the same incarnation is registered already."""
    if ctx.metadata_version < MV_3_7_IV0:
        raise UnsupportedVersionError(
            f"controller registrations need metadata.version {MV_3_7_IV0} or later (the cluster is at "
            f"{ctx.metadata_version})"
        )
    if request.controller_id < 0:
        raise InvalidRequestError(f"invalid controller id {request.controller_id}")
    try:
        uuid_from_text(request.incarnation_id)
    except ValueError:
        raise InvalidRequestError(f"invalid incarnation id {request.incarnation_id!r}") from None
    for name, _host, port in request.endpoints:
        if not 0 <= port <= 65535:
            raise InvalidRequestError(f"controller {request.controller_id}'s endpoint {name} has port {port}")
    if request.matches(ctx.state.cluster.controller(request.controller_id)):
        return ControllerResult([], None)
    record = mt.RegisterControllerRecord(
        controller_id=request.controller_id,
        incarnation_id=request.incarnation_id,
        zk_migration_ready=False,
        end_points=tuple(
            mt.ControllerEndpoint(name=name, host=host, port=port, security_protocol=0)
            for name, host, port in request.endpoints
        ),
        features=tuple(
            mt.ControllerFeature(name=name, min_supported_version=low, max_supported_version=high)
            for name, (low, high) in sorted(request.features.items())
        ),
    )
    return ControllerResult([record], None)
