"""Prometheus metrics of kraftlake's long-running commands (`follow`, `ui`): the registry's collectors, which
read the facts the commands already keep at scrape time (nothing is counted twice), and the HTTP endpoint
`--metrics-address` starts. Names: `kraftlake_` prefix, base units, `_total` counters, a `cluster` label."""
