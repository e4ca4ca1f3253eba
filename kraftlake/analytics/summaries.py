"""The summaries, as Spark SQL over the `_history` tables and `batches` (no Python loop over rows).

A history row is valid from its `from_offset` until the key's next version. Counts over time are built
from +1/-1 steps per key (window `lag` per key, then a running sum over offsets), so the work is a few
shuffles whatever the number of partitions. Offsets get the append time of the batch holding them
through one ordered pass over the summary's rows and `batches` (no join, no range join).

Each summary is a temp view; later ones may use earlier ones (the dict is in dependency order).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Summary:
    description: str
    sql: str


def with_times(inner: str, offset_columns: tuple[str, ...] = ("offset",)) -> str:
    """`inner`'s rows with a `<x>_time` timestamp per `<x>_offset` column (`time` for `offset`): the append
    time of the last batch starting at or before that offset. One ordered pass per column over `inner`'s
    rows and the batches' first offsets, so `inner` is computed once (a join on its distinct offsets would
    compute it twice) and no range join is needed."""
    stamped = inner
    for column in offset_columns:
        name = "time" if column == "offset" else column.removesuffix("_offset") + "_time"
        stamped = f"""
SELECT row.*, timestamp_millis(ms) AS {name} FROM (
  SELECT row, kind, last(ms, true) OVER (ORDER BY offset, kind ROWS UNBOUNDED PRECEDING) AS ms FROM (
    SELECT struct(ev.*) AS row, ev.{column} AS offset, 1 AS kind, CAST(NULL AS BIGINT) AS ms FROM ({stamped}) ev
    UNION ALL SELECT NULL, base_offset, 0, append_time_ms FROM batches))
WHERE kind = 1"""
    return stamped


def _count_over_time(flag: str, name: str) -> str:
    """How many partitions have `flag` (0/1 per partition version) after each offset where it changed."""
    return with_times(f"""
SELECT offset, CAST(sum(sum(step)) OVER (ORDER BY offset ROWS UNBOUNDED PRECEDING) AS BIGINT) AS {name} FROM (
  SELECT offset, {flag} - coalesce(lag({flag}) OVER (PARTITION BY topic_id, partition_id ORDER BY offset), 0) AS step
  FROM partition_states)
WHERE step != 0 GROUP BY offset""")


_MIN_ISR = """
WITH partition_keys AS (SELECT DISTINCT topic_id, partition_id, topic_name FROM partitions_history WHERE NOT deleted),
min_isr AS (
  SELECT resource_type, resource_name, from_offset AS offset,
         CASE WHEN deleted THEN -1 ELSE coalesce(try_cast(value AS INT), -1) END AS level
  FROM configs_history WHERE name = 'min.insync.replicas'),
steps AS (
  SELECT topic_id, partition_id, offset, CASE WHEN deleted THEN -1 ELSE size(isr) END AS isr_size,
         CAST(NULL AS INT) AS topic_min, CAST(NULL AS INT) AS cluster_min FROM partition_states
  UNION ALL
  SELECT k.topic_id, k.partition_id, m.offset, NULL, m.level, NULL FROM partition_keys k
  JOIN min_isr m ON m.resource_type = 'topic' AND m.resource_name = k.topic_name
  UNION ALL
  SELECT k.topic_id, k.partition_id, m.offset, NULL, NULL, m.level FROM partition_keys k
  CROSS JOIN (SELECT * FROM min_isr WHERE resource_type = 'broker' AND resource_name = '') m),
as_of AS (
  SELECT DISTINCT topic_id, partition_id, offset,
         last(isr_size, true) OVER w AS isr_size, last(topic_min, true) OVER w AS topic_min,
         last(cluster_min, true) OVER w AS cluster_min
  FROM steps WINDOW w AS (PARTITION BY topic_id, partition_id ORDER BY offset
                          RANGE BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW))
SELECT topic_id, partition_id, offset,
       CASE WHEN isr_size >= 0 AND isr_size < coalesce(nullif(topic_min, -1), nullif(cluster_min, -1), 1)
            THEN 1 ELSE 0 END AS under_min_isr
FROM as_of"""

_BROKER_INTERVALS = """
WITH states AS (
  SELECT broker_id, from_offset AS offset,
         CASE WHEN deleted THEN 'unregistered' WHEN fenced THEN 'fenced'
              WHEN in_controlled_shutdown THEN 'controlled_shutdown' ELSE 'registered' END AS state
  FROM brokers_history),
