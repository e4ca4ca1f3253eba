"""The embedded local Kafka broker: `noida-db` serving only the Kafka protocol, one process per data directory.

It is the default broker of `make run` and of the tests; users point the project at a real cluster instead
(see `kraftlake.config.resolve_bootstrap`). A small JSON state file (pid, host, port) in the data directory
lets another process (`kraftlake broker status|stop`) find a broker it did not start.

What noida-db 0.2.3 does, as checked on these machines:

- The binary prints "weak version `GLIBC_2.39' not found" on start here; it is harmless (the broker works).
  The `noida-db` console script runs the native binary as a *child* (`subprocess.call`), so a signal sent
  to the script never reaches the broker: we run the binary inside the wheel directly.
- It refuses a second instance on the same data directory and a port already in use (exit code 1, a
  one-line error on stderr), and binds 127.0.0.1 by default.
- Persistence is a snapshot of the whole state (`kafka.json`, record bytes as JSON number lists, about
  3.5x the payload) rewritten once per second, not a write-ahead log. SIGTERM writes it before exiting, so
  `stop()` loses nothing; SIGKILL loses what was acknowledged in the last second, including topics created
  in that second. A crash test that kills the broker must wait over a second after its last write.
- Fetch limits are ignored: a fetch is answered with everything from its offset to the end of the partition
  (a 1M-partition metadata log: one 127 MB response). Past librdkafka's `receive.message.max.bytes`
  (100 MB by default) the client reports "FindCoordinator response error: Local: Bad message format" and
  reads nothing, so the project's consumers raise that limit to its maximum (2 GiB).
- Topic configs: unknown names are rejected (INVALID_CONFIG). The default `retention.ms` is 604800000
  (7 days), so the metadata topic must be created with `retention.ms=-1` (honoured: nothing is deleted).
  A finite `retention.ms` is honoured (records were gone within seconds with `retention.ms=1000`);
  `cleanup.policy=compact` is accepted but no compaction was seen; `retention.bytes` was not applied
  within 12 s; `message.timestamp.type=LogAppendTime` is honoured. Records with an 8-day-old CreateTime
  were not deleted by the 7-day default, so retention appears to count from append time, unlike Kafka.
- Transactions: commit, abort and the last stable offset (the high watermark a read_committed client
  sees) are right, with one bug: a read_committed fetch starting *after* an aborted transaction still
  lists it as aborted, so the client silently drops the later committed records of that same producer
  (other producers are unaffected). Writers to this broker should not abort and go on with the same
  transactional id; `tests/kraftlake/test_broker.py` keeps a strict xfail canary for it.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import stat
import subprocess
import time
from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path
from types import TracebackType

from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient

from kraftlake.errors import UserFacingError

HOST = "127.0.0.1"
STATE_FILE = "kraftlake-broker.json"
LOG_FILE = "broker.log"
_GLIBC_NOISE = "weak version `GLIBC_"


class BrokerError(UserFacingError):
    """The local broker could not be started, found or stopped."""


class PortInUseError(BrokerError):
    """The Kafka port is taken: by a listener found before the launch, or as noida-db reported it."""


def default_data_dir() -> Path:
    """`run/broker` under the current directory: `make clean` removes `run/`, and git ignores it."""
    return Path.cwd() / "run" / "broker"


def noida_binary() -> Path:
    """The native noida-db binary: the one inside the installed wheel, else a `noida-db` on PATH."""
    packaged = Path(str(files("noida_db").joinpath("noida-db")))
    if packaged.is_file():
        if not os.access(packaged, os.X_OK):  # wheels do not always keep the mode bits
            packaged.chmod(packaged.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
        return packaged
    found = shutil.which("noida-db")
    if found is None:
        raise BrokerError("noida-db is not installed: run `make install` (it is a dependency of kraftlake)")
    return Path(found)


@dataclass(frozen=True)
class BrokerState:
    """What the state file records about a started broker."""

    pid: int
    host: str
    port: int

    @property
    def bootstrap_servers(self) -> str:
        return f"{self.host}:{self.port}"


def read_state(data_dir: Path) -> BrokerState | None:
    """The state file's content, or None when there is none (never started, or stopped)."""
    try:
        raw = json.loads((data_dir / STATE_FILE).read_text())
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as error:
        raise BrokerError(f"unreadable broker state file {data_dir / STATE_FILE}: {error}") from error
    return BrokerState(pid=int(raw["pid"]), host=str(raw["host"]), port=int(raw["port"]))


