"""The summaries, as Spark SQL over the `_history` tables and `batches` (no Python loop over rows).

A history row is valid from its `from_offset` until the key's next version. Counts over time are built
from +1/-1 steps per key (window `lag` per key, then a running sum over offsets), so the work is a few
shuffles whatever the number of partitions. Offsets get the append time of the batch holding them
through one ordered pass over the summary's rows and `batches` (no join, no range join).

Each summary is a temp view; later ones may use earlier ones (the dict is in dependency order).

One SQL per summary, for one cluster or a whole fleet (`Scope`): over a fleet every window, group and join is
also per `cluster`, and the tables read are the fleet's unions (`fleet_partitions_history`, …), so fifty
clusters are one plan of a few shuffles, not fifty plans unioned (which Spark took minutes to plan).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Scope:
    """What the SQL reads and what it is computed per: one cluster (the default: views named as the tables, no
    key column), or a fleet (`prefix` of the views read, `key` the cluster's column). A view read may have more
    columns than one cluster's (the fleet's `labels`): the SQL names the columns it takes from another view."""

    prefix: str = ""
    key: str = ""

    @property
    def c(self) -> str:
        """The key column in front of a column list ("" for one cluster)."""
        return f"{self.key}, " if self.key else ""

    def of(self, alias: str) -> str:
        """The key column of relation `alias`, in front of a column list."""
        return f"{alias}.{self.key}, " if self.key else ""

    @property
    def per(self) -> str:
        """A window's PARTITION BY when it is per key only."""
        return f"PARTITION BY {self.key}" if self.key else ""

    def same(self, left: str, right: str) -> str:
        """A join condition: the two relations are of one cluster."""
        return f"{left}.{self.key} = {right}.{self.key}" if self.key else "true"

    def view(self, name: str) -> str:
        return self.prefix + name


@dataclass(frozen=True)
class Summary:
    description: str
    sql: str


def with_times(inner: str, columns: str, x: Scope = Scope(), offset_columns: tuple[str, ...] = ("offset",)) -> str:
    """`inner`'s rows (`columns`, after the scope's key) with a `<x>_time` timestamp per `<x>_offset` column
    (`time` for `offset`): the append time of the last batch starting at or before that offset. One ordered
    pass per column over `inner`'s rows and the batches' first offsets, so `inner` is computed once (a join on
    its distinct offsets would compute it twice) and no range join is needed. The columns are named, not
    packed in a struct, so Spark and DataFusion run the same text."""
    stamped, names = inner, [name.strip() for name in columns.split(",")]
    for column in offset_columns:
        name = "time" if column == "offset" else column.removesuffix("_offset") + "_time"
        kept = x.c + ", ".join(f"`{n}`" for n in names)
        nulls = ", ".join(f"NULL AS `{n}`" for n in names)
        stamped = f"""
SELECT {kept}, timestamp_millis(_ms) AS {name} FROM (
  SELECT {kept}, _kind,
         last_value(_ms) IGNORE NULLS OVER ({x.per} ORDER BY _at, _kind ROWS UNBOUNDED PRECEDING) AS _ms FROM (
    SELECT {kept}, `{column}` AS _at, 1 AS _kind, CAST(NULL AS BIGINT) AS _ms FROM ({stamped}) ev
    UNION ALL SELECT {x.c}{nulls}, base_offset, 0, append_time_ms FROM {x.view("batches")}))
WHERE _kind = 1"""
        names.append(name)
    return stamped


def _count_over_time(x: Scope, source: str, flag: str, name: str) -> str:
    """How many partitions have `flag` (0/1 per partition version of `source`) after each offset where it
    changed."""
    return with_times(f"""
SELECT {x.c}offset, CAST(sum(sum(step)) OVER ({x.per} ORDER BY offset ROWS UNBOUNDED PRECEDING) AS BIGINT) AS {name}
FROM (
  SELECT {x.c}offset,
         {flag} - coalesce(lag({flag}) OVER (PARTITION BY {x.c}topic_id, partition_id ORDER BY offset), 0) AS step
  FROM {source})
WHERE step != 0 GROUP BY {x.c}offset""", f"offset, {name}", x)


def _partition_states(x: Scope) -> str:
    return f"""
SELECT {x.c}topic_id, partition_id, topic_name, from_offset AS offset, deleted, isr, replicas, leader,
       CASE WHEN NOT deleted AND cardinality(isr) < cardinality(replicas) THEN 1 ELSE 0 END AS under_replicated,
       CASE WHEN NOT deleted AND leader < 0 THEN 1 ELSE 0 END AS offline
FROM {x.view("partitions_history")}"""


