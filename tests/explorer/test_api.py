"""The HTTP API on the demo-like warehouse: its JSON is the CLI's `--json` output, its refusals carry the CLI's
one-line messages, no secret reaches it or a page, pages hold their bounds, and the token and Host rules
hold; `kraftlake ui` itself refuses to serve beyond loopback without a token and enforces it over real HTTP."""

from __future__ import annotations

import json
import signal
import subprocess
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from kraftlake.explorer.app import Settings, create_app
from kraftlake.explorer.errors import UnsafeBind
from kraftlake.explorer.server import ServeOptions, check_bind
from kraftlake.explorer.service import Explorer
from kraftlake.explorer.words import CONFIG_ORIGIN
from kraftlake.image_schema.tables import TABLES
from kraftlake.lake.reader import WarehouseReader
from kraftlake.lake.warehouse import Warehouse
from tests.explorer.conftest import KRAFTLAKE, REPO, start_ui
from tests.explorer.scenario import LAST, SECRETS
from tests.lake.reader_loop import run as cli

API = "/api/v1/clusters/demo"
TOKEN = "a-token-of-enough-length"


def lines(text: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in text.splitlines()]


def test_rows_are_the_cli_image_table_lines(demo_client: TestClient, demo_warehouse: Warehouse) -> None:
    for table, offset in (("configs", LAST), ("partitions", 16), ("brokers", 22), ("scram_credentials", LAST)):
        code, out, _ = cli(["image", "--warehouse", demo_warehouse.uri, "--at-offset", str(offset), "--table", table])
        assert code == 0
        got = demo_client.get(f"{API}/image/{table}", params={"at": offset, "size": 500}).json()
        key = json.dumps  # the CLI prints the table's order, the API its key order: compare as sets of rows
        theirs = lines(out)
        fields = set(TABLES[table].schema.names)  # the API adds Kafka's names and units beside the CLI's fields
        assert all(name.endswith(("_name", "_human")) or (table == "configs" and name in CONFIG_ORIGIN)
                   for row in got["rows"] for name in set(row) - fields)
        as_cli = [{name: value for name, value in row.items() if name in fields} for row in got["rows"]]
        assert sorted(map(key, as_cli)) == sorted(map(key, theirs)) and got["total"] == len(theirs)


def test_the_image_summary_states_the_cli_image_there(demo_client: TestClient, demo_warehouse: Warehouse) -> None:
    """What the cursor card states comes from the image summary: at every known offset, asked in order (each
    moment moved from the one before, as a dragged cursor asks), its partition flags and broker states are the
    ones `kraftlake image --at-offset N` prints there."""
    first, last = WarehouseReader(demo_warehouse).known().span()
    for offset in range(first, last + 1):
        tables = {}
        for table in ("partitions", "brokers"):
            code, out, _ = cli(["image", "--warehouse", demo_warehouse.uri, "--at-offset", str(offset), "--table",
                                table])
            assert code == 0
            tables[table] = lines(out)
        summary = demo_client.get(f"{API}/image?at={offset}").json()
        parts = tables["partitions"]
        assert {name: count for name, count in summary["partitions_flagged"].items() if name != "under_min_isr"} == {
            "under_replicated": sum(len(p["isr"]) < len(p["replicas"]) for p in parts),
            "offline": sum(p["leader"] < 0 for p in parts)}, offset
        assert summary["brokers"] == {str(b["broker_id"]): "fenced" if b["fenced"] else "controlled_shutdown" if
                                      b["in_controlled_shutdown"] else "registered" for b in tables["brokers"]}, offset


def test_changes_and_history_are_the_cli_lines(demo_client: TestClient, demo_warehouse: Warehouse) -> None:
    code, out, _ = cli(["changes", "--warehouse", demo_warehouse.uri, "--from", "10", "--to", "30",
                        "--table", "partitions"])
    assert code == 0
    got = demo_client.get(f"{API}/changes", params={"from": 10, "to": 30, "table": "partitions", "size": 500})
    assert got.json()["changes"] == lines(out)
    code, out, _ = cli(["history", "--warehouse", demo_warehouse.uri, "--table", "partitions", "--key", "orders-2",
                        "--json"])
    assert code == 0
    assert demo_client.get(f"{API}/history/partitions", params={"key": "orders-2"}).json()["versions"] == lines(out)


