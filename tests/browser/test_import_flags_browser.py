"""An action the importer could not read is flagged on the tool call it concerns, in the viewer
in real Chromium (PostgreSQL): the reviewer sees the flag where the call is, not only a count."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from annotations.services import trajectory_import
from safety import services as safety_services
from safety.models import Flag
from tests.browser.conftest import login
from tests.importers.test_import_reading import unread_record

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

UNREAD = "import.actions-not-understood"


def test_unread_action_flags_are_shown_on_their_calls(
    browser_page, live_server, safety_lead
) -> None:  # type: ignore[no-untyped-def]
    page = browser_page
    trajectory = trajectory_import(record=unread_record()).trajectory
    safety_services.trajectory_scan(trajectory_id=trajectory.pk)
    unread = list(Flag.objects.filter(trajectory=trajectory, rule_id=UNREAD).order_by("id"))
    assert len(unread) == 3
    page.add_init_script("window.__pwned = false")
    login(page, live_server, safety_lead.username)
    page.goto(f"{live_server.url}/review/trajectories/{trajectory.pk}/")

    calls = page.locator("section#step-0 .rv-call")
    expect(calls).to_have_count(3)
    by_tool = {
        calls.nth(i).locator(".rv-tool").inner_text(): calls.nth(i) for i in range(calls.count())
    }
    mystery = by_tool["mystery_tool"]
    expect(mystery.locator(".rv-flag")).to_have_count(1)
    expect(mystery.locator(".rv-flag")).to_contain_text(UNREAD)
    expect(mystery.locator(".rv-flag")).to_contain_text("unknown tool 'mystery_tool'")
    # The call's own arguments are shown as text, never run.
    expect(mystery.locator(".rv-args")).to_contain_text("<img src=x onerror")
    assert mystery.locator("img").count() == 0
    # The shell call carries its command's findings, and no import flag.
    shell = calls.nth(0)
    expect(shell.locator(".rv-cmd")).to_contain_text("rm -rf ~/")
    assert shell.locator(".rv-flag").count() >= 1
    assert UNREAD not in shell.locator(".rv-flags").inner_text()
    # The bash call without a command is the third call, with its own flag.
    expect(calls.nth(2).locator(".rv-flag")).to_contain_text("called without a command")
    # Action-shaped text has no call: its flag is on the step, after the text.
    text_flags = page.locator("section#step-1 .rv-step-flags .rv-flag")
    expect(text_flags).to_have_count(1)
    expect(text_flags).to_contain_text("from which no call was read")
    assert page.locator("section#step-0 .rv-step-flags").count() == 0

    # A lead reviews it where it is shown.
    flag = next(f for f in unread if f.command.startswith("mystery_tool"))
    page.locator(f"#flag-{flag.pk} button.rv-confirm").click()
    expect(page.locator(f"#flag-{flag.pk} [data-flag-status]")).to_have_text("confirmed")
    flag.refresh_from_db()
    assert flag.status == "confirmed"
    assert page.evaluate("window.__pwned") is False
    assert page.errors == []