def _min_isr(x: Scope) -> str:
    return f"""
WITH partition_keys AS (SELECT DISTINCT {x.c}topic_id, partition_id, topic_name FROM {x.view("partitions_history")}
                        WHERE NOT deleted),
min_isr AS (
  SELECT {x.c}resource_type, resource_name, from_offset AS offset,
         CASE WHEN deleted THEN -1 ELSE coalesce(try_cast(value AS INT), -1) END AS level
  FROM {x.view("configs_history")} WHERE name = 'min.insync.replicas'),
steps AS (
  SELECT {x.c}topic_id, partition_id, offset, CASE WHEN deleted THEN -1 ELSE cardinality(isr) END AS isr_size,
         CAST(NULL AS INT) AS topic_min, CAST(NULL AS INT) AS cluster_min FROM {x.view("partition_states")}
  UNION ALL
  SELECT {x.of("k")}k.topic_id, k.partition_id, m.offset, NULL, m.level, NULL FROM partition_keys k
  JOIN min_isr m ON {x.same("k", "m")} AND m.resource_type = 'topic' AND m.resource_name = k.topic_name
  UNION ALL
  SELECT {x.of("k")}k.topic_id, k.partition_id, m.offset, NULL, NULL, m.level FROM partition_keys k
  JOIN (SELECT * FROM min_isr WHERE resource_type = 'broker' AND resource_name = '') m ON {x.same("k", "m")}),
as_of AS (
  SELECT DISTINCT {x.c}topic_id, partition_id, offset,
         last_value(isr_size) IGNORE NULLS OVER w AS isr_size, last_value(topic_min) IGNORE NULLS OVER w AS topic_min,
         last_value(cluster_min) IGNORE NULLS OVER w AS cluster_min
  FROM steps WINDOW w AS (PARTITION BY {x.c}topic_id, partition_id ORDER BY offset
                          RANGE BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW))
SELECT {x.c}topic_id, partition_id, offset,
       CASE WHEN isr_size >= 0 AND isr_size < coalesce(nullif(topic_min, -1), nullif(cluster_min, -1), 1)
            THEN 1 ELSE 0 END AS under_min_isr
FROM as_of"""


def _broker_intervals(x: Scope) -> str:
    return f"""
WITH states AS (
  SELECT {x.c}broker_id, from_offset AS offset,
         CASE WHEN deleted THEN 'unregistered' WHEN fenced THEN 'fenced'
              WHEN in_controlled_shutdown THEN 'controlled_shutdown' ELSE 'registered' END AS state
  FROM {x.view("brokers_history")}),
marked AS (
  SELECT *, CASE WHEN state = lag(state) OVER (PARTITION BY {x.c}broker_id ORDER BY offset) THEN 0 ELSE 1 END
            AS starts
  FROM states),
runs AS (
  SELECT {x.c}broker_id, state, offset, sum(starts) OVER (PARTITION BY {x.c}broker_id ORDER BY offset
                                                          ROWS UNBOUNDED PRECEDING) AS run FROM marked),
spans AS (SELECT {x.c}broker_id, run, min(state) AS state, min(offset) AS start_offset FROM runs
          GROUP BY {x.c}broker_id, run)
SELECT {x.c}broker_id, state, start_offset,
       lead(start_offset) OVER (PARTITION BY {x.c}broker_id ORDER BY run) AS end_offset
FROM spans"""


def _fencing(x: Scope) -> str:
    """Runs of not-registered intervals: the first one's state is the cause, the last one's end the end."""
    return f"""
SELECT {x.c}broker_id, min(start_offset) AS start_offset, end_offset_of_run AS end_offset, cause FROM (
  SELECT *, first_value(state) OVER run AS cause, last_value(end_offset) OVER run AS end_offset_of_run
  FROM (SELECT *, sum(CASE WHEN state = 'registered' THEN 1 ELSE 0 END)
                    OVER (PARTITION BY {x.c}broker_id ORDER BY start_offset ROWS UNBOUNDED PRECEDING) AS grp
        FROM {x.view("broker_intervals_raw")})
  WHERE state != 'registered'
  WINDOW run AS (PARTITION BY {x.c}broker_id, grp ORDER BY start_offset
                 ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING))
GROUP BY {x.c}broker_id, grp, end_offset_of_run, cause"""