marked AS (
  SELECT *, CASE WHEN state = lag(state) OVER (PARTITION BY broker_id ORDER BY offset) THEN 0 ELSE 1 END AS starts
  FROM states),
runs AS (
  SELECT broker_id, state, offset, sum(starts) OVER (PARTITION BY broker_id ORDER BY offset
                                                     ROWS UNBOUNDED PRECEDING) AS run FROM marked),
spans AS (SELECT broker_id, run, first(state) AS state, min(offset) AS start_offset FROM runs GROUP BY broker_id, run)
SELECT broker_id, state, start_offset, lead(start_offset) OVER (PARTITION BY broker_id ORDER BY run) AS end_offset
FROM spans"""

_FENCING = """
SELECT broker_id, start_offset, end_offset, cause FROM (
  SELECT broker_id, grp, min(start_offset) AS start_offset, min_by(state, start_offset) AS cause,
         max_by(end_offset, start_offset) AS end_offset
  FROM (SELECT *, sum(CASE WHEN state = 'registered' THEN 1 ELSE 0 END)
                    OVER (PARTITION BY broker_id ORDER BY start_offset ROWS UNBOUNDED PRECEDING) AS grp
        FROM broker_intervals_raw)
  WHERE state != 'registered' GROUP BY broker_id, grp)"""

_ISR_VERSIONS = """
SELECT topic_id, partition_id, topic_name, offset, isr,
       lag(isr) OVER (PARTITION BY topic_id, partition_id ORDER BY offset) AS previous
FROM (SELECT topic_id, partition_id, topic_name, from_offset AS offset,
             CASE WHEN deleted THEN NULL ELSE isr END AS isr FROM partitions_history)"""

_ISR_CHANGES = """
SELECT offset, topic_name, partition_id, broker_id, 'shrink' AS kind
FROM isr_versions LATERAL VIEW explode(array_except(previous, isr)) b AS broker_id
WHERE isr IS NOT NULL AND previous IS NOT NULL
UNION ALL
SELECT offset, topic_name, partition_id, broker_id, 'expand' AS kind
FROM isr_versions LATERAL VIEW explode(array_except(isr, previous)) b AS broker_id
WHERE isr IS NOT NULL AND previous IS NOT NULL"""

_LEADERS = """
WITH leaders AS (
  SELECT offset, leader, lag(leader) OVER (PARTITION BY topic_id, partition_id ORDER BY offset) AS previous
  FROM (SELECT topic_id, partition_id, offset, CASE WHEN leader >= 0 THEN leader END AS leader
        FROM partition_states)),
steps AS (
  SELECT leader AS broker_id, offset, 1 AS step FROM leaders
  WHERE leader IS NOT NULL AND (previous IS NULL OR previous != leader)
  UNION ALL
  SELECT previous, offset, -1 FROM leaders WHERE previous IS NOT NULL AND (leader IS NULL OR leader != previous))
SELECT broker_id, offset,
       CAST(sum(sum(step)) OVER (PARTITION BY broker_id ORDER BY offset ROWS UNBOUNDED PRECEDING) AS BIGINT) AS leaders
FROM steps GROUP BY broker_id, offset"""

# (table, key text, value text) of each table whose changes make the change log
_LOGGED = (
    ("configs", "concat(resource_type, ':', resource_name, ' ', name)", "value"),
    ("client_quotas", "concat(entity, ' ', key)", "CAST(value AS STRING)"),
    ("acls", "acl_id", "concat_ws(' ', principal, 'host', host, 'operation', operation, 'permission', "
             "permission_type, 'resource', resource_type, resource_name, 'pattern', pattern_type)"),
    ("scram_credentials", "concat(user, ':', mechanism)", "concat('iterations=', iterations)"),
    ("features", "name", "CAST(level AS STRING)"),
)

_CHANGE_LOG = """
SELECT offset, kind, key,
       CASE WHEN previous IS NULL THEN 'insert' WHEN after IS NULL THEN 'delete' ELSE 'update' END AS change,
       previous AS before, after
