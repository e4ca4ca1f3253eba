"""Where the project's Java artifacts live: the jar sets `make jars` fetches with Maven (`java/<set>/pom.xml`)
and the classes it compiles, so the broker, the oracle, Kafka's tools and every SparkSession find them in one
place. `$KRAFTLAKE_JARS` moves the root (default `build/jars` in the checkout).

| set           | what                                                                     | used by                  |
|---------------|--------------------------------------------------------------------------|--------------------------|
| `kafka`       | Apache Kafka 4.4.0: the server, its tools, metadata, raft, storage       | broker, cluster, oracle  |
| `kafka-shell` | Kafka's metadata shell 4.3.1 (4.4.0 is not published), on its own path   | tests, benches           |
| `spark`       | Delta Lake for Spark 4.2, Spark's Kafka source, hadoop-aws (`s3a://`)    | every SparkSession       |
| `oracle`      | `java/oracle`, compiled against the `kafka` set: Kafka's image at offset | tests, benches           |
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
JAR_SETS = ("kafka", "kafka-shell", "spark")
# The Delta extension and catalog every SparkSession of the project is built with.
DELTA_SPARK_CONF = {
    "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
    "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
}
_NAME_AND_VERSION = re.compile(r"^(?P<name>.+?)-\d[^/]*\.jar$")


class MissingJarsError(RuntimeError):
    """A jar set is not there: `make jars` was not run, or ran somewhere else."""


def jars_root() -> Path:
    return Path(os.environ.get("KRAFTLAKE_JARS", REPO / "build" / "jars"))


def jar_dir(jar_set: str) -> Path:
    """The folder of one set; raises naming the folder and the fix when it is empty or missing."""
    folder = jars_root() / jar_set
    if not any(folder.glob("*.jar")) and not (folder / "classes").is_dir():
        raise MissingJarsError(f"no {jar_set} jars in {folder}: run `make jars` in {REPO}")
    return folder


def jars(jar_set: str) -> list[Path]:
    return sorted(jar_dir(jar_set).glob("*.jar"))


def classpath(*jar_sets: str) -> str:
    """A JVM classpath of the sets named (a set's `classes` folder first, then its jars)."""
    entries: list[str] = []
    for jar_set in jar_sets:
        folder = jar_dir(jar_set)
        if (folder / "classes").is_dir():
            entries.append(str(folder / "classes"))
        entries.extend(str(jar) for jar in jars(jar_set))
    return os.pathsep.join(entries)


def spark_conf() -> dict[str, str]:
    """What every SparkSession of the project sets: Delta's extension and catalog, and the `spark` set on the
    driver's and the executors' class paths. A class path, not `spark.jars`: the AWS SDK bundle that
    `s3a://` needs is ~0.6 GB, which `spark.jars` would copy to every executor of a local cluster."""
    path = str(jar_dir("spark") / "*")
    return {"spark.driver.extraClassPath": path, "spark.executor.extraClassPath": path, **DELTA_SPARK_CONF}


def artifact_name(jar: str) -> str:
    """`parquet-hadoop-1.17.0.jar` → `parquet-hadoop` (the name a jar keeps across versions)."""
    match = _NAME_AND_VERSION.match(jar)
    return match.group("name") if match else jar.removesuffix(".jar")


def prune_provided(folder: Path, provided: Path) -> list[str]:
    """Delete from `folder` every jar whose artifact pyspark already ships in `provided`: two versions of
    one library on Spark's classpath fail at run time, and Maven's `provided` scope does not keep the
    libraries Delta and Spark share out of the copy. Returns the names deleted."""
    shipped = {artifact_name(jar.name) for jar in provided.glob("*.jar")}
    removed = []
    for jar in sorted(folder.glob("*.jar")):
        if artifact_name(jar.name) in shipped:
            jar.unlink()
            removed.append(jar.name)
    return removed


if __name__ == "__main__":  # `python -m kraftlake.settings.jars prune FOLDER`: the Makefile's step after Maven
    import pyspark

    if sys.argv[1:2] != ["prune"] or len(sys.argv) != 3:
        sys.exit("usage: python -m kraftlake.settings.jars prune FOLDER")
    pruned = prune_provided(Path(sys.argv[2]), Path(pyspark.__file__).parent / "jars")
    print(f"{len(pruned)} jars pyspark already ships left out of {sys.argv[2]}")
