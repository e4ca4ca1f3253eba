"""The two follow modes as users run them (`kraftlake follow`, `kraftlake publish DIR --follow`, each its own
process), the hard-link archiver that keeps what Kafka's metadata retention deletes (the oracle needs the whole
log), what the tests read from a live node's `__cluster_metadata-0`, and the check that a topic holds it."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path

from kraftlake.bridge.publisher import PublisherConfig, read_tail
from kraftlake.records.batch import read_header
from kraftlake.records.errors import RecordFormatError
from kraftlake.records.topic import decode_key, snapshot_of
from tests.jobs.metadata_topic import topic_messages

REPO = Path(__file__).resolve().parents[2]
# Node properties for a metadata log Kafka deletes while a test runs: a segment rolled every second, a snapshot
# every 2 s, 1 s of history kept (Kafka 4.4 accepts these; its cleaner still runs only once a minute).
SHORT_HISTORY = {
    "metadata.log.max.snapshot.interval.ms": "2000",
    "metadata.log.segment.ms": "1000",
    "metadata.max.retention.ms": "1000",
    "internal.metadata.delete.delay.millis": "0",
}


class FollowProcess:
    """`kraftlake follow` as its own process, as users run it."""

    def __init__(self, controllers: str, bootstrap: str, topic: str, *extra: str) -> None:
        self.args = [sys.executable, "-m", "kraftlake.cli.main", "follow", "--bootstrap-controllers", controllers,
                     "--bootstrap-servers", bootstrap, "--topic", topic, *extra]
        self.output = b""  # what it printed so far, read as it comes (`wait_for`)
        self.process: subprocess.Popen[bytes] | None = None
        self._reader: threading.Thread | None = None

    def start(self) -> FollowProcess:
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        self.process = subprocess.Popen(self.args, cwd=REPO, env=env, stdout=subprocess.PIPE,
                                        stderr=subprocess.STDOUT)
        self._reader = threading.Thread(target=self._read, args=(self.process,), daemon=True)
        self._reader.start()
        return self

    def _read(self, process: subprocess.Popen[bytes]) -> None:
        assert process.stdout is not None
        for line in iter(process.stdout.readline, b""):
            self.output += line

    def wait_for(self, *texts: bytes, timeout_s: float = 120.0) -> bytes:
        """Until its output holds one of `texts` (the one found): a condition, not a guessed sleep."""
        deadline = time.monotonic() + timeout_s
        while True:
            found = next((text for text in texts if text in self.output), None)
            if found is not None:
                return found
            assert self.process is not None and self.process.poll() is None, f"it exited: {self.output[-2000:]!r}"
            assert time.monotonic() < deadline, f"none of {texts} in {timeout_s:.0f} s: {self.output[-2000:]!r}"
            time.sleep(0.1)

    def finish(self, sig: int = signal.SIGTERM) -> int:
        """Stop it with `sig` (unless it ended already) and collect its output; again: the same code."""
        assert self.process is not None and self._reader is not None
        if self.process.poll() is None:
            self.process.send_signal(sig)
        self.process.wait(timeout=60)
        self._reader.join(timeout=60)
        return self.process.returncode


class PublishFollowProcess(FollowProcess):
    """`kraftlake publish DIR --follow` as its own process."""

    def __init__(self, directory: Path, bootstrap: str, topic: str, *extra: str) -> None:
        super().__init__("", bootstrap, topic)
        self.args = [sys.executable, "-m", "kraftlake.cli.main", "publish", str(directory), "--follow",
                     "--poll-interval", "0.2", "--log-interval", "1", "--bootstrap-servers", bootstrap,
                     "--topic", topic, *extra]


class Linker:
    """Hard links every segment and snapshot of live metadata directories into their copies as they appear
    (`pairs()` names them, asked again each round: a node may join later), so a copy keeps what Kafka's
    retention deletes (a hard link keeps the data; the active segment grows in both): the oracle's whole log
    from offset 0."""

    def __init__(self, pairs: Callable[[], Iterable[tuple[Path, Path]]]) -> None:
        self.pairs = pairs
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> Linker:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        while not self._stop.wait(0.1):
            for directory, copy in self.pairs():
                copy.mkdir(parents=True, exist_ok=True)
                for path in [*directory.glob("*.log"), *directory.glob("*.checkpoint")]:
                    with contextlib.suppress(FileExistsError, FileNotFoundError):
                        os.link(path, copy / path.name)


def log_batches(directory: Path) -> dict[int, bytes]:
    """base offset -> bytes of every whole batch in the node's segments (the active one may end mid-batch)."""
    batches: dict[int, bytes] = {}
    for segment in sorted(directory.glob("*.log")):
        data = segment.read_bytes()
        pos = 0
        while pos < len(data):
            try:
                header = read_header(data, pos, str(segment))
            except RecordFormatError:
                break
            batches[header.base_offset] = data[pos : pos + header.size_in_bytes]
            pos += header.size_in_bytes
    return batches


def end_offset(directory: Path) -> int:
    """The last offset a node's log files hold (committed or about to be)."""
    return max(read_header(raw, 0, "").last_offset for raw in log_batches(directory).values())


def log_start(directory: Path) -> int:
    """The first offset a node still has in a segment (Kafka's retention deleted those before)."""
    return min(int(p.name[:20]) for p in directory.glob("*.log"))


def wait_published(bootstrap: str, topic: str, offset: int, timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    while read_tail(PublisherConfig(bootstrap, topic)).next_offset <= offset:
        assert time.monotonic() < deadline, f"topic {topic} never reached offset {offset}"
        time.sleep(0.2)


def assert_log_in_topic(bootstrap: str, topic: str, node_log: dict[int, bytes], first: int = 0) -> int:
    """The topic's log messages run from `first` without a gap or a duplicate, each the node's batch at that
    offset byte for byte (where the node still has it: it deletes what a newer snapshot covers); returns the
    last offset."""
    expected = first
    for message in topic_messages(bootstrap, topic):
        if snapshot_of(message.key) is not None:
            continue
        assert decode_key(message.key) == expected, f"offset {expected} expected, {decode_key(message.key)} found"
        if expected in node_log:
            assert message.value == node_log[expected], f"batch at offset {expected} differs from the node's log"
        else:
            assert expected < min(node_log), f"the node has no batch at offset {expected}"
        expected = read_header(message.value, 0, topic).last_offset + 1
    assert expected - 1 in {read_header(raw, 0, "").last_offset for raw in node_log.values()}, "nothing compared"
    return expected - 1
