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

import importlib.metadata
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
    `s3a://` needs is ~0.6 GB, which `spark.jars` would copy to every executor of a local cluster.
    Under spark-submit the JVM runs already, its class path set by the command line (`--packages` or the
    flags `python -m kraftlake.settings.spark` prints): then only Delta's settings."""
    if "PYSPARK_GATEWAY_PORT" in os.environ:
        return dict(DELTA_SPARK_CONF)
    path = str(jar_dir("spark") / "*")
    return {"spark.driver.extraClassPath": path, "spark.executor.extraClassPath": path, **DELTA_SPARK_CONF}


def spark_packages(s3: bool = False) -> list[str]:
    """The `spark` set as Maven coordinates for `spark-submit --packages`: Delta Lake and Spark's Kafka source
    (and hadoop-aws with `s3`) at the versions this install runs, read from the installed pyspark (Spark's and
    Hadoop's versions, the Scala build) and delta-spark (Delta's): the versions pyproject.toml pins, which
    java/spark/pom.xml repeats for `make jars` (tests/settings/test_jars.py holds the two together)."""
    pyspark_jars = Path(str(importlib.metadata.distribution("pyspark").locate_file("pyspark/jars")))
    shipped = {artifact_name(jar.name): jar.name for jar in pyspark_jars.glob("*.jar")}
    spark = importlib.metadata.version("pyspark")
    scala = ".".join(_version(shipped["scala-library"]).split(".")[:2])
    spark_minor = ".".join(spark.split(".")[:2])
    packages = [
        f"io.delta:delta-spark_{spark_minor}_{scala}:{importlib.metadata.version('delta-spark')}",
        f"org.apache.spark:spark-sql-kafka-0-10_{scala}:{spark}",
    ]
    if s3:
        packages.append(f"org.apache.hadoop:hadoop-aws:{_version(shipped['hadoop-client-api'])}")
    return packages


def _version(jar: str) -> str:
    """`scala-library-2.13.18.jar` → `2.13.18`."""
    return jar.removesuffix(".jar").removeprefix(artifact_name(jar) + "-")


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
