"""The controller listener's security settings, under the names Kafka's clients use (`security.protocol`,
`sasl.mechanism`, `sasl.jaas.config`, `ssl.truststore…` are Java's; `sasl.username`/`sasl.password`,
`ssl.ca.location`, `ssl.certificate.location`, `ssl.key.location` are librdkafka's), and what they do to a
connection: TLS through Python's `ssl`, then SaslHandshake + SaslAuthenticate (PLAIN, SCRAM-SHA-256/512).

The password is held here only: `__repr__` hides it, and no message built from these settings carries it.
"""

from __future__ import annotations

import re
import ssl
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from scramp import ScramClient, ScramException

PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
KNOWN = {
    "security.protocol", "sasl.mechanism", "sasl.mechanisms", "sasl.username", "sasl.password", "sasl.jaas.config",
    "ssl.ca.location", "ssl.certificate.location", "ssl.key.location", "ssl.key.password",
    "ssl.endpoint.identification.algorithm",
}
_JAAS_OPTION = re.compile(r'(\w+)\s*=\s*"((?:[^"\\]|\\.)*)"')


class SecurityError(Exception):
    """Settings that cannot be used: the message names the setting (never a password)."""


@dataclass(frozen=True)
class Security:
    protocol: str = "PLAINTEXT"
    mechanism: str = "PLAIN"
    username: str | None = None
    password: str | None = field(default=None, repr=False)
    ca_location: str | None = None
    certificate_location: str | None = None
    key_location: str | None = None
    key_password: str | None = field(default=None, repr=False)
    check_hostname: bool = True

    @property
    def uses_sasl(self) -> bool:
        return self.protocol.startswith("SASL_")

    @property
    def uses_ssl(self) -> bool:
        return self.protocol in ("SSL", "SASL_SSL")

    def ssl_context(self) -> ssl.SSLContext:
        """Verifies the server against `ssl.ca.location` (else the system's CAs), and its name unless
        `ssl.endpoint.identification.algorithm` is empty (Kafka's own switch); a client certificate when given."""
        try:
            context = ssl.create_default_context(cafile=self.ca_location)
            context.check_hostname = self.check_hostname
            if self.certificate_location:
                context.load_cert_chain(self.certificate_location, self.key_location, self.key_password)
        except (OSError, ssl.SSLError) as error:
            raise SecurityError(f"ssl settings: {error}") from None
        return context


PLAINTEXT = Security()


def load_security(pairs: Iterable[str], properties: Path | None = None) -> Security:
    """`KEY=VALUE` settings, over those of a client properties file (Kafka's `--command-config` form)."""
    settings: dict[str, str] = {}
    if properties is not None:
        try:
            lines = properties.read_text().splitlines()
        except OSError as error:
            raise SecurityError(f"{properties}: {error.strerror or error}") from None
        settings.update(_pair(line, str(properties)) for line in lines if line.strip() and line[0] not in "#!")
    settings.update(_pair(pair, "--security") for pair in pairs)
    return parse_security(settings)


def _pair(text: str, where: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep:
        raise SecurityError(f"{where}: {key.strip()!r} is not KEY=VALUE")
    return key.strip(), value.strip()


def parse_security(settings: dict[str, str]) -> Security:
    unknown = sorted(set(settings) - KNOWN)
    if unknown:
        raise SecurityError(f"unknown security setting(s) {', '.join(unknown)}; known: {', '.join(sorted(KNOWN))}")
    protocol = settings.get("security.protocol", "PLAINTEXT").upper()
    mechanism = settings.get("sasl.mechanism", settings.get("sasl.mechanisms", "PLAIN")).upper()
    if protocol not in PROTOCOLS:
        raise SecurityError(f"security.protocol {protocol}: one of {', '.join(PROTOCOLS)}")
    if mechanism not in MECHANISMS:
        raise SecurityError(f"sasl.mechanism {mechanism}: one of {', '.join(MECHANISMS)}")
    username, password = settings.get("sasl.username"), settings.get("sasl.password")
    if "sasl.jaas.config" in settings:
        options = dict(_JAAS_OPTION.findall(settings["sasl.jaas.config"]))
        username, password = options.get("username", username), options.get("password", password)
    if protocol.startswith("SASL_") and (username is None or password is None):
        raise SecurityError(f"security.protocol {protocol} needs sasl.username and sasl.password "
                            "(or sasl.jaas.config with username=\"…\" password=\"…\")")
    return Security(
        protocol, mechanism, username, password, settings.get("ssl.ca.location"),
        settings.get("ssl.certificate.location"), settings.get("ssl.key.location"), settings.get("ssl.key.password"),
        settings.get("ssl.endpoint.identification.algorithm", "https") != "",
    )


class SaslExchange:
    """One client side of a SASL mechanism: `respond(challenge)` gives the next message to send (the first
    with no challenge), None once the server's last message was checked."""

    def respond(self, challenge: bytes | None) -> bytes | None:
        raise NotImplementedError


class PlainExchange(SaslExchange):
    def __init__(self, username: str, password: str) -> None:
        self._message: bytes | None = f"\0{username}\0{password}".encode()

    def respond(self, challenge: bytes | None) -> bytes | None:
        message, self._message = self._message, None
        return message


class ScramExchange(SaslExchange):
    """RFC 5802 without channel binding, as Kafka's ScramSaslServer speaks it, through `scramp` (a maintained
    SCRAM implementation: security code is not ours to hand-write)."""

    def __init__(self, username: str, password: str, mechanism: str) -> None:
        self._client = ScramClient([mechanism], username, password)
        self._step = 0

    def respond(self, challenge: bytes | None) -> bytes | None:
        self._step += 1
        if self._step == 1:
            return self._client.get_client_first().encode()
        if challenge is None:
            raise SecurityError("SCRAM: the server sent no challenge")
        try:
            if self._step == 2:
                self._client.set_server_first(challenge.decode())
                return self._client.get_client_final().encode()
            self._client.set_server_final(challenge.decode())
        except ScramException as error:
            raise SecurityError(f"SCRAM: {error}") from None
        return None


def sasl_exchange(security: Security) -> SaslExchange:
    assert security.username is not None and security.password is not None  # parse_security requires them
    if security.mechanism == "PLAIN":
        return PlainExchange(security.username, security.password)
    return ScramExchange(security.username, security.password, security.mechanism)