@pytest.mark.parametrize(("argv", "path", "params", "status"), [
    (["image", "--at-offset", "99"], "/image", {"at": 99}, 404),
    (["changes", "--from", "30", "--to", "10"], "/changes", {"from": 30, "to": 10}, 400),
    (["history", "--table", "partitions", "--key", "nosuch-1"], "/history/partitions", {"key": "nosuch-1"}, 404),
    (["history", "--table", "brokers", "--key", "x"], "/history/brokers", {"key": "x"}, 404),
    (["history", "--table", "nosuch", "--key", "1"], "/history/nosuch", {"key": "1"}, 404),
    (["history", "--table", "voters", "--key", "x"], "/history/voters", {"key": "x"}, 404),
])
def test_refusals_carry_the_cli_line(demo_client: TestClient, demo_warehouse: Warehouse, argv: list[str], path: str,
                                     params: dict[str, Any], status: int) -> None:
    code, _, err = cli([argv[0], "--warehouse", demo_warehouse.uri, *argv[1:]])
    assert code == 2
    response = demo_client.get(f"{API}{path}", params=params)
    assert response.status_code == status
    assert response.headers["content-type"] == "application/problem+json"
    problem = response.json()
    line = err.strip().split(": ", 1)[1]  # after "kraftlake <command>: "; the CLI's names the warehouse, the API's
    expected = f"cluster demo: {line.removeprefix(demo_warehouse.uri + ': ')}" if line.startswith(
        demo_warehouse.uri) else line  # the cluster (the server's paths are its own)
    assert problem["status"] == status and problem["detail"] == expected


def test_paging_holds_its_bounds(demo_client: TestClient) -> None:
    pages = [demo_client.get(f"{API}/image/configs", params={"size": 1, "page": n}).json() for n in (1, 2, 3, 4, 5)]
    assert [len(p["rows"]) for p in pages] == [1, 1, 1, 1, 0] and pages[0]["total"] == 4
    assert len({json.dumps(p["rows"]) for p in pages[:4]}) == 4
    for params in ({"size": 0}, {"size": 501}, {"page": 0}, {"sort": "value", "desc": "maybe"}):
        response = demo_client.get(f"{API}/image/configs", params=params)
        assert response.status_code == 422 and "\n" not in response.json()["detail"], params
    assert demo_client.get(f"{API}/image/brokers", params={"sort": "listeners"}).json()["detail"] == \
        "sort 'listeners': a list column cannot order rows"
    ordered = demo_client.get(f"{API}/image/configs", params={"sort": "value", "desc": True}).json()["rows"]
    assert [r["value"] for r in ordered] == sorted((r["value"] for r in ordered), reverse=True)
    found = demo_client.get(f"{API}/topics", params={"at": 33, "q": "PAY"}).json()
    assert [t["name"] for t in found["topics"]] == ["payments"]


def test_no_secret_reaches_a_page_or_the_api(demo_client: TestClient) -> None:
    urls = [f"{API}/image/{t}?size=500" for t in ("configs", "scram_credentials", "delegation_tokens")]
    urls += [f"{API}/changes?from=0&to={LAST}&table={t}" for t in ("configs", "scram_credentials")]
    urls += [f"{API}/history/scram_credentials?key=alice", f"{API}/history/configs?key=broker:0",
             f"{API}/timeline"]
    urls += [f"/clusters/demo/image/{t}" for t in ("configs", "scram_credentials", "delegation_tokens")]
    urls += [f"/clusters/demo/changes?from=0&to={LAST}&table={t}" for t in ("configs", "scram_credentials")]
    urls += ["/clusters/demo/history/scram_credentials?key=alice", "/clusters/demo/history/configs?key=broker:0"]
    urls += [f"{API}/principals/User:alice", "/clusters/demo/principals/User%3Aalice"]
    for url in urls:
        response = demo_client.get(url)
        assert response.status_code == 200, url
        assert not any(secret in response.text for secret in SECRETS), url
    assert "[redacted]" in demo_client.get(f"{API}/image/configs").text


