"""The shipped rules (conf/kraftlake-rules.yml) as Prometheus reads them, and their alerts on known series
(rules-test.yml): Debian's promtool."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from tests.fixtures.prometheus import RULES


def test_promtool_accepts_the_shipped_rules() -> None:
    promtool = shutil.which("promtool")
    assert promtool, "promtool is missing: `make install` installs it (apt-get install prometheus)"
    checked = subprocess.run([promtool, "check", "rules", str(RULES)], capture_output=True, text=True, timeout=60)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "SUCCESS" in checked.stdout


def test_the_alerts_fire_on_their_series_after_their_for() -> None:
    promtool = shutil.which("promtool")
    assert promtool, "promtool is missing: `make install` installs it (apt-get install prometheus)"
    cases = Path(__file__).with_name("rules-test.yml")
    tested = subprocess.run([promtool, "test", "rules", str(cases)], capture_output=True, text=True, timeout=60)
    assert tested.returncode == 0, tested.stdout + tested.stderr
