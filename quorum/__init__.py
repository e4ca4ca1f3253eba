"""A KRaft-style Raft quorum for the `__cluster_metadata` log: an I/O-free core shared by the deterministic
simulation and the real processes, Kafka-format log storage, and the asyncio RPC layer around it.

Depends on `records` only; the controller (`quorum.controller`) drives it through `quorum.client.RaftClient`.
"""
