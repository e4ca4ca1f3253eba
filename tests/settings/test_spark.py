"""How a warehouse's delta-rs storage options become Spark's S3A settings, and the flags spark-submit gets.
(That Spark then reads the warehouse with them is tested against SeaweedFS in tests/lake/test_delta_spark.py.)"""

from __future__ import annotations

from kraftlake.settings.jars import DELTA_SPARK_CONF
from kraftlake.settings.spark import session_conf, spark_uri, store_conf, submit_flags


def test_delta_rs_options_map_to_s3a() -> None:
    options = {"AWS_ENDPOINT_URL": "http://127.0.0.1:8333", "AWS_ALLOW_HTTP": "true", "AWS_REGION": "eu-west-1",
               "aws_access_key_id": "ak", "AWS_SECRET_ACCESS_KEY": "sk", "AWS_CONDITIONAL_PUT": "etag"}
    assert store_conf(options, environ={}) == {
        "fs.s3.impl": "org.apache.hadoop.fs.s3a.S3AFileSystem",
        "fs.s3a.endpoint": "http://127.0.0.1:8333",
        "fs.s3a.path.style.access": "true",
        "fs.s3a.connection.ssl.enabled": "false",
        "fs.s3a.endpoint.region": "eu-west-1",
        "fs.s3a.access.key": "ak",
        "fs.s3a.secret.key": "sk",
    }


def test_the_environment_fills_what_the_options_leave_out() -> None:
    environ = {"AWS_ACCESS_KEY_ID": "env-key", "AWS_SECRET_ACCESS_KEY": "env-secret", "AWS_SESSION_TOKEN": "t",
               "AWS_REGION": "us-east-2"}
    conf = store_conf({"AWS_REGION": "eu-north-1", "AWS_ENDPOINT_URL": "https://s3.internal",
                       "AWS_VIRTUAL_HOSTED_STYLE_REQUEST": "true"}, environ)
    assert conf["fs.s3a.endpoint.region"] == "eu-north-1"  # the option wins over the environment
    assert (conf["fs.s3a.access.key"], conf["fs.s3a.session.token"]) == ("env-key", "t")
    assert conf["fs.s3a.aws.credentials.provider"].endswith("TemporaryAWSCredentialsProvider")
    assert (conf["fs.s3a.path.style.access"], conf["fs.s3a.connection.ssl.enabled"]) == ("false", "true")


def test_aws_itself_needs_no_endpoint_nor_keys() -> None:
    """Without options or AWS_* variables S3A uses its own credential chain (instance profiles, …)."""
    assert store_conf({}, environ={}) == {"fs.s3.impl": "org.apache.hadoop.fs.s3a.S3AFileSystem"}


def test_uris_and_submit_flags() -> None:
    assert spark_uri("s3://lake/kraftlake/images") == "s3a://lake/kraftlake/images"
    assert spark_uri("/data/lake/images") == "/data/lake/images"
    flags = submit_flags()
    pairs = dict(flag.split("=", 1) for flag in flags[1::2])
    assert set(flags[::2]) == {"--conf"} and pairs == session_conf()
    assert DELTA_SPARK_CONF.items() <= pairs.items()
