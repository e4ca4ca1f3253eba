"""`--metrics-address`: what it accepts, and an address in use as one line and exit code 2 (a real socket
holding the port, the real command)."""

from __future__ import annotations

import socket
import subprocess
import sys
import urllib.request

import pytest

from kraftlake.metrics.endpoint import Address, MetricsEndpoint, parse_address
from kraftlake.metrics.errors import MetricsError

KRAFTLAKE = [sys.executable, "-m", "kraftlake.cli.main"]


@pytest.mark.parametrize(("text", "address"), [
    ("9100", Address("127.0.0.1", 9100)), (":9100", Address("127.0.0.1", 9100)),
    ("0.0.0.0:9100", Address("0.0.0.0", 9100)), ("[::1]:9100", Address("::1", 9100)), ("0", Address("127.0.0.1", 0)),
])
def test_a_port_alone_is_on_loopback(text: str, address: Address) -> None:
    assert parse_address(text) == address


@pytest.mark.parametrize("text", ["", "host:", "host:port", "127.0.0.1:70000"])
def test_a_bad_address_is_one_line_naming_it(text: str) -> None:
    with pytest.raises(MetricsError, match=rf"--metrics-address {text}: not HOST:PORT"):
        parse_address(text)


def test_the_endpoint_serves_the_text_format_on_the_port_it_got() -> None:
    endpoint = MetricsEndpoint(parse_address("0"), [])
    try:
        with urllib.request.urlopen(endpoint.url, timeout=30) as answer:
            assert answer.headers["Content-Type"].startswith("text/plain")
            assert b"process_cpu_seconds_total" in answer.read()
    finally:
        endpoint.close()


def test_an_address_in_use_is_one_line_and_exit_2() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = subprocess.run([*KRAFTLAKE, "follow", "--bootstrap-controllers", "127.0.0.1:1", "--bootstrap-servers",
                               "127.0.0.1:1", "--topic", "t", "--metrics-address", str(port)],
                              capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    assert done.stderr.splitlines() == [f"kraftlake follow: --metrics-address 127.0.0.1:{port}: Address already in use"]
