"""A throwaway launcher of one combined Apache Kafka KRaft node (broker + controller) for the follow tests,
until the shared `kraftlake/kafka_node.py` launcher (branch wt-broker) is merged and replaces it.

Loopback only, ports from the OS, a small heap; storage formatted with Kafka's storage tool (`--standalone`).
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from pathlib import Path

from confluent_kafka.admin import AdminClient

from settings.jars import classpath

JVM_FLAGS = ("-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Djava.awt.headless=true")
CLUSTER_ID = "a3JhZnRsYWtlLWZvbGxvdw"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class KafkaNode:
    def __init__(
        self, directory: Path, extra_config: dict[str, str] | None = None, release_version: str | None = None
    ) -> None:
        self.directory = directory
        self.release_version = release_version  # the metadata.version to format with (default: the latest)
        self.broker_port, self.controller_port = free_port(), free_port()
        self.extra_config = extra_config or {}
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def bootstrap_servers(self) -> str:
        return f"127.0.0.1:{self.broker_port}"

    @property
    def bootstrap_controllers(self) -> str:
        return f"127.0.0.1:{self.controller_port}"

    @property
    def metadata_dir(self) -> Path:
        return self.directory / "data" / "__cluster_metadata-0"

    def _write_config(self) -> Path:
        broker, controller = self.broker_port, self.controller_port
        settings = {
            "process.roles": "broker,controller",
            "node.id": "1",
            "controller.quorum.bootstrap.servers": f"127.0.0.1:{controller}",
            "listeners": f"PLAINTEXT://127.0.0.1:{broker},CONTROLLER://127.0.0.1:{controller}",
            "advertised.listeners": f"PLAINTEXT://127.0.0.1:{broker},CONTROLLER://127.0.0.1:{controller}",
            "controller.listener.names": "CONTROLLER",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
            "inter.broker.listener.name": "PLAINTEXT",
            "log.dirs": str(self.directory / "data"),
            "offsets.topic.replication.factor": "1",
            "transaction.state.log.replication.factor": "1",
            "transaction.state.log.min.isr": "1",
            "group.initial.rebalance.delay.ms": "0",
            "num.network.threads": "1",
            "num.io.threads": "2",
            **self.extra_config,
        }
        path = self.directory / "server.properties"
        path.write_text("".join(f"{key}={value}\n" for key, value in settings.items()))
        log4j = self.directory / "log4j2.properties"
        log4j.write_text(
            "appender.file.type = File\nappender.file.name = F\n"
            f"appender.file.fileName = {self.directory / 'server.log'}\n"
            "appender.file.layout.type = PatternLayout\nappender.file.layout.pattern = [%d] %p %m (%c)%n\n"
            "rootLogger.level = INFO\nrootLogger.appenderRef.f.ref = F\n"
        )
        return path

    def _java(self, main: str, *args: str) -> list[str]:
        log4j = f"-Dlog4j2.configurationFile={self.directory / 'log4j2.properties'}"
        return ["java", *JVM_FLAGS, log4j, "-cp", classpath("kafka"), main, *args]

    def format(self) -> KafkaNode:
        self.directory.mkdir(parents=True, exist_ok=True)
        config = self._write_config()
        release = ("--release-version", self.release_version) if self.release_version else ()
        subprocess.run(
            self._java("kafka.tools.StorageTool", "format", "-t", CLUSTER_ID, "-c", str(config), "--standalone",
                       *release),
            check=True, capture_output=True, timeout=120,
        )
        return self

    def start(self, timeout_s: float = 120.0) -> KafkaNode:
        config = self.directory / "server.properties"
        with (self.directory / "stdout.log").open("ab") as out:
            self.process = subprocess.Popen(self._java("kafka.Kafka", str(config)), stdout=out, stderr=out,
                                            start_new_session=True)
        deadline = time.monotonic() + timeout_s
        admin = AdminClient({"bootstrap.servers": self.bootstrap_servers})
        while True:
            if self.process.poll() is not None:
                raise RuntimeError(f"Kafka node in {self.directory} exited with {self.process.returncode}")
            try:
                admin.list_topics(timeout=2)
                break
            except Exception:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.5)
        return self

    def kill(self) -> None:
        """SIGKILL: no clean shutdown, as a crash."""
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(30)

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        os.killpg(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(30)
        except subprocess.TimeoutExpired:
            self.kill()
