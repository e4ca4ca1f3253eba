"""The fleet: many clusters kept and queried in one place, from one fleet file (`kraftlake.settings.fleet`).

`supervisor.py` follows every cluster from one process (a supervised follower per cluster, reloaded when the file
changes), `status.py` prints their statuses, `catalog.py` registers each cluster's tables in a metastore as a
schema of its own, with persistent views of its last published image and the `fleet_*` views across clusters. The
fleet's streaming job is Spark glue, `jobs/fleet.py`; its views are `kraftlake.analytics.fleet`.
"""