def _isr_versions(x: Scope) -> str:
    return f"""
SELECT {x.c}topic_id, partition_id, topic_name, offset, isr,
       lag(isr) OVER (PARTITION BY {x.c}topic_id, partition_id ORDER BY offset) AS previous
FROM (SELECT {x.c}topic_id, partition_id, topic_name, from_offset AS offset,
             CASE WHEN deleted THEN NULL ELSE isr END AS isr FROM {x.view("partitions_history")})"""


def _isr_changes(x: Scope) -> str:
    """Each version's brokers out of (shrink) and into (expand) the ISR, one row per broker. Without a generator
    (Spark's `explode` is DataFusion's `unnest`): each distinct difference (a handful: {3}, {1, 2}, …) is peeled
    into its brokers by a recursive CTE, then joined back to the versions."""
    return f"""
WITH RECURSIVE diffs AS (
  SELECT {x.c}offset, topic_name, partition_id, 'shrink' AS kind, array_except(previous, isr) AS diff
  FROM {x.view("isr_versions")} WHERE isr IS NOT NULL AND previous IS NOT NULL
  UNION ALL
  SELECT {x.c}offset, topic_name, partition_id, 'expand' AS kind, array_except(isr, previous) AS diff
  FROM {x.view("isr_versions")} WHERE isr IS NOT NULL AND previous IS NOT NULL),
members AS (
  SELECT whole, whole AS rest, CAST(NULL AS INT) AS broker_id FROM (SELECT DISTINCT diff AS whole FROM diffs)
  UNION ALL
  SELECT whole, array_remove(rest, array_min(rest)), array_min(rest) FROM members WHERE cardinality(rest) > 0)
SELECT {x.of("d")}d.offset, d.topic_name, d.partition_id, m.broker_id, d.kind
FROM diffs d JOIN members m ON d.diff = m.whole WHERE m.broker_id IS NOT NULL"""


def _leaders(x: Scope) -> str:
    return f"""
WITH leaders AS (
  SELECT {x.c}offset, leader, lag(leader) OVER (PARTITION BY {x.c}topic_id, partition_id ORDER BY offset) AS previous
  FROM (SELECT {x.c}topic_id, partition_id, offset, CASE WHEN leader >= 0 THEN leader END AS leader
        FROM {x.view("partition_states")})),
steps AS (
  SELECT {x.c}leader AS broker_id, offset, 1 AS step FROM leaders
  WHERE leader IS NOT NULL AND (previous IS NULL OR previous != leader)
  UNION ALL
  SELECT {x.c}previous, offset, -1 FROM leaders WHERE previous IS NOT NULL AND (leader IS NULL OR leader != previous))
SELECT {x.c}broker_id, offset,
       CAST(sum(sum(step)) OVER (PARTITION BY {x.c}broker_id ORDER BY offset ROWS UNBOUNDED PRECEDING) AS BIGINT)
       AS leaders
FROM steps GROUP BY {x.c}broker_id, offset"""


# (table, key text, value text) of each table whose changes make the change log
_LOGGED = (
    ("configs", "concat(resource_type, ':', resource_name, ' ', name)", "value"),
    ("client_quotas", "concat(entity, ' ', key)", "CAST(value AS STRING)"),
    ("acls", "acl_id", "concat_ws(' ', principal, 'host', host, 'operation', operation, 'permission', "
             "permission_type, 'resource', resource_type, resource_name, 'pattern', pattern_type)"),
    ("scram_credentials", "concat(user, ':', mechanism)", "concat('iterations=', iterations)"),
    ("features", "name", "CAST(level AS STRING)"),
)


_CHANGE = "offset, kind, key, change, before, after"  # a change's columns, in the change log and the events


def _change_log(x: Scope) -> str:
    versions = " UNION ALL ".join(
        f"SELECT {x.c}'{table}' AS kind, {key} AS key, from_offset AS offset, "
        f"CASE WHEN deleted THEN NULL ELSE {value} END AS after FROM {x.view(table + '_history')}"
        for table, key, value in _LOGGED
    )
    return f"""
SELECT {x.c}offset, kind, key,
       CASE WHEN previous IS NULL THEN 'insert' WHEN after IS NULL THEN 'delete' ELSE 'update' END AS change,
       previous AS before, after
FROM (SELECT *, lag(after) OVER (PARTITION BY {x.c}kind, key ORDER BY offset) AS previous FROM ({versions}))
WHERE previous IS DISTINCT FROM after"""


