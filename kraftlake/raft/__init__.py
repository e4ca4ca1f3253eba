"""The consensus layer: a KRaft-style Raft quorum for the `__cluster_metadata` log. An I/O-free core
(`core`, `roles`, `election_state`) shared by the deterministic simulation (`simulation`) and the real
processes (`server`, `client`, `transport`), with Kafka-format log storage (`log`, `snapshots`).
Depends on `kraftlake.records` only; the controller drives it through `kraftlake.raft.client.RaftClient`.
"""
