"""Spark entry points (spark-submit) and their building blocks: the Kafka data source, the Delta sink."""
