"""Blind review holds for every role that labels (#23.3), in real Chromium on PostgreSQL: a lead
reviewing in a blind queue sees no other vote before submitting, a submitted review is final
(the keys do nothing) until reopened, and the reopen is audited."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from annotations.models import StepLabel
from audit.models import AuditEvent
from review import services as review_services
from review.models import Assignment
from tests.browser.conftest import login
from tests.test_review_services import make_queue, make_trajectory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_blind_review_holds_for_expert_and_lead(browser_page, live_server, make_user) -> None:  # type: ignore[no-untyped-def]
    page = browser_page
    ann = make_user("ann", "expert")
    sam = make_user("sam", "safety_lead")
    trajectory = make_trajectory(2, rollout="blind")
    queue = make_queue(slug="blind", name="blind pair", overlap=2, blind=True)
    mine = review_services.assignment_next(queue=queue, reviewer=ann)
    assert mine is not None
    for step in trajectory.steps.all():
        review_services.step_label_set(step=step, reviewer=ann, value=1)

    # The lead takes the other slot: no vote of ann's shows while sam's review is open.
    login(page, live_server, sam.username)
    page.goto(f"{live_server.url}/review/queues/")
    page.click("#queue-blind button.rv-next")
    page.wait_for_url(f"**/review/trajectories/{trajectory.pk}/?queue=blind")
    expect(page.locator(".rv-vote")).to_have_count(0)
    expect(page.locator(".rv-panel")).to_contain_text("hidden until you submit")
    page.keyboard.press("3")
    expect(page.locator("#step-0 .rv-val.v-1.on")).to_have_count(1)
    page.keyboard.press("j")
    page.keyboard.press("3")
    expect(page.locator("#step-1 .rv-val.v-1.on")).to_have_count(1)
    page.keyboard.press("Control+Enter")
    expect(page.locator(".rv-messages")).to_contain_text("Submitted")

    # Submitted: final. The keys and buttons no longer change it.
    page.goto(f"{live_server.url}/review/trajectories/{trajectory.pk}/?queue=blind")
    expect(page.locator("#rv-final")).to_be_visible()
    page.locator("#step-0 .rv-step-head h2").click()
    page.keyboard.press("1")
    expect(page.locator("#step-0 .rv-val.v1")).to_be_disabled()
    assert (
        StepLabel.objects.get(step__index=0, reviewer=sam, step__trajectory=trajectory).value == -1
    )

    # Reopen (audited, attributed), then the label changes again.
    page.click("#reopen-form button")
    expect(page.locator(".rv-messages")).to_contain_text("reopened")
    page.locator("#step-0 .rv-step-head h2").click()
    page.keyboard.press("1")
    expect(page.locator("#step-0 .rv-val.v1.on")).to_have_count(1)
    assert (
        StepLabel.objects.get(step__index=0, reviewer=sam, step__trajectory=trajectory).value == 1
    )
    assert AuditEvent.objects.filter(action="review.reopen", actor_user_id=sam.pk).count() == 1

    # The expert, still reviewing, sees none of the lead's votes either.
    page.context.clear_cookies()
    login(page, live_server, ann.username)
    page.goto(f"{live_server.url}/review/trajectories/{trajectory.pk}/?queue=blind")
    expect(page.locator("section.rv-step")).to_have_count(2)
    expect(page.locator(".rv-vote")).to_have_count(0)
    assert not page.errors  # type: ignore[attr-defined]


def test_blind_review_holds_for_an_admin_and_a_lead_outside_the_queue(
    browser_page, live_server, make_user
) -> None:  # type: ignore[no-untyped-def]
    """An admin labelling in a blind queue sees no vote before submitting; a safety lead who is
    not reviewing sees submitted votes only, never those of a blind review still open."""
    page = browser_page
    ann = make_user("ann", "expert")
    ada = make_user("ada", "admin", staff=True)
    lena = make_user("lena", "safety_lead")
    trajectory = make_trajectory(1, rollout="blind-admin")
    queue = make_queue(slug="blind2", name="blind for all", overlap=2, blind=True)
    assert review_services.assignment_next(queue=queue, reviewer=ann) is not None
    step = trajectory.steps.get()
    review_services.step_label_set(step=step, reviewer=ann, value=-1)  # not submitted

    login(page, live_server, ada.username)
    page.goto(f"{live_server.url}/review/queues/")
    page.click("#queue-blind2 button.rv-next")
    page.wait_for_url(f"**/review/trajectories/{trajectory.pk}/?queue=blind2")
    expect(page.locator(".rv-panel")).to_contain_text("hidden until you submit")
    expect(page.locator(".rv-vote")).to_have_count(0)
    page.keyboard.press("1")
    expect(page.locator("#step-0 .rv-val.v1.on")).to_have_count(1)
    page.keyboard.press("Control+Enter")
    expect(page.locator(".rv-messages")).to_contain_text("Submitted")
    # Submitted and final: the admin's own labels can no longer follow the others', so the
    # queue's other vote shows now (as for any reviewer of the queue who submitted).
    page.goto(f"{live_server.url}/review/trajectories/{trajectory.pk}/?queue=blind2")
    expect(page.locator("#rv-final")).to_be_visible()
    expect(page.locator("#step-0 .rv-val.v1")).to_be_disabled()
    expect(page.locator(".rv-vote")).to_have_count(1)

    page.context.clear_cookies()
    login(page, live_server, lena.username)
    page.goto(f"{live_server.url}/review/trajectories/{trajectory.pk}/")
    votes = page.locator("#step-0 .rv-vote")
    expect(votes).to_have_count(1)
    expect(votes.first).to_contain_text("ada +1")
    expect(page.locator("main")).not_to_contain_text("ann −1")
    assert "ann" not in votes.first.inner_text()

    # Once ann submits, the lead sees both.
    review_services.assignment_submit(
        assignment=Assignment.objects.get(queue=queue, reviewer=ann), reviewer=ann
    )
    page.reload()
    expect(votes).to_have_count(2)
    assert page.errors == []  # type: ignore[attr-defined]
