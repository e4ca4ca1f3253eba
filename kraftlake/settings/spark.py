"""The one SparkSession builder of the project, and how a warehouse's store is named to Spark.

Every session kraftlake builds (the CLI's `sql`/`summary`/`report`, the streaming job, the tests; in a
notebook `session_builder("notebook").getOrCreate()`) comes from `session_builder`, so each one reads with
Delta's own reader (`format("delta")`, `delta.\\`path\\``, `VERSION AS OF`, `DESCRIBE HISTORY`). A job started
by `spark-submit` gets the driver's class path from the command line, not from the builder (its JVM is
already running): `python -m kraftlake.settings.spark` prints the `--conf` flags that carry the same settings.

delta-rs and Spark name an object store differently: delta-rs takes `s3://bucket/path` with its storage
options or the `AWS_*` environment, Spark's S3A connector `s3a://bucket/path` with `fs.s3a.*` Hadoop
settings. `store_conf` maps the first to the second, so one warehouse URI and one set of options serve both.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Mapping
from typing import Any

from kraftlake.settings.jars import REPO, MissingJarsError, spark_conf, spark_packages

# Delta reconstructs a table's state (its last checkpoint and the commits since) in this many Spark tasks.
# Its default, 50, is for logs of millions of actions; kraftlake prunes each log to about a hundred
# versions, so 50 tasks a table mostly cost scheduling: `kraftlake sql` opens up to 30 tables.
SNAPSHOT_PARTITIONS = "2"
# delta-spark refuses `VERSION AS OF` a version older than the table's `delta.deletedFileRetentionDuration`
# (5 minutes on kraftlake's tables, which keep tombstones short: kraftlake/lake/warehouse.py). The removed files stay
# until `kraftlake maintain` vacuums them (an hour after their removal), so those versions are readable.
TIME_TRAVEL_WITHIN_RETENTION = "false"
_S3A = "org.apache.hadoop.fs.s3a.S3AFileSystem"


def session_conf() -> dict[str, str]:
    """What every session sets: Delta's extension, catalog and jars, Delta's state reconstruction sized for
    kraftlake's short logs, and `VERSION AS OF` allowed as far back as the files are kept."""
    return {
        **spark_conf(),
        "spark.databricks.delta.snapshotPartitions": SNAPSHOT_PARTITIONS,
        "spark.databricks.delta.vacuum.enforceTimeTravelWithinDeletedFileRetentionDuration":
            TIME_TRAVEL_WITHIN_RETENTION,
    }


def session_builder(app_name: str, master: str | None = None, conf: Mapping[str, str] | None = None) -> Any:
    """A `SparkSession.Builder` with `session_conf()` and `conf` set (and `master`, when given: under
    spark-submit leave it None, the submitter chose one)."""
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.appName(app_name)
    if master is not None:
        builder = builder.master(master)
    for key, value in {**session_conf(), **(conf or {})}.items():
        builder = builder.config(key, value)
    return builder


# A class of each jar a job needs, and what it is: missing, py4j hands back a package, and the first call of
# it fails with "TypeError: 'JavaPackage' object is not callable".
JOB_CLASSES = {
    "io.delta.sql.DeltaSparkSessionExtension": "Delta Lake",
    "org.apache.spark.sql.kafka010.KafkaSourceProvider": "Spark's Kafka source",
}
IVY_SETTINGS = REPO / "conf" / "ivysettings.xml"


def require_job_jars(spark: Any) -> None:
    """Raise `MissingJarsError`, in one line naming what is missing and the exact fix, when Delta Lake or
    Spark's Kafka source is not on `spark`'s class path (a spark-submit without the project's jars)."""
    from py4j.java_gateway import JavaClass

    missing = []
    for name, what in JOB_CLASSES.items():
        found: Any = spark.sparkContext._jvm
        for part in name.split("."):
            found = getattr(found, part)
        if not isinstance(found, JavaClass):
            missing.append(what)
    if missing:
        raise MissingJarsError(
            f"{' and '.join(missing)} not on Spark's class path: run spark-submit with "
            f"--packages {','.join(spark_packages())} --conf spark.jars.ivySettings={IVY_SETTINGS} "
            "(from Maven Central), or, after `make jars`, with the flags `python -m kraftlake.settings.spark` prints"
        )


def submit_flags() -> list[str]:
    """`session_conf()` as `spark-submit` flags (`--conf key=value` each)."""
    return [flag for key, value in session_conf().items() for flag in ("--conf", f"{key}={value}")]


def spark_uri(uri: str) -> str:
    """A warehouse or table URI as Spark opens it: delta-rs's `s3://` is S3A's `s3a://` (others as given)."""
    return "s3a://" + uri.removeprefix("s3://") if uri.startswith("s3://") else uri


def _truthy(value: str | None) -> bool:
    return (value or "").strip().lower() in ("true", "1", "yes")


def store_conf(storage_options: Mapping[str, str], environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The Hadoop `fs.s3a.*` settings for delta-rs `storage_options` (keys in any case; an option not given
    is taken from the `AWS_*` environment, as delta-rs does). `s3://` paths go to S3A too, so a query that
    names a table by delta-rs's URI reads it. Harmless for a local warehouse."""
    environ = os.environ if environ is None else environ
    given = {key.upper(): value for key, value in storage_options.items()}

    def option(name: str) -> str | None:
        return given.get(name, environ.get(name))

    conf = {"fs.s3.impl": _S3A}
    endpoint = option("AWS_ENDPOINT_URL") or option("AWS_ENDPOINT")
    if endpoint:
        conf["fs.s3a.endpoint"] = endpoint
        # delta-rs's default addressing is path-style (bucket in the path): S3-compatible servers need it
        conf["fs.s3a.path.style.access"] = str(not _truthy(option("AWS_VIRTUAL_HOSTED_STYLE_REQUEST"))).lower()
        conf["fs.s3a.connection.ssl.enabled"] = str(not endpoint.startswith("http://")).lower()
    if region := option("AWS_REGION") or option("AWS_DEFAULT_REGION"):
        conf["fs.s3a.endpoint.region"] = region
    key, secret, token = option("AWS_ACCESS_KEY_ID"), option("AWS_SECRET_ACCESS_KEY"), option("AWS_SESSION_TOKEN")
    if key and secret:
        conf["fs.s3a.access.key"], conf["fs.s3a.secret.key"] = key, secret
        if token:
            conf["fs.s3a.session.token"] = token
            conf["fs.s3a.aws.credentials.provider"] = "org.apache.hadoop.fs.s3a.TemporaryAWSCredentialsProvider"
    return conf


def use_store(spark: Any, storage_options: Mapping[str, str]) -> None:
    """Let `spark`'s session read an S3 warehouse opened with `storage_options`: the `fs.s3a.*` settings go
    into the session's SQL conf, which Spark (and Delta) copy into the Hadoop conf of every read."""
    for key, value in store_conf(storage_options).items():
        spark.conf.set(key, value)


if __name__ == "__main__":  # `$(python -m kraftlake.settings.spark)`: the flags a spark-submit of a kraftlake job needs
    print(shlex.join(submit_flags()))
