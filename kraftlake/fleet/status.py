"""`kraftlake follow --status DIR` over a fleet's status directory: one line per cluster, from the status file
each cluster's follower (or its supervisor, when it failed) rewrites (`kraftlake.follow.status`)."""

from __future__ import annotations

from pathlib import Path

from kraftlake.follow.status import StatusError, read_status


def fleet_status_lines(directory: Path, now: float) -> list[str]:
    """`<cluster>: <its status line>` for every cluster file in `directory`, by name."""
    files = sorted(directory.glob("*.json"))
    if not files:
        raise StatusError(f"{directory}: no cluster status files (is `kraftlake follow --fleet … --status-file "
                          f"{directory}` running?)")
    lines: list[str] = []
    for path in files:
        try:
            lines.extend(f"{path.stem}: {line}" for line in read_status(path).describe(now))
        except StatusError as error:
            lines.append(f"{path.stem}: {error}")
    return lines
