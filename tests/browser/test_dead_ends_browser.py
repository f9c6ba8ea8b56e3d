"""No dead ends for an expert (#23.6), in real Chromium on PostgreSQL: every link on the start
page opens, a page of another role says why with navigation, a missing one too, and an expert
creates a labelling queue and sees its agreement."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from review.models import ReviewQueue
from tests.browser.conftest import login
from tests.test_review_services import make_trajectory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_expert_meets_no_dead_end(browser_page, live_server, expert) -> None:  # type: ignore[no-untyped-def]
    page = browser_page
    make_trajectory(2, rollout="dead-ends")
    login(page, live_server, expert.username)
    links = page.locator("main a")
    hrefs = [links.nth(i).get_attribute("href") for i in range(links.count())]
    assert len(hrefs) >= 8
    for href in hrefs:
        response = page.goto(live_server.url + href)
        assert response is not None and response.status == 200, href

    response = page.goto(f"{live_server.url}/safety/policies/")
    assert response is not None and response.status == 403
    expect(page.locator("h1")).to_have_text("Not allowed")
    expect(page.locator("header.topbar")).to_be_visible()
    expect(page.locator("main a:has-text('Your start page')")).to_be_visible()
    response = page.goto(f"{live_server.url}/review/trajectories/987654/")
    assert response is not None and response.status == 404
    expect(page.locator("h1")).to_have_text("Not found")
    expect(page.locator("header.topbar")).to_be_visible()

    # An expert runs a labelling project: creates its queue, sees its agreement.
    page.goto(f"{live_server.url}/review/trajectories/?task_type=swe-bugfix")
    page.click("details.rv-save-queue summary")
    page.fill("details.rv-save-queue input[name=name]", "my labelling project")
    page.select_option("details.rv-save-queue select[name=required_steps]", "flagged")
    page.click("details.rv-save-queue button[type=submit]")
    expect(page.locator(".rv-messages")).to_contain_text("created")
    queue = ReviewQueue.objects.get(name="my labelling project")
    assert queue.created_by_id == expert.pk and queue.required_steps == "flagged"
    response = page.goto(f"{live_server.url}/review/agreement/?queue={queue.slug}")
    assert response is not None and response.status == 200
    assert page.errors == []  # type: ignore[attr-defined]
