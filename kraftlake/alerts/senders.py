"""The receivers: Prometheus Alertmanager's `POST /api/v2/alerts` and a plain JSON webhook. Each alert is one
JSON object (`message`), built once and kept as it is until delivered, so a resend is the same alert."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from kraftlake.alerts.errors import DeliveryError
from kraftlake.alerts.matcher import Alert
from kraftlake.alerts.rules import AlertsFile
from kraftlake.lake.history import iso_time

TIMEOUT_S = 30.0
Message = dict[str, Any]


def message(alert: Alert, files: AlertsFile) -> Message:
    """The alert as every receiver gets it: Alertmanager's labels and annotations, and the same facts flat."""
    time = iso_time(alert.time_ms)
    link = f"{files.explorer_url}/clusters/{files.cluster}?at={alert.offset}" if files.explorer_url else ""
    labels = {**alert.rule.labels, "alertname": alert.rule.name, "cluster": files.cluster, "kind": alert.rule.kind,
              "resource": alert.resource, "offset": str(alert.offset)}
    annotations = {"summary": alert.summary(), "before": alert.before, "after": alert.after,
                   "offset": str(alert.offset), "time": time}
    if link:
        annotations["explorer"] = link
    found = {"id": alert.identity(files), "labels": labels, "annotations": annotations, "generatorURL": link}
    if time:  # else Alertmanager takes its arrival as the start
        found["startsAt"] = time
    return found


class Receiver(Protocol):
    @property
    def name(self) -> str:
        """The kind and address, as lines name it."""

    def send(self, messages: Sequence[Message]) -> None: ...


@dataclass(frozen=True)
class Alertmanager:
    """Alertmanager at `url` (its base URL). Each alert carries its offset as a label: two changes of one
    resource are two alerts, and a resent alert is the same one (Alertmanager merges it by its labels). No
    `endsAt`: Alertmanager resolves it after its `resolve_timeout`, a change being an event, not a state."""

    url: str

    @property
    def name(self) -> str:
        return f"alertmanager {self.url}"

    def send(self, messages: Sequence[Message]) -> None:
        body = [{key: m[key] for key in ("labels", "annotations", "startsAt", "generatorURL") if key in m}
                for m in messages]
        post(f"{self.url}/api/v2/alerts", body, self.name)


@dataclass(frozen=True)
class Webhook:
    """A plain JSON POST of `{"alerts": [...]}`; each alert's `id` is the same when it is resent."""

    url: str

    @property
    def name(self) -> str:
        return f"webhook {self.url}"

    def send(self, messages: Sequence[Message]) -> None:
        post(self.url, {"alerts": list(messages)}, self.name)


def receivers(files: AlertsFile) -> list[Receiver]:
    return [*(Alertmanager(url) for url in files.alertmanagers), *(Webhook(url) for url in files.webhooks)]


def post(url: str, body: Any, name: str) -> None:
    request = urllib.request.Request(url, json.dumps(body).encode(), {"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT_S) as answer:
            answer.read()
    except urllib.error.HTTPError as error:
        detail = error.read().decode(errors="replace").strip().splitlines()
        raise DeliveryError(f"{name}: answered {error.code} {error.reason}"
                            f"{': ' + detail[0][:200] if detail else ''}") from None
    except (OSError, ValueError) as error:
        reason = getattr(error, "reason", None) or getattr(error, "strerror", None) or error
        raise DeliveryError(f"{name}: {reason}") from None