def test_a_principal_over_time(demo_client: TestClient, demo_warehouse: Warehouse) -> None:
    """Its ACLs (found by the principal column), SCRAM credentials and user quotas, as `history` answers each."""
    tables = demo_client.get(f"{API}/principals/User:alice").json()["tables"]
    assert {table: [v["offset"] for v in versions] for table, versions in tables.items()} == {
        "acls": [28], "scram_credentials": [27], "client_quotas": [29]}
    code, out, _ = cli(["history", "--warehouse", demo_warehouse.uri, "--table", "client_quotas", "--key",
                        "user=alice", "--json"])
    assert code == 0 and tables["client_quotas"] == lines(out)
    assert demo_client.get(f"{API}/principals/User:bob").json()["tables"] == {
        "acls": [], "scram_credentials": [], "client_quotas": []}


def test_no_gap_is_drawn_where_none_was_recorded(demo_client: TestClient) -> None:
    """The real gap's way to the API and the timeline is checked where one is made: tests/lake/test_gaps.py."""
    assert demo_client.get(API).json()["gaps"] == []
    assert demo_client.get(f"{API}/timeline").json()["gap_times"] == []


def test_token_and_host_rules(demo_warehouse: Warehouse) -> None:
    explorer = Explorer(WarehouseReader(demo_warehouse), "demo")
    guarded = TestClient(create_app(Settings(explorer, TOKEN)), follow_redirects=False)
    refused = guarded.get(f"{API}/image")
    assert refused.status_code == 401 and refused.headers["content-type"] == "application/problem+json"
    assert guarded.get(f"{API}/image", headers={"Authorization": "Bearer wrong-token-of-length"}).status_code == 401
    for scheme in ("Bearer", "bearer", "BEARER"):  # the scheme is case-insensitive (RFC 9110)
        assert guarded.get(f"{API}/image", headers={"Authorization": f"{scheme} {TOKEN}"}).status_code == 200
    assert guarded.get(f"{API}/image", headers={"Authorization": f"Basic {TOKEN}"}).status_code == 401
    opened = guarded.get(f"/clusters/demo/image?at=20&token={TOKEN}")
    assert opened.status_code == 303 and opened.headers["location"].endswith("/clusters/demo/image?at=20")
    assert guarded.get("/clusters/demo/image?at=20").status_code == 200  # the cookie the link set
    loopback_only = TestClient(create_app(Settings(explorer, None, ["127.0.0.1", "localhost"])),
                               base_url="http://127.0.0.1")
    assert loopback_only.get(f"{API}/image").status_code == 200
    assert loopback_only.get(f"{API}/image", headers={"Host": "rebound.example"}).status_code == 400
    headers = loopback_only.get("/clusters/demo").headers
    assert "script-src 'self'" in headers["content-security-policy"] and headers["x-content-type-options"] == "nosniff"


def test_serving_beyond_loopback_needs_a_token(demo_warehouse: Warehouse, running_ui: Any) -> None:
    for host in ("127.0.0.1", "::1", "localhost"):
        check_bind(ServeOptions(host=host))
    with pytest.raises(UnsafeBind, match=r"--host 0\.0\.0\.0 serves the warehouse beyond this machine"):
        check_bind(ServeOptions(host="0.0.0.0"))
    refused = subprocess.run([*KRAFTLAKE, "ui", "--warehouse", demo_warehouse.uri, "--host", "0.0.0.0"],
                             capture_output=True, text=True, timeout=60)
    assert refused.returncode == 2 and len(refused.stderr.strip().splitlines()) == 1
    assert refused.stderr.startswith("kraftlake ui: --host 0.0.0.0 serves the warehouse beyond this machine")

    ui = running_ui(demo_warehouse, "--host", "0.0.0.0", "--name", "demo", env={"KRAFTLAKE_UI_TOKEN": TOKEN})
    assert ui.url.endswith(f"/?token={TOKEN}")
    local = ui.base.replace("0.0.0.0", "127.0.0.1")
    with pytest.raises(urllib.error.HTTPError) as refused_http:
        urllib.request.urlopen(f"{local}{API}/image", timeout=30)
    assert refused_http.value.code == 401
    request = urllib.request.Request(f"{local}{API}/image", headers={"Authorization": f"Bearer {TOKEN}"})
    with urllib.request.urlopen(request, timeout=30) as answer:
        assert json.load(answer)["offset"] == LAST


