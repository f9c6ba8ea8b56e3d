"""#23: the expert who leads a labelling project exports its labels from the queue page, in real
Chromium on PostgreSQL: the file holds the project's submitted reviews only, another project's
card offers no export, and while the lead reviews in the project the export waits."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from review import services as review_services
from tests.browser.conftest import login
from tests.test_review_services import label_all, make_queue, make_trajectory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_the_lead_expert_downloads_the_projects_labels(  # type: ignore[no-untyped-def]
    browser_page, live_server, make_user
) -> None:
    page = browser_page
    pat, dan = make_user("pat", "expert"), make_user("dan", "expert")
    ann, bob, carl = (make_user(name, "expert") for name in ("ann", "bob", "carl"))
    first = make_trajectory(2, rollout="first")
    make_trajectory(2, rollout="second")
    project = make_queue(slug="project", name="Pat's project", overlap=3, user=pat)
    other = make_queue(slug="other", name="Dan's project", overlap=1, user=dan)
    for queue, reviewer, value, submit in (
        (project, ann, 1, True),
        (project, bob, -1, True),
        (project, carl, 0, False),  # still labelling: not in the file
        (other, bob, 1, True),  # another project
    ):
        assignment = review_services.assignment_next(queue=queue, reviewer=reviewer)
        assert assignment is not None and assignment.trajectory_id == first.pk
        label_all(first, reviewer, value)
        if submit:
            review_services.assignment_submit(assignment=assignment, reviewer=reviewer)

    login(page, live_server, pat.username)
    page.goto(f"{live_server.url}/review/queues/")
    card = page.locator("#queue-project")
    expect(page.locator("#queue-other .rv-export")).to_have_count(0)
    with page.expect_download() as info:
        card.get_by_role("link", name="PRM rows").click()
    download = info.value
    assert download.suggested_filename == "project-labels-prm.jsonl"
    rows = jsonl(download.path())
    assert [r["trajectory_id"] for r in rows] == [first.pk]
    # bob's labels now read +1 (his review in dan's project, submitted last, set them): the same
    # label rows, counted for both projects he submitted in; carl's open review stays out.
    assert rows[0]["annotators"] == ["ann", "bob"]
    assert rows[0]["labels"] == [1, 1]
    with page.expect_download() as info:
        card.get_by_role("link", name="one row per annotator").click()
    lines = jsonl(info.value.path())
    assert [r["annotator"] for r in lines] == ["ann", "bob"]

    # The lead takes an item of the project: the export waits until that review is submitted.
    card.get_by_role("button", name="Review next →").click()
    page.wait_for_url("**/review/trajectories/**")
    page.goto(f"{live_server.url}/review/queues/")
    expect(card).to_contain_text("once your reviews in it are submitted")
    expect(card.locator(".rv-export")).to_have_count(0)
    response = page.goto(f"{live_server.url}/review/queues/project/export.jsonl")
    assert response is not None and response.status == 403
    expect(page.locator("main")).to_contain_text("still reviewing")
    assert page.errors == []  # type: ignore[attr-defined]
