"""Spark glue: the spark-submit entry points (the streaming job, `materialize`; `ingest`) and the metadata topic
through Spark's Kafka source. The Delta sink and the reader are `lake/`'s; the reports are `analytics/`'s."""
