"""kraftlake: the history of a Kafka cluster's KRaft metadata as Delta Lake tables.

Every package is a subpackage of this one, so that installing kraftlake claims one import name: `records`,
`lake`, `raft`, ... are also the names of other distributions. The CLI (`kraftlake.cli`) is imported by none
of them."""
