"""Long traces (#23.5) in real Chromium on PostgreSQL: the side panel stays in view, a filter
shows only the steps with findings, collapse-all, jump-to-step, and a queue that requires
labels on the flagged steps only lets a 200-step review be submitted with three labels."""

from __future__ import annotations

import json

import pytest
from playwright.sync_api import expect

from annotations.models import StepLabel
from annotations.services import trajectory_import
from review.models import Assignment, AssignmentStatus
from safety import services as safety_services
from tests.browser.conftest import login
from tests.test_review_services import canonical, make_queue

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

FLAGGED = (10, 120, 180)


def long_trajectory():  # type: ignore[no-untyped-def]
    record = canonical(200, rollout="long-trace")
    for message in record["messages"]:
        call = (message.get("tool_calls") or [{}])[0]
        if call.get("id") in {f"call_{i}" for i in FLAGGED}:
            call["function"]["arguments"] = json.dumps({"command": "rm -rf ~/"})
    result = trajectory_import(record=record, fmt="openai")
    assert result.trajectory is not None
    safety_services.trajectory_scan(trajectory_id=result.trajectory.pk)
    return result.trajectory


def test_long_trace_filter_collapse_and_required_steps(browser_page, live_server, expert) -> None:  # type: ignore[no-untyped-def]
    page = browser_page
    page.set_viewport_size({"width": 1440, "height": 900})
    trajectory = long_trajectory()
    make_queue(slug="risky", name="risky steps", required_steps="flagged")
    login(page, live_server, expert.username)
    page.goto(f"{live_server.url}/review/queues/")
    page.click("#queue-risky button.rv-next")
    page.wait_for_url(f"**/review/trajectories/{trajectory.pk}/?queue=risky")
    expect(page.locator("#rv-required")).to_contain_text("0 / 3 required")

    # At the bottom of a 200-step page the panel is still on screen.
    page.evaluate("window.scrollTo(0, document.body.scrollHeight)")
    expect(page.locator("#submit-form button")).to_be_in_viewport()

    page.select_option("#rv-show", "findings")
    shown = page.locator("section.rv-step:visible")
    expect(shown).to_have_count(3)
    assert [shown.nth(i).get_attribute("data-step") for i in range(3)] == ["10", "120", "180"]
    page.click("#rv-collapse")
    expect(page.locator("#step-10 .rv-content")).to_be_hidden()
    expect(page.locator("#step-10 .rv-labels")).to_be_visible()

    # j walks the shown steps only; label two of the three and try to submit.
    page.locator("#step-10 .rv-step-head h2").click()
    page.keyboard.press("3")
    expect(page.locator("#step-10 .rv-val.v-1.on")).to_have_count(1)
    page.keyboard.press("j")
    expect(page.locator("#rv-current-step")).to_have_text("120")
    page.keyboard.press("3")
    expect(page.locator("#step-120 .rv-val.v-1.on")).to_have_count(1)
    expect(page.locator("#rv-required-done")).to_have_text("2")
    page.keyboard.press("Control+Enter")
    expect(page.locator(".rv-messages")).to_contain_text("missing: 180")
    page.wait_for_load_state()  # the viewer's script is running again after the redirect

    # Jump to the missing one and finish.
    page.keyboard.press("g")
    page.keyboard.type("180")
    page.keyboard.press("Enter")
    expect(page.locator("#rv-current-step")).to_have_text("180")
    page.keyboard.press("1")
    expect(page.locator("#step-180 .rv-val.v1.on")).to_have_count(1)
    page.keyboard.press("Control+Enter")
    expect(page.locator(".rv-messages")).to_contain_text("Submitted")

    assert Assignment.objects.get(reviewer=expert).status == AssignmentStatus.SUBMITTED
    assert dict(StepLabel.objects.filter(reviewer=expert).values_list("step__index", "value")) == {
        10: -1,
        120: -1,
        180: 1,
    }
    assert not page.errors  # type: ignore[attr-defined]
