"""The project's code for a Spark cluster's executors: a zip for `spark-submit --py-files`.

The executors run the streaming job's Kafka reader (`jobs.kafka_source`, pickled by reference) and anything
it imports, so they need the project's packages; a cluster's Python already has the third-party ones
(pyspark, pyarrow, confluent-kafka, deltalake: `pip install kraftlake`'s dependencies on every node).

    python -m jobs.pyfiles build/kraftlake-pyfiles.zip     (what `make pyfiles` runs)
"""

from __future__ import annotations

import sys
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
# The library packages (the CLI `kraftlake/` and the consensus code never run on an executor).
PACKAGES = ("failpoints", "records", "replay", "image_schema", "lake", "jobs")


def build(target: Path) -> Path:
    """Write the zip (the packages' .py files, nothing compiled or cached) and return its path."""
    target.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as archive:
        for package in PACKAGES:
            for source in sorted((REPO / package).rglob("*.py")):
                archive.write(source, source.relative_to(REPO).as_posix())
    return target


if __name__ == "__main__":
    print(build(Path(sys.argv[1] if len(sys.argv) > 1 else "build/kraftlake-pyfiles.zip")))
