"""Throwaway TLS material for the tests, made with `openssl` at fixture time (nothing secret is checked in): a
CA, and a server certificate it signs for one host, with its key in one PEM file, as Kafka's
`ssl.keystore.type=PEM` reads it (an unencrypted PKCS#8 key, then the certificate)."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

DAYS = "2"


@dataclass(frozen=True)
class Tls:
    ca: Path  # the CA's certificate: what a client trusts (`ssl.ca.location`)
    keystore: Path  # the server's key and certificate (`ssl.keystore.location`, type PEM)


def _openssl(*args: str) -> None:
    subprocess.run(["openssl", *args], check=True, capture_output=True, timeout=60)


def make_ca(directory: Path, name: str) -> tuple[Path, Path]:
    """A self-signed CA: (certificate, key)."""
    directory.mkdir(parents=True, exist_ok=True)
    cert, key = directory / f"{name}.pem", directory / f"{name}.key"
    _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out", str(cert),
             "-days", DAYS, "-subj", f"/CN={name}")  # fmt: skip
    return cert, key


def make_tls(directory: Path, host: str) -> Tls:
    """A CA and a certificate it signed for `host` (an IP address: the SAN a client checks it against)."""
    ca, ca_key = make_ca(directory, "kraftlake-test-ca")
    key, request, cert = directory / "server.key", directory / "server.csr", directory / "server.pem"
    _openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out", str(request),
             "-subj", f"/CN={host}")  # fmt: skip
    extensions = directory / "san.cnf"
    extensions.write_text(f"subjectAltName=IP:{host}\n")
    _openssl("x509", "-req", "-in", str(request), "-CA", str(ca), "-CAkey", str(ca_key), "-CAcreateserial",
             "-out", str(cert), "-days", DAYS, "-extfile", str(extensions))  # fmt: skip
    keystore = directory / "keystore.pem"
    keystore.write_text(key.read_text() + cert.read_text())
    return Tls(ca, keystore)
