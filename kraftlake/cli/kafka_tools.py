"""Apache Kafka's own command-line tools, run from the `kafka` jar set as the `kafka-*.sh` scripts run them.

The scripts are thin wrappers around `kafka-run-class.sh <main class>`; the jars `make jars` fetches hold the
classes but not the scripts, so this module names the main class behind each script (checked in the 4.4.0
jars) and runs it in a small JVM. A tool that exits non-zero raises with its command line and output.
"""

from __future__ import annotations

import subprocess
from collections.abc import Sequence
from pathlib import Path

from kraftlake.cli.errors import UserFacingError
from kraftlake.settings.jars import MissingJarsError, classpath

TOOL_CLASSES = {
    "kafka-storage": "kafka.tools.StorageTool",
    "kafka-topics": "org.apache.kafka.tools.TopicCommand",
    "kafka-configs": "org.apache.kafka.tools.ConfigCommand",
    "kafka-acls": "org.apache.kafka.tools.AclCommand",
    "kafka-reassign-partitions": "org.apache.kafka.tools.reassign.ReassignPartitionsCommand",
    "kafka-metadata-quorum": "org.apache.kafka.tools.MetadataQuorumCommand",
    "kafka-features": "org.apache.kafka.tools.FeatureCommand",
    "kafka-delegation-tokens": "org.apache.kafka.tools.DelegationTokenCommand",
    "kafka-leader-election": "org.apache.kafka.tools.LeaderElectionCommand",
    "kafka-dump-log": "org.apache.kafka.tools.DumpLogSegments",
}
# A tool is a short-lived client: a small heap and the C1 compiler only start it fastest (~0.4 s here).
TOOL_JVM_OPTIONS = ("-Xmx128m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Djava.awt.headless=true")


class KafkaToolError(UserFacingError):
    """A Kafka tool could not run or exited non-zero; the message quotes its output."""


def kafka_classpath() -> str:
    """The `kafka` jar set as a class path; missing jars become one user-facing line naming `make jars`."""
    try:
        return classpath("kafka")
    except MissingJarsError as error:
        raise KafkaToolError(str(error)) from None


def java_command(main_class: str, args: Sequence[str], jvm_options: Sequence[str] = TOOL_JVM_OPTIONS) -> list[str]:
    return ["java", *jvm_options, "-cp", kafka_classpath(), main_class, *args]


def run_tool(tool: str, *args: str, timeout: float = 120.0, cwd: Path | None = None) -> str:
    """Run `tool` (a script name such as `kafka-topics`) with `args`; returns its stdout."""
    try:
        main_class = TOOL_CLASSES[tool]
    except KeyError:
        raise KafkaToolError(f"unknown Kafka tool {tool!r}; known: {', '.join(sorted(TOOL_CLASSES))}") from None
    command = java_command(main_class, args)
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, cwd=cwd, check=False)
    except subprocess.TimeoutExpired as error:
        raise KafkaToolError(f"{tool} {' '.join(args)} did not finish within {timeout:g} s") from error
    if done.returncode != 0:
        output = (done.stdout + done.stderr).strip()
        raise KafkaToolError(f"{tool} {' '.join(args)} exited with code {done.returncode}:\n{output}")
    return done.stdout
