"""Spark glue: the spark-submit entry points (the streaming job, `materialize`; `ingest`) and the metadata topic
through Spark's Kafka source. Micro-batches become messages here; what they mean (replay, snapshots, commit
points, catch-up) is `lake/`'s (`lake.topic_replay`), as are the sink and the reader; the reports are
`analytics/`'s."""