def running_broker(data_dir: Path) -> BrokerState | None:
    """The broker recorded for this data dir if its process is still alive, else None (a stale file)."""
    data_dir = data_dir.resolve()
    state = read_state(data_dir)
    if state is None or not _is_live_broker(state.pid, data_dir):
        return None
    return state


def stop_broker(data_dir: Path, grace: float = 10.0) -> BrokerState | None:
    """Stop the broker of a data dir that any process started; returns what was stopped, None if nothing was."""
    data_dir = data_dir.resolve()
    state = running_broker(data_dir)
    if state is not None:
        os.kill(state.pid, signal.SIGTERM)
        if not _wait_gone(state.pid, data_dir, grace):
            os.kill(state.pid, signal.SIGKILL)
            _wait_gone(state.pid, data_dir, grace)
    with contextlib.suppress(FileNotFoundError):
        (data_dir / STATE_FILE).unlink()
    return state


def _is_live_broker(pid: int, data_dir: Path) -> bool:
    """True if `pid` runs noida-db on this data dir and is not a zombie: a recycled pid does not count."""
    proc = Path("/proc") / str(pid)
    if not Path("/proc/self").is_dir():  # no procfs (macOS): the signal probe is all there is
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:  # alive, owned by another user
            pass
        return True
    try:
        cmdline = (proc / "cmdline").read_bytes().split(b"\0")
        process_state = (proc / "stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return process_state != "Z" and os.fsencode(str(data_dir)) in cmdline


def _wait_gone(pid: int, data_dir: Path, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while _is_live_broker(pid, data_dir):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def _free_port(host: str) -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((host, 0))
        return int(probe.getsockname()[1])


def _port_is_free(host: str, port: int) -> bool:
    """Whether nothing listens on the port; SO_REUSEADDR so that TIME_WAIT leftovers of a restart don't count.

    Checked before the launch because the readiness probe would otherwise happily talk to the other
    listener while noida-db exits with "port already in use".
    """
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError:
            return False
        return True


def _log_tail(path: Path, start: int, lines: int = 20) -> str:
    """The end of the broker log from byte `start` on (one launch), without the harmless GLIBC warning."""
    try:
        with path.open("rb") as log:
            log.seek(start)
            text = log.read().decode(errors="replace")
    except FileNotFoundError:
        return "(no log written)"
    kept = [line for line in text.splitlines() if _GLIBC_NOISE not in line]
    return "\n".join(kept[-lines:])


class LocalBroker:
    """One noida-db process (Kafka only) on a loopback port with its own data directory.

    The port is picked once (free, or the one given) and kept across `restart()`, so clients and state
    files stay valid. `detach=True` puts the broker in its own session so it outlives the starting process
    (the CLI); otherwise it is a plain child that the owner must stop.
    """

    def __init__(
        self,
        data_dir: Path | str,
        port: int | None = None,
        *,
        host: str = HOST,
        startup_timeout: float = 30.0,
        detach: bool = False,
    ) -> None:
        self.data_dir = Path(data_dir).resolve()
        self.host = host
        self.startup_timeout = startup_timeout
        self.detach = detach
        self._port = port
        self._process: subprocess.Popen[bytes] | None = None
        self._log_start = 0

    @property
    def port(self) -> int:
        if self._port is None:
            raise BrokerError("the local broker has not been started, so it has no port yet")
        return self._port

    @property
    def bootstrap_servers(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def log_path(self) -> Path:
        return self.data_dir / LOG_FILE

    @property
    def pid(self) -> int | None:
        return None if self._process is None else self._process.pid

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def start(self) -> LocalBroker:
        """Launch noida-db and return once it answers a Kafka metadata request."""
        if self.running:
            raise BrokerError(f"the local broker is already running at {self.bootstrap_servers}")
        existing = running_broker(self.data_dir)
        if existing is not None:
            raise BrokerError(
                f"a broker already runs on {self.data_dir} at {existing.bootstrap_servers} "
                f"(pid {existing.pid}); stop it with `kraftlake broker stop --data-dir {self.data_dir}`"
            )
        self.data_dir.mkdir(parents=True, exist_ok=True)
        if self._port is None:
            self._launch_on_free_port()
        else:
            self._launch()
        self._write_state()
        return self

    def stop(self, grace: float = 10.0) -> None:
        """SIGTERM (noida-db then saves its state), SIGKILL if it is still alive after `grace` seconds."""
        if self._process is None:
            return
        if self._process.poll() is None:
            self._process.terminate()
            try:
                self._process.wait(grace)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
        self._forget()

    def kill(self) -> None:
        """SIGKILL, as a crash would: the last second of acknowledged writes may be lost (see module doc)."""
        if self._process is None:
            return
        self._process.kill()
        self._process.wait()
        self._forget()

    def restart(self) -> LocalBroker:
        """Stop (if running) and start again on the same port and data directory."""
        self.stop()
        return self.start()

    def __enter__(self) -> LocalBroker:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()

    def _launch_on_free_port(self, attempts: int = 3) -> None:
        """Another process can take a free port before noida-db binds it: then pick another, a few times."""
        for attempt in range(attempts):
            self._port = _free_port(self.host)
            try:
                self._launch()
                return
            except PortInUseError:
                if attempt + 1 == attempts:
                    self._port = None
                    raise

    def _launch(self) -> None:
        address = self.bootstrap_servers
        if not _port_is_free(self.host, self.port):
            raise PortInUseError(f"cannot start the local broker: {address} is already in use")
        command = [
            str(noida_binary()), "start", "--only", "kafka", "--host", self.host,
            "--kafka-port", str(self.port), "--data-dir", str(self.data_dir),
        ]  # fmt: skip
        with self.log_path.open("ab") as log:
            self._log_start = log.tell()
            log.write(f"--- kraftlake: starting noida-db on {address} at {time.ctime()}\n".encode())
            log.flush()
            self._process = subprocess.Popen(
                command,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=self.detach,
            )
        try:
            self._wait_ready()
        except BrokerError:
            self.kill()
            raise

    def _wait_ready(self) -> None:
        """Poll until the port accepts connections and a metadata request succeeds, or fail with the log."""
        assert self._process is not None
        address = self.bootstrap_servers
        deadline = time.monotonic() + self.startup_timeout
        last_error = "no connection yet"
        while True:
            code = self._process.poll()
            if code is not None:
                tail = _log_tail(self.log_path, self._log_start)
                error = PortInUseError if "already in use" in tail else BrokerError
                raise error(
                    f"noida-db exited with code {code} before answering on {address}; "
                    f"end of {self.log_path}:\n{tail}"
                )
            try:
                with socket.create_connection((self.host, self.port), timeout=0.5):
                    pass
                AdminClient({"bootstrap.servers": address, "log_level": 0}).list_topics(timeout=2.0)
                return
            except (OSError, KafkaException) as error:
                last_error = str(error)
            if time.monotonic() > deadline:
                raise BrokerError(
                    f"noida-db did not answer the Kafka protocol on {address} within "
                    f"{self.startup_timeout:g} s ({last_error}); end of {self.log_path}:\n"
                    f"{_log_tail(self.log_path, self._log_start)}"
                )
            time.sleep(0.05)

    def _write_state(self) -> None:
        assert self._process is not None
        state = {"pid": self._process.pid, "host": self.host, "port": self.port}
        temporary = self.data_dir / f".{STATE_FILE}.tmp"
        temporary.write_text(json.dumps(state) + "\n")
        temporary.replace(self.data_dir / STATE_FILE)

    def _forget(self) -> None:
        """Drop the process handle, and the state file when it still names this process."""
        assert self._process is not None
        state = read_state(self.data_dir)
        if state is not None and state.pid == self._process.pid:
            (self.data_dir / STATE_FILE).unlink()
        self._process = None