FROM (SELECT *, lag(after) OVER (PARTITION BY kind, key ORDER BY offset) AS previous FROM ({versions}))
WHERE NOT (previous <=> after)""".format(versions=" UNION ALL ".join(
    f"SELECT '{table}' AS kind, {key} AS key, from_offset AS offset, "
    f"CASE WHEN deleted THEN NULL ELSE {value} END AS after FROM {table}_history"
    for table, key, value in _LOGGED
))

_TOPIC_EVENTS = """
SELECT from_offset AS offset, 'topics' AS kind, coalesce(name, previous) AS key,
       CASE WHEN deleted THEN 'delete' ELSE 'insert' END AS change, previous AS before, name AS after
FROM (SELECT *, lag(name) OVER (PARTITION BY topic_id ORDER BY from_offset) AS previous FROM topics_history)
WHERE NOT (previous <=> name)"""

SUMMARIES: dict[str, Summary] = {
    "partition_states": Summary(
        "helper: each partition version with its 0/1 flags (under-replicated, offline)",
        """SELECT topic_id, partition_id, topic_name, from_offset AS offset, deleted, isr, replicas, leader,
                  CASE WHEN NOT deleted AND size(isr) < size(replicas) THEN 1 ELSE 0 END AS under_replicated,
                  CASE WHEN NOT deleted AND leader < 0 THEN 1 ELSE 0 END AS offline
           FROM partitions_history""",
    ),
    "under_replicated": Summary(
        "partitions whose ISR is smaller than their replica set, after each offset where the count changed",
        _count_over_time("under_replicated", "under_replicated"),
    ),
    "offline_partitions": Summary(
        "partitions without a leader, after each offset where the count changed",
        _count_over_time("offline", "offline"),
    ),
    "partition_min_isr": Summary(
        "helper: per partition and offset, whether its ISR is below min.insync.replicas (topic, else cluster "
        "default, else 1)",
        _MIN_ISR,
    ),
    "under_min_isr": Summary(
        "partitions whose ISR is below min.insync.replicas, after each offset where the count changed",
        with_times("""
SELECT offset, CAST(sum(sum(step)) OVER (ORDER BY offset ROWS UNBOUNDED PRECEDING) AS BIGINT) AS under_min_isr FROM (
  SELECT offset, under_min_isr - coalesce(lag(under_min_isr) OVER (PARTITION BY topic_id, partition_id
                                                                   ORDER BY offset), 0) AS step
  FROM partition_min_isr)
WHERE step != 0 GROUP BY offset"""),
    ),
    "broker_intervals_raw": Summary("helper: broker_intervals without times", _BROKER_INTERVALS),
    "broker_intervals": Summary(
        "each broker's states over time (registered / fenced / controlled_shutdown / unregistered)",
        with_times("SELECT * FROM broker_intervals_raw", ("start_offset", "end_offset")),
    ),
    "fencing_episodes": Summary(
        "each period a broker was not serving: start, end (null while it lasts), duration, first cause",
        "SELECT *, (unix_millis(end_time) - unix_millis(start_time)) / 1000.0 AS duration_s FROM ("
        + with_times(_FENCING, ("start_offset", "end_offset")) + ")",
    ),
    "isr_versions": Summary("helper: each partition version's ISR and the one before", _ISR_VERSIONS),
    "isr_changes": Summary("each broker leaving (shrink) or joining (expand) a partition's ISR",
                           with_times(_ISR_CHANGES)),
    "isr_churn": Summary(
        "per broker: how often it left and joined ISRs",
        "SELECT broker_id, count_if(kind = 'shrink') AS shrinks, count_if(kind = 'expand') AS expands "
        "FROM isr_changes GROUP BY broker_id",
    ),
    "leaders_per_broker": Summary("how many partitions each broker leads, after each offset where it changed",
                                  with_times(_LEADERS)),
    "change_log": Summary(
        "config, client quota, ACL, SCRAM and feature changes with before → after (KRaft records carry no "
        "principal: join audit logs by time)",
        with_times(_CHANGE_LOG),
    ),
    "events": Summary("topics created and deleted, and the change log, in offset order",
                      with_times(f"{_TOPIC_EVENTS} UNION ALL SELECT offset, kind, key, change, before, after "
                                 "FROM change_log")),
    "raft_epochs": Summary(
        "each Raft leader epoch: first and last offset and when it started",
        with_times("SELECT epoch, min(base_offset) AS offset, max(last_offset) AS last_offset, "
                   "count(*) AS batches FROM batches GROUP BY epoch"),
    ),
}
