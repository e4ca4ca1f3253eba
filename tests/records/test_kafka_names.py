"""The names the explorer shows for Kafka's codes are the ones Kafka's own enums give them (Kafka's jars, run as a
source file so no build step is needed)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from kraftlake.records.kafka_names import DIRECTORY_IDS, ENUMS
from kraftlake.settings.jars import classpath
from tests.harness.kafka_oracle import JVM_OPTIONS

pytestmark = pytest.mark.jvm
SOURCE = Path(__file__).resolve().parents[2] / "java" / "oracle" / "src" / "KafkaNames.java"


def test_the_names_are_kafkas() -> None:
    done = subprocess.run(["java", *JVM_OPTIONS, "-cp", classpath("kafka"), str(SOURCE)], capture_output=True,
                          text=True, timeout=300, check=True)
    theirs: dict[str, dict[str, str]] = {}
    for line in done.stdout.splitlines():
        kind, code, name = line.split("\t")
        theirs.setdefault(kind, {})[code] = name
    ours = {kind: {str(code): name for code, name in names.items()} for kind, names in ENUMS.items()}
    assert ours == {kind: theirs[kind] for kind in ENUMS}
    assert dict(DIRECTORY_IDS) == {code: name for code, name in theirs["DirectoryId"].items()}