def _topic_events(x: Scope) -> str:
    return f"""
SELECT {x.c}from_offset AS offset, 'topics' AS kind, coalesce(name, previous) AS key,
       CASE WHEN deleted THEN 'delete' ELSE 'insert' END AS change, previous AS before, name AS after
FROM (SELECT *, lag(name) OVER (PARTITION BY {x.c}topic_id ORDER BY from_offset) AS previous
      FROM {x.view("topics_history")})
WHERE previous IS DISTINCT FROM name"""


def summaries(x: Scope = Scope()) -> dict[str, Summary]:
    """Every summary's SQL in `x`, in dependency order."""
    under_min_isr = _count_over_time(x, x.view("partition_min_isr"), "under_min_isr", "under_min_isr")
    return {
        "partition_states": Summary(
            "helper: each partition version with its 0/1 flags (under-replicated, offline)", _partition_states(x)),
        "under_replicated": Summary(
            "partitions whose ISR is smaller than their replica set, after each offset where the count changed",
            _count_over_time(x, x.view("partition_states"), "under_replicated", "under_replicated"),
        ),
        "offline_partitions": Summary(
            "partitions without a leader, after each offset where the count changed",
            _count_over_time(x, x.view("partition_states"), "offline", "offline"),
        ),
        "partition_min_isr": Summary(
            "helper: per partition and offset, whether its ISR is below min.insync.replicas (topic, else cluster "
            "default, else 1)",
            _min_isr(x),
        ),
        "under_min_isr": Summary(
            "partitions whose ISR is below min.insync.replicas, after each offset where the count changed",
            under_min_isr,
        ),
        "broker_intervals_raw": Summary("helper: broker_intervals without times", _broker_intervals(x)),
        "broker_intervals": Summary(
            "each broker's states over time (registered / fenced / controlled_shutdown / unregistered)",
            with_times(f"SELECT {x.c}broker_id, state, start_offset, end_offset FROM {x.view('broker_intervals_raw')}",
                       "broker_id, state, start_offset, end_offset", x, ("start_offset", "end_offset")),
        ),
        "fencing_episodes": Summary(
            "each period a broker was not serving: start, end (null while it lasts), duration, first cause",
            # the cast: Spark's decimal(27,6) already, DataFusion's division keeps a smaller scale
            "SELECT *, CAST((unix_millis(end_time) - unix_millis(start_time)) / 1000.0 AS DECIMAL(27, 6)) AS "
            "duration_s FROM (" + with_times(_fencing(x), "broker_id, start_offset, end_offset, cause", x,
                                             ("start_offset", "end_offset")) + ")",
        ),
        "isr_versions": Summary("helper: each partition version's ISR and the one before", _isr_versions(x)),
        "isr_changes": Summary("each broker leaving (shrink) or joining (expand) a partition's ISR",
                               with_times(_isr_changes(x), "offset, topic_name, partition_id, broker_id, kind", x)),
        "isr_churn": Summary(
            "per broker: how often it left and joined ISRs",
            f"SELECT {x.c}broker_id, count(CASE WHEN kind = 'shrink' THEN 1 END) AS shrinks, "
            f"count(CASE WHEN kind = 'expand' THEN 1 END) AS expands FROM {x.view('isr_changes')} "
            f"GROUP BY {x.c}broker_id",
        ),
        "leaders_per_broker": Summary("how many partitions each broker leads, after each offset where it changed",
                                      with_times(_leaders(x), "broker_id, offset, leaders", x)),
        "change_log": Summary(
            "config, client quota, ACL, SCRAM and feature changes with before → after (KRaft records carry no "
            "principal: join audit logs by time)",
            with_times(_change_log(x), _CHANGE, x),
        ),
        "events": Summary("topics created and deleted, and the change log, in offset order",
                          with_times(f"{_topic_events(x)} UNION ALL SELECT {x.c}offset, kind, key, change, before, "
                                     f"after FROM {x.view('change_log')}", _CHANGE, x)),
        "raft_epochs": Summary(
            "each Raft leader epoch: first and last offset and when it started",
            with_times(f"SELECT {x.c}epoch, min(base_offset) AS offset, max(last_offset) AS last_offset, "
                       f"count(*) AS batches FROM {x.view('batches')} GROUP BY {x.c}epoch",
                       "epoch, offset, last_offset, batches", x),
        ),
    }


SUMMARIES = summaries()  # one cluster's
