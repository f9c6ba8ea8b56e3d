"""Search (#23.8) in real Chromium on PostgreSQL: the trajectory list finds trajectories by a
command, by tool output, by a host name and by a finding's rule, live as one types."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import call_command
from playwright.sync_api import expect

from annotations.models import Trajectory
from safety import services as safety_services
from safety.models import Flag
from tests.browser.conftest import login

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def shown(page) -> set[str]:  # type: ignore[no-untyped-def]
    return set(page.locator("tr.rv-row td:first-child").all_inner_texts())


def holding(text: str) -> set[str]:
    return {
        t.external_id
        for t in Trajectory.objects.all()
        if text in json.dumps(t.canonical, ensure_ascii=False)
    }


def test_list_search_finds_commands_output_hosts_and_findings(
    browser_page, live_server, expert
) -> None:  # type: ignore[no-untyped-def]
    call_command("seed_demo", stdout=io.StringIO())
    for trajectory in Trajectory.objects.all():
        safety_services.trajectory_scan(trajectory_id=trajectory.pk)
    total = Trajectory.objects.count()
    page = browser_page
    login(page, live_server, expert.username)
    page.goto(f"{live_server.url}/review/trajectories/")
    expect(page.locator("#total-count")).to_have_text(str(total))

    for query, text in (
        ("rm -rf", "rm -rf"),  # a command
        ("example.invalid", "example.invalid"),  # a host name in a command
        ("4 passed", "4 passed"),  # tool output
    ):
        want = holding(text)
        assert 0 < len(want) < total, query
        page.fill("#q", query)
        expect(page.locator("#total-count")).to_have_text(str(len(want)))
        assert shown(page) == want, query

    # A finding's rule: the trajectories flagged by it.
    flagged = {
        f.trajectory.external_id
        for f in Flag.objects.select_related("trajectory").filter(rule_id="test.delete")
    }
    assert flagged
    page.fill("#q", "test.delete")
    expect(page.locator("#total-count")).to_have_text(str(len(flagged)))
    assert shown(page) == flagged
    assert "q=test.delete" in page.url
    assert page.errors == []  # type: ignore[attr-defined]
