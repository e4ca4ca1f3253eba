"""Spark entry points (spark-submit) and their building blocks: the metadata topic through Spark's Kafka source."""
