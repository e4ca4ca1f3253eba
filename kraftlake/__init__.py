"""kraftlake: the history of a Kafka cluster's KRaft metadata as Delta Lake tables."""
