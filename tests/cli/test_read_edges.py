"""Every command that reads a warehouse by time or offset (`image`, `changes`, `history`, `sql`) answers the
edges the same way, since they share one rule (`WarehouseReader.offset_at`, `check_covered`): a time before
the first batch is refused with one line, a time after the last image means the last image, and an offset
inside an open transaction shows the image without it. Real Kafka data (a bootstrap transaction at offsets
1-4 in one batch), a small warehouse built by `ingest`; the commands run in-process (`kraftlake.cli.main`)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from kraftlake.cli.main import main
from kraftlake.lake.ingest import ingest
from kraftlake.lake.warehouse import Warehouse

SAMPLE = "Jeong-Rae_KafkaDemo/kraft-combined-logs"
FIRST_BATCH_MS = 1699944392307  # offset 0 (LeaderChange), `kraftlake dump`
LAST_OFFSET = 3071
IN_TRANSACTION, END_TRANSACTION = 2, 4  # Begin at 1, FeatureLevel at 2, End at 4


@pytest.fixture(scope="module")
def warehouse(samples_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Warehouse:
    warehouse = Warehouse(tmp_path_factory.mktemp("edges") / "warehouse")
    ingest(samples_dir / SAMPLE, warehouse, image_every=1000)
    return warehouse


def run(capsys: pytest.CaptureFixture, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err.strip()


def iso(time_ms: int) -> str:
    return datetime.fromtimestamp(time_ms / 1000, UTC).isoformat(timespec="milliseconds")


def sql(capsys: pytest.CaptureFixture, uri: str, *at: str) -> dict[str, Any]:
    query = "SELECT (SELECT count(*) FROM features) AS features, (SELECT count(*) FROM brokers) AS brokers"
    code, out, err = run(capsys, "sql", "--warehouse", uri, *at, "--json", query)
    assert code == 0, err
    return json.loads(out)


def test_the_edges_answer_the_same_in_every_command(spark, warehouse: Warehouse, capsys: pytest.CaptureFixture) -> None:
    uri = warehouse.uri
    before, after = FIRST_BATCH_MS - 1, FIRST_BATCH_MS + 10 * 365 * 86_400_000

    # A time before the first batch: one line, the same in every command, naming the warehouse.
    refusals = {
        run(capsys, "image", "--warehouse", uri, "--at-time", str(before)),
        run(capsys, "changes", "--warehouse", uri, "--from-time", str(before), "--to", str(LAST_OFFSET)),
        run(capsys, "history", "--warehouse", uri, "--table", "brokers", "--key", "1", "--from", iso(before)),
        run(capsys, "sql", "--warehouse", uri, "--at-time", str(before), "SELECT 1"),
    }
    assert {(code, out) for code, out, _ in refusals} == {(2, "")}
    assert {err.split(": ", 1)[1] for _, _, err in refusals} == {  # after "kraftlake <command>: "
        f"{uri}: no metadata was committed at or before {before} ms"}

    # A time after the last image: the last image, in every command.
    last_image = run(capsys, "image", "--warehouse", uri, "--at-offset", str(LAST_OFFSET), "--json")
    assert run(capsys, "image", "--warehouse", uri, "--at-time", str(after), "--json") == last_image
    everything = run(capsys, "changes", "--warehouse", uri, "--from", "-1", "--to", str(LAST_OFFSET))
    assert everything[1] and run(
        capsys, "changes", "--warehouse", uri, "--from", "-1", "--to-time", str(after)) == everything
    history = run(capsys, "history", "--warehouse", uri, "--table", "brokers", "--key", "1", "--json")
    assert history[1] and run(capsys, "history", "--warehouse", uri, "--table", "brokers", "--key", "1", "--json",
                              "--to", iso(after)) == history
    counts = {table: len(run(capsys, "image", "--warehouse", uri, "--at-offset", str(LAST_OFFSET), "--table",
                             table)[1].splitlines()) for table in ("features", "brokers")}
    assert sql(capsys, uri, "--at-time", str(after)) == counts

    # Inside the bootstrap transaction: no image is published before its End (Kafka's rule), so every command
    # that reads an image refuses with the same line; history has no version before it.
    before_first = f"{uri}: offset {IN_TRANSACTION} is before the first published image (offset {END_TRANSACTION})"
    refusals = {
        run(capsys, "image", "--warehouse", uri, "--at-offset", str(IN_TRANSACTION), "--table", "features"),
        run(capsys, "changes", "--warehouse", uri, "--from", "0", "--to", str(IN_TRANSACTION)),
        run(capsys, "sql", "--warehouse", uri, "--at-offset", str(IN_TRANSACTION), "SELECT 1"),
    }
    assert {(code, out, err.split(": ", 1)[1]) for code, out, err in refusals} == {(2, "", before_first)}
    code, versions, _ = run(capsys, "history", "--warehouse", uri, "--table", "features", "--key",
                            "metadata.version", "--json", "--to", str(IN_TRANSACTION))
    assert code == 0 and not versions
    assert "metadata.version" in run(capsys, "image", "--warehouse", uri, "--at-offset", str(END_TRANSACTION),
                                     "--table", "features")[1]
    code, lines, _ = run(capsys, "changes", "--warehouse", uri, "--from", "0", "--to", str(END_TRANSACTION),
                         "--table", "features")
    assert code == 0 and lines
    assert sql(capsys, uri, "--at-offset", str(END_TRANSACTION))["features"] == 1


BAD_NUMBERS = ["²", "١٢", "1_0", "9223372036854775808", "9" * 5000, "-5"]


@pytest.mark.parametrize("bad", BAD_NUMBERS, ids=["superscript", "arabic-indic", "underscore", "int64+1", "5000-digits",
                                                  "negative"])
def test_a_bad_offset_time_or_key_is_one_line_naming_the_flag(warehouse: Warehouse, capsys: pytest.CaptureFixture,
                                                              bad: str) -> None:
    """Every flag that takes an offset, a time or an integer key parses it by `kraftlake.inputs`' one rule:
    exit 2 and one line naming the flag (no traceback, no digit of another script read as a number)."""
    uri = warehouse.uri
    commands = [
        (["image", "--at-offset", bad], "--at-offset"),
        (["changes", "--from", "0", "--to", bad], "--to"),
        (["history", "--table", "brokers", "--key", "1", "--from", bad], "--from"),
        (["sql", "--at-offset", bad, "SELECT 1"], "--at-offset"),
    ]
    if bad != "-5":  # a negative epoch time is a time (before 1970), a negative broker id a key
        commands += [(["image", "--at-time", bad], "--at-time"),
                     (["changes", "--from-time", bad, "--to", "1"], "--from-time"),
                     (["history", "--table", "brokers", "--key", bad], "key"),
                     (["history", "--table", "partitions", "--key", f"orders-{bad}"], "key")]
    for argv, flag in commands:
        code, out, err = run(capsys, argv[0], "--warehouse", uri, *argv[1:])
        assert (code, out) == (2, ""), (argv, err)
        assert len(err.splitlines()) == 1 and f"{flag} {bad[:40]!r}"[:-1] in err, (argv, err)
