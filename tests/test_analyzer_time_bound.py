"""The analyzer's time bound per command, through the service (issue #22, item 10).

``RH_ANALYZER_COMMAND_SECONDS`` reaches every analyzer of the process; a command past it is an
``analyzer.too-complex`` review in the analyze API's answer, which comes promptly, and in the
flags a scan stores on PostgreSQL. The bound itself: tests/safety_core/test_deadline.py.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest
from django.db import connection
from rest_framework.test import APIClient

from annotations.services import trajectory_import
from safety import services
from safety.analyzer import config as analyzer_config
from safety.models import Flag
from tests.factories import CanonicalTrajectoryFactory

ROOT = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.django_db


def _slow_command() -> str:
    """About 0.2 s of analysis unbounded; unique, so no analyzer has it cached."""
    return f"ls {uuid.uuid4().hex} " + "a " * 9000


def test_the_setting_reaches_the_analyzers_of_the_process() -> None:
    code = (
        "import django; django.setup(); from safety.analyzer import config; "
        "print(config.COMMAND_SECONDS)"
    )
    env = {**os.environ, "RH_ANALYZER_COMMAND_SECONDS": "0.25"}
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "0.25"


def test_the_analyze_api_answers_promptly_with_a_review(
    key_client: Callable[[str], APIClient], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(analyzer_config, "COMMAND_SECONDS", 0.02)
    commands = [_slow_command() for _ in range(5)] + ["ls -la"]
    start = time.monotonic()
    response = key_client("analyze").post("/api/v1/analyze/", {"commands": commands}, "json")
    seconds = time.monotonic() - start
    assert response.status_code == 200, response.content[:500]
    results = response.json()["results"]
    for result in results[:5]:
        assert result["verdict"] == "review"
        assert [f["rule"] for f in result["findings"]] == ["analyzer.too-complex"]
    assert results[5]["verdict"] == "allow"
    assert seconds < 3.0, seconds


def test_a_scan_stores_the_review_of_a_command_past_the_bound(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    if connection.vendor != "postgresql":
        pytest.skip("flags are checked where they are stored: run with DATABASE_URL")
    monkeypatch.setattr(analyzer_config, "COMMAND_SECONDS", 0.02)
    command = _slow_command()
    trajectory_id = trajectory_import(
        record=CanonicalTrajectoryFactory(command=command)
    ).trajectory.pk
    assert services.trajectory_scan(trajectory_id=trajectory_id).flags_created >= 1
    flag = Flag.objects.get(trajectory_id=trajectory_id, rule_id="analyzer.too-complex")
    assert flag.action == "review" and flag.command == command
