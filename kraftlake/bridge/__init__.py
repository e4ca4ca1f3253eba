"""The bridge: a source's batches into the metadata topic, exactly once by offset.

`publisher.py` holds the producer session, the topic's tail (where any source resumes) and `TopicProducer` (a
node's committed Raft log, through the `CommittedLog` protocol of `source.py`); `log_dir_publisher.py` a copy
of a `__cluster_metadata-0` directory (`kraftlake publish`). `kraftlake follow`, `publish --follow`, the
embedded quorum and the fleet (`kraftlake.fleet`) all write the topic through it.
"""
