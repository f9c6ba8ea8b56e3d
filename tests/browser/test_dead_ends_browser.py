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


def test_expert_creates_a_task_type_and_its_reward_model_from_the_browser(
    browser_page, live_server, expert, reward_model
) -> None:  # type: ignore[no-untyped-def]
    """#23.6: a new task type shows its defaults (only slug and name to type), and a page
    creates a reward model for it, which then compiles into v1 and activates."""
    from rewards.models import RewardModel

    page = browser_page
    login(page, live_server, expert.username)
    page.goto(f"{live_server.url}/rewards/task-types/")
    page.click("#new-task-type")
    for name in ("shell_tools", "command_keys", "workspace_roots", "test_path_patterns"):
        assert page.locator(f"#task-type-form [name={name}]").input_value().strip(), name
    page.fill("#task-type-form [name=slug]", "swe-docs")
    page.fill("#task-type-form [name=name]", "SWE docs")
    page.click("#task-type-form button[type=submit]")
    page.wait_for_url("**/rewards/task-types/swe-docs/")
    expect(page.locator("main")).to_contain_text("No reward model reads this task type yet.")

    page.click("#new-reward-model")
    expect(page.locator("#reward-model-form select[name=task_type]")).to_have_value("swe-docs")
    page.fill("#reward-model-form [name=slug]", "swe-docs-v")
    page.fill("#reward-model-form [name=name]", "SWE docs reward")
    # A taken slug is a 400 that names the field and keeps what was typed.
    page.fill("#reward-model-form [name=slug]", reward_model.slug)
    page.click("#reward-model-form button[type=submit]")
    expect(page.locator('#reward-model-form .errorlist[data-field="slug"]')).to_be_visible()
    expect(page.locator("#reward-model-form [name=name]")).to_have_value("SWE docs reward")
    page.fill("#reward-model-form [name=slug]", "swe-docs-v")
    page.click("#reward-model-form button[type=submit]")
    page.wait_for_url("**/rewards/models/swe-docs-v/")
    expect(page.locator(".messages, .rv-messages").first).to_contain_text("created")

    page.fill("#compile-form input[name=note]", "first version")
    page.check("#compile-form input[name=activate]")
    page.click("#compile")
    expect(page.locator("main")).to_contain_text("v1")
    created = RewardModel.objects.get(slug="swe-docs-v")
    assert created.task_type.slug == "swe-docs" and created.active_version is not None
    assert created.active_version.number == 1
    assert page.errors == []  # type: ignore[attr-defined]


def test_review_rewards_and_safety_link_to_each_other(browser_page, live_server, make_user) -> None:  # type: ignore[no-untyped-def]
    """#23.6: the top bar names the areas the user may open; an expert sees no Safety link
    (those pages are a lead's), a lead moves between all three."""
    page = browser_page
    expert = make_user("erin", "expert")
    lead = make_user("lou", "safety_lead")
    login(page, live_server, expert.username)
    page.goto(f"{live_server.url}/review/")
    areas = page.locator("header nav.areas a")
    expect(areas).to_have_text(["Review", "Rewards"])
    expect(page.locator("header nav.areas a[aria-current=page]")).to_have_text("Review")
    areas.filter(has_text="Rewards").click()
    page.wait_for_url("**/rewards/models/")
    expect(page.locator("header nav.areas a[aria-current=page]")).to_have_text("Rewards")

    page.context.clear_cookies()
    login(page, live_server, lead.username)
    page.goto(f"{live_server.url}/rewards/models/")
    expect(areas).to_have_text(["Review", "Rewards", "Safety"])
    areas.filter(has_text="Safety").click()
    page.wait_for_url("**/safety/flags/**")
    expect(page.locator("header nav.areas a[aria-current=page]")).to_have_text("Safety")
    areas.filter(has_text="Review").click()
    page.wait_for_url("**/review/")
    assert page.errors == []  # type: ignore[attr-defined]


def test_queue_creator_settles_its_disagreements(browser_page, live_server, make_user) -> None:  # type: ignore[no-untyped-def]
    """#23.6: the expert who created a queue sees its disagreements and sets final labels, once
    no review of theirs in it is open; another expert may not, nor for someone else's queue."""
    from annotations.models import FinalLabel
    from review import services as review_services
    from review.models import Assignment
    from tests.test_review_services import label_all, make_queue

    page = browser_page
    lead = make_user("pat", "expert")
    ann, bob = make_user("ann", "expert"), make_user("bob", "expert")
    trajectory = make_trajectory(1, rollout="project")
    queue = make_queue(slug="project", name="pat's project", overlap=2, blind=True, user=lead)
    for reviewer, value in ((ann, 1), (bob, -1)):
        assignment = review_services.assignment_next(queue=queue, reviewer=reviewer)
        assert assignment is not None
        label_all(trajectory, reviewer, value)
        review_services.assignment_submit(assignment=assignment, reviewer=reviewer)

    login(page, live_server, lead.username)
    page.goto(f"{live_server.url}/review/agreement/?queue=project")
    page.click("text=Resolve disagreements")
    row = page.locator("#disagreements tbody tr").first
    expect(row).to_contain_text("ann +1")
    expect(row).to_contain_text("bob -1")
    row.locator("button.rv-val.v-1").click()
    expect(page.locator(".rv-messages")).to_contain_text("Final label set")
    final = FinalLabel.objects.get(step__trajectory=trajectory)
    assert final.value == -1 and final.resolved_by_id == lead.pk
    # All labels, or another queue: a lead's, so a page that says why.
    response = page.goto(f"{live_server.url}/review/disagreements/")
    assert response is not None and response.status == 403
    expect(page.locator("main")).to_contain_text("a queue you created")

    # Another expert: not their queue.
    page.context.clear_cookies()
    login(page, live_server, ann.username)
    response = page.goto(f"{live_server.url}/review/disagreements/?queue=project")
    assert response is not None and response.status == 403

    # The lead reviewing in their own blind queue sees no votes until they submit.
    other = make_trajectory(1, rollout="project-2")
    mine = review_services.assignment_next(queue=queue, reviewer=lead)
    assert mine is not None and mine.trajectory_id == other.pk
    page.context.clear_cookies()
    login(page, live_server, lead.username)
    response = page.goto(f"{live_server.url}/review/disagreements/?queue=project")
    assert response is not None and response.status == 403
    expect(page.locator("main")).to_contain_text("hidden until you submit")
    assert Assignment.objects.filter(queue=queue, reviewer=lead).count() == 1
    assert page.errors == []  # type: ignore[attr-defined]
