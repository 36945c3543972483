"""checkov's Bicep policies over ``infra/``, with every waiver in ``infra/checkov-waivers.json``.

checkov (requirements-checkov.txt, in ``.venv-checkov``) runs offline (``--skip-download``: no
policy metadata is fetched). Its failed checks must be exactly the waived ones, each waiver
naming the check, the resource and the reason: a new finding fails this test until it is fixed
or waived with a reason, and a waiver that no longer matches a finding fails it too.
"""

from __future__ import annotations

import json
import subprocess
from functools import cache
from typing import Any

import pytest

from tests.infra.tools import CHECKOV, ROOT, require

WAIVERS = ROOT / "infra" / "checkov-waivers.json"

pytestmark = pytest.mark.xdist_group("checkov")
"""One process runs this file's tests (``--dist loadgroup`` in ``./dev.sh``), so the scan of
about two minutes, cached by :func:`_scan`, runs once."""


@cache
def _scan() -> dict[str, Any]:
    checkov = require(CHECKOV, "checkov (.venv-checkov)")
    completed = subprocess.run(
        [str(checkov), "--directory", str(ROOT / "infra"), "--framework", "bicep",
         "--skip-download", "--compact", "--output", "json"],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    # checkov exits 1 when a check fails; anything else is an error of the scan itself.
    assert completed.returncode in (0, 1), completed.stderr
    report: dict[str, Any] = json.loads(completed.stdout)
    return report


def _waivers() -> list[dict[str, str]]:
    waivers: list[dict[str, str]] = json.loads(WAIVERS.read_text())["waivers"]
    return waivers


def test_every_waiver_names_a_check_a_resource_and_a_reason() -> None:
    seen = set()
    for waiver in _waivers():
        assert set(waiver) == {"check", "resource", "reason"}, waiver
        assert waiver["check"].startswith("CKV_AZURE_"), waiver
        assert len(waiver["reason"]) > 40, waiver
        key = (waiver["check"], waiver["resource"])
        assert key not in seen, key
        seen.add(key)


def test_checkov_finds_nothing_but_the_waived_policies() -> None:
    report = _scan()
    assert report["summary"]["parsing_errors"] == 0
    assert report["summary"]["resource_count"] >= 20, report["summary"]
    failed = {(c["check_id"], c["resource"]) for c in report["results"]["failed_checks"]}
    waived = {(w["check"], w["resource"]) for w in _waivers()}
    assert failed - waived == set(), "new findings: fix them or waive them with a reason"
    assert waived - failed == set(), "stale waivers: remove them from infra/checkov-waivers.json"


def test_checkov_passes_the_policies_the_templates_meet() -> None:
    """The fixes of issue 22 as checkov sees them: FTP(S) off on the app."""
    passed = {(c["check_id"], c["resource"]) for c in _scan()["results"]["passed_checks"]}
    assert ("CKV_AZURE_78", "Microsoft.Web/sites.app") in passed