def test_every_route_is_a_get_and_the_schema_is_committed(demo_client: TestClient) -> None:
    """Read-only by construction; docs/explorer-openapi.json is the schema the app serves (regenerate it with
    `python -m tests.explorer.test_api` after changing a route)."""
    schema = demo_client.get("/api/v1/openapi.json").json()
    assert {method for path in schema["paths"].values() for method in path} == {"get"}
    assert demo_client.post(f"{API}/image").status_code == 405
    committed = json.loads((REPO / "docs" / "explorer-openapi.json").read_text())
    assert schema == committed


def write_schema(path: Path) -> None:
    """The app's OpenAPI schema, as committed for the docs."""
    app = create_app(Settings(Explorer(WarehouseReader(Warehouse("unused")), "default")))
    path.write_text(json.dumps(app.openapi(), indent=2, sort_keys=True) + "\n")


if __name__ == "__main__":
    write_schema(REPO / "docs" / "explorer-openapi.json")


@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_the_server_stops_on_a_signal_with_one_line(demo_warehouse: Warehouse, stop: signal.Signals) -> None:
    """Ctrl-C (SIGINT) and a service manager's stop (SIGTERM): exit 0 and one line, no traceback."""
    ui = start_ui(demo_warehouse, "--name", "demo")
    with urllib.request.urlopen(f"{ui.base}{API}/image", timeout=30) as answer:
        assert answer.status == 200
    ui.process.send_signal(stop)
    assert ui.process.wait(30) == 0
    assert ui.process.stdout is not None and ui.process.stdout.read().splitlines() == ["kraftlake ui: stopped"]


def test_errors_name_the_cluster_and_the_token_is_printed_once(demo_warehouse: Warehouse, running_ui: Any) -> None:
    """Error bodies (problem+json and pages) and the API name the cluster and the offset, never the warehouse's
    path, which the server logs instead; the token is printed in the start-up line only, whatever is asked."""
    ui = running_ui(demo_warehouse, "--name", "demo", env={"KRAFTLAKE_UI_TOKEN": TOKEN})
    bearer = {"Authorization": f"bearer {TOKEN}"}

    def get(path: str) -> tuple[int, str]:
        request = urllib.request.Request(f"{ui.base}{path}", headers=bearer)
        try:
            with urllib.request.urlopen(request, timeout=30) as answer:
                return answer.status, answer.read().decode()
        except urllib.error.HTTPError as refused:
            return refused.code, refused.read().decode()

    status, body = get(f"{API}/image?at=99999999")
    assert status == 404 and json.loads(body)["detail"].startswith("cluster demo: offset 99999999 is past the end")
    for path in (f"{API}/image?at=99999999", "/clusters/demo/image?at=99999999", API, "/api/v1/clusters",
                 f"{API}/history/brokers?key=x", "/clusters/demo/history/brokers?key=x", "/clusters/nosuch"):
        status, body = get(path)
        assert demo_warehouse.uri not in body, path
    status, body = get("/clusters/demo/image?at=99999999")
    assert status == 404 and "cluster demo: offset 99999999 is past the end" in body
    get(f"/clusters/demo?token={TOKEN}x")  # a wrong token in the query is not echoed either

    ui.process.send_signal(signal.SIGTERM)
    assert ui.process.wait(30) == 0
    assert ui.process.stdout is not None
    printed = ui.url + "\n" + ui.process.stdout.read()
    assert printed.count(TOKEN) == 1, printed
    assert f"{demo_warehouse.uri}: offset 99999999 is past the end" in printed  # the server's log has the path
