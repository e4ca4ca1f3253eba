"""A reader process for tests/lake/test_readers_during_writes.py: time-travel queries through the CLI's own
entry (`kraftlake.cli.main`, in this one process, so the open table handles persist across queries as in a
long-running reader) at random offsets, until a stop file appears; `history` asks for partitions an
earlier answer showed. Each answer goes to a JSON-lines file: the command, its exit code, its stdout and
stderr.

    python -m tests.lake.reader_loop WAREHOUSE OUT STOP SEED
"""

from __future__ import annotations

import io
import json
import random
import sys
import time
import traceback
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

from kraftlake.cli.main import main
from kraftlake.lake.errors import LakeError
from kraftlake.lake.reader import WarehouseReader
from kraftlake.lake.warehouse import Warehouse


def run(argv: list[str]) -> tuple[int, str, str]:
    """One CLI command in this process: exit code, stdout, stderr."""
    out_bytes = io.BytesIO()
    out = io.TextIOWrapper(out_bytes, encoding="utf-8")
    err = io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        try:
            code = main(argv)
        except Exception:  # an unexpected failure is an answer the test reports
            code = 99
            err.write(traceback.format_exc())
        out.flush()
    return code, out_bytes.getvalue().decode(), err.getvalue()


def published(warehouse: str) -> tuple[int, int] | None:
    """The first and last published images' offsets, as the reader's published range says (None: no image
    yet). Offsets before the first are refused by rule, so the loop asks only inside the range."""
    try:
        return WarehouseReader(Warehouse(warehouse)).published_range()
    except LakeError:
        return None


def query(rng: random.Random, warehouse: str, known: tuple[int, int], keys: list[str]) -> list[str]:
    """A random time-travel query at offsets in the `known` range."""
    first, last = known
    at = rng.randint(first, last)
    kind = rng.choice(["image", "image", "changes", "history"] if keys else ["image"])
    if kind == "image":
        return ["image", "--warehouse", warehouse, "--at-offset", str(at), "--json"]
    if kind == "changes":
        start = rng.randint(max(first, at - 500), at)
        return ["changes", "--warehouse", warehouse, "--from", str(start), "--to", str(at)]
    return ["history", "--warehouse", warehouse, "--table", "partitions", "--key", rng.choice(keys),
            "--to", str(at), "--json"]


def loop(warehouse: str, out: Path, stop: Path, seed: int) -> None:
    rng = random.Random(seed)
    keys: list[str] = []
    with out.open("w") as answers:
        while not stop.exists():
            known = published(warehouse)
            if known is None:  # the writer has not published its first image yet
                time.sleep(0.05)
                continue
            argv = query(rng, warehouse, known, keys)
            code, stdout, stderr = run(argv)
            answers.write(json.dumps({"argv": argv, "code": code, "stdout": stdout, "stderr": stderr}) + "\n")
            answers.flush()
            if argv[0] == "image" and code == 0:
                topics = json.loads(stdout)["topics"].items()
                keys = [f"{name}-{p}" for name, topic in topics for p in topic["partitions"]] or keys


if __name__ == "__main__":
    loop(sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3]), int(sys.argv[4]))
