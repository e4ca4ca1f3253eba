"""What `pip install` of the project puts on the import path: one name, `kraftlake`, holding every package.

`records`, `lake`, `raft`, `controller`, `analytics` and `replay` are the import names of other distributions;
a kraftlake that installed them at the top would break them, or be broken by them, in the same environment.
The wheel is built as pip builds it, and what it holds is imported from it alone."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
# The design card's folders, kept at the repository's top and installed as subpackages.
TOP_LEVEL_FOLDERS = ("replay", "jobs", "image_schema")


def build_wheel(out: Path) -> Path:
    """From a copy of the files git tracks (links kept as links): a build in the checkout would leave
    `build/lib` behind, whose stale modules the next wheel would pick up."""
    source = out / "source"
    tracked = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, check=True, capture_output=True).stdout
    for name in filter(None, tracked.decode().split("\0")):
        copy = source / name
        copy.parent.mkdir(parents=True, exist_ok=True)
        if (REPO / name).is_symlink():
            copy.symlink_to((REPO / name).readlink())
        elif (REPO / name).is_file():
            shutil.copy2(REPO / name, copy)
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(out), str(source)],
                   check=True, capture_output=True, timeout=600)
    (wheel,) = out.glob("kraftlake-*.whl")
    return wheel


def test_the_wheel_claims_one_import_name_and_runs_from_it_alone(tmp_path: Path) -> None:
    wheel = build_wheel(tmp_path / "wheel")
    names = zipfile.ZipFile(wheel).namelist()
    assert {name.split("/")[0] for name in names} == {"kraftlake", "kraftlake-0.1.0.dist-info"}
    for folder in TOP_LEVEL_FOLDERS:
        sources = {path.relative_to(REPO).as_posix() for path in (REPO / folder).glob("*.py")}
        assert {f"kraftlake/{source}" for source in sources} <= set(names), folder
    assert {"kraftlake/records/metadata_types.pyi", "kraftlake/analytics/templates/report.html.j2",
            "kraftlake/explorer/templates/base.html.j2", "kraftlake/explorer/static/timeline.js"} <= set(names)

    target = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(target)
    probe = (
        "import importlib.util, sys\n"
        f"sys.path.insert(0, {str(target)!r})\n"
        "import kraftlake.replay.loader, kraftlake.jobs.kafka_topic, kraftlake.lake.reader, kraftlake.cli.main\n"
        f"assert kraftlake.replay.loader.__file__.startswith({str(target)!r}), kraftlake.replay.loader.__file__\n"
        "print(*(importlib.util.find_spec(name) is None for name in ('replay', 'records', 'lake', 'jobs')))\n"
    )
    # -I: neither the working directory (the repository's top-level folders) nor PYTHONPATH on the path.
    found = subprocess.run([sys.executable, "-I", "-c", probe], cwd=tmp_path, capture_output=True, text=True,
                           timeout=120)
    assert found.returncode == 0, found.stderr
    assert found.stdout.split() == ["True"] * 4
