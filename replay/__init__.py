"""Metadata images: the state a run of `records` builds, replayed as Kafka's MetadataLoader does (no Spark)."""
