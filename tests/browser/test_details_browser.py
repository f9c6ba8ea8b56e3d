"""Details (#23.13): lock times in the reader's own time zone, and a favicon; two tabs and undo
(#23.12)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from playwright.sync_api import expect

from review import services as review_services
from tests.browser.conftest import login
from tests.test_review_services import make_queue, make_trajectory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_lock_time_is_local_and_favicon_loads(browser_page, live_server, expert) -> None:  # type: ignore[no-untyped-def]
    trajectory = make_trajectory(1, rollout="tz")
    queue = make_queue(slug="tz", name="tz")
    assignment = review_services.assignment_next(queue=queue, reviewer=expert)
    assert assignment is not None
    browser = browser_page.context.browser
    context = browser.new_context(timezone_id="Asia/Kolkata", locale="en-GB")
    page = context.new_page()
    try:
        login(page, live_server, expert.username)
        page.goto(f"{live_server.url}/review/trajectories/{trajectory.pk}/?queue=tz")
        locked = page.locator("#rv-locked-until")
        expect(locked).to_have_attribute("title", f"{assignment.locked_until:%H:%M} UTC")
        local = assignment.locked_until + timedelta(hours=5, minutes=30)
        expect(locked).to_contain_text(f"{local:%H:%M}")
        icon = page.locator("link[rel=icon]").get_attribute("href")
        assert icon is not None
        response = page.request.get(live_server.url + icon)
        assert response.status == 200 and "svg" in response.headers["content-type"]
    finally:
        context.close()


def test_stale_tab_is_told_and_does_not_overwrite_silently(
    browser_page, live_server, expert
) -> None:  # type: ignore[no-untyped-def]
    """#23.12: two tabs on one item; the stale one is told and keeps the other's value."""
    from annotations.models import StepLabel

    trajectory = make_trajectory(2, rollout="two-tabs")
    first = browser_page
    login(first, live_server, expert.username)
    url = f"{live_server.url}/review/trajectories/{trajectory.pk}/"
    first.goto(url)
    second = first.context.new_page()
    second.goto(url)

    first.keyboard.press("1")
    expect(first.locator("#step-0 .rv-val.v1.on")).to_have_count(1)
    second.keyboard.press("3")  # this tab still shows step 0 unlabelled
    expect(second.locator("#step-0 .rv-stale")).to_contain_text("changed elsewhere")
    expect(second.locator("#step-0 .rv-val.v1.on")).to_have_count(1)  # shows the stored value
    label = StepLabel.objects.get(step__trajectory=trajectory, step__index=0, reviewer=expert)
    assert label.value == 1
    # The refusal's swap must have settled: a key pressed while htmx swaps the panel in still
    # sends the old expected value and is (rightly) refused again.
    second.wait_for_function(
        "document.querySelectorAll('.htmx-request, .htmx-swapping, .htmx-settling').length === 0"
    )
    second.keyboard.press("3")  # knowingly overwrite
    expect(second.locator("#step-0 .rv-val.v-1.on")).to_have_count(1)
    label.refresh_from_db()
    assert label.value == -1


def test_undo_puts_back_the_last_labels_in_order(browser_page, live_server, expert) -> None:  # type: ignore[no-untyped-def]
    """#23.12: `z` (or the panel's button) undoes the last label, then the one before, audited."""
    from annotations.models import LabelEvent, StepLabel

    trajectory = make_trajectory(3, rollout="undo")
    page = browser_page
    login(page, live_server, expert.username)
    page.goto(f"{live_server.url}/review/trajectories/{trajectory.pk}/")
    undo = page.locator("#rv-undo")
    expect(undo).to_be_disabled()

    page.keyboard.press("1")
    expect(page.locator("#step-0 .rv-val.v1.on")).to_have_count(1)
    page.keyboard.press("j")
    page.keyboard.press("3")
    expect(page.locator("#step-1 .rv-val.v-1.on")).to_have_count(1)
    page.keyboard.press("2")
    expect(page.locator("#step-1 .rv-val.v0.on")).to_have_count(1)
    expect(undo).to_be_enabled()

    def stored() -> dict[int, int]:
        return dict(
            StepLabel.objects.filter(step__trajectory=trajectory, reviewer=expert).values_list(
                "step__index", "value"
            )
        )

    assert stored() == {0: 1, 1: 0}
    page.keyboard.press("z")  # step 1: 0 -> -1
    expect(page.locator("#step-1 .rv-val.v-1.on")).to_have_count(1)
    expect(page.locator("#status-" + str(trajectory.steps.get(index=1).pk))).to_contain_text(
        "undone: back to −1"
    )
    assert stored() == {0: 1, 1: -1}
    # Looking elsewhere does not matter: the undo changes the step it belongs to.
    page.locator("#step-2 .rv-step-head h2").click()
    expect(page.locator("#rv-current-step")).to_have_text("2")
    undo.click()  # step 1: -1 -> no label; the target follows the undone step
    expect(page.locator("#step-1 .rv-val.on")).to_have_count(0)
    expect(page.locator("#rv-current-step")).to_have_text("1")
    page.keyboard.press("z")  # step 0: +1 -> no label
    expect(page.locator("#step-0 .rv-val.on")).to_have_count(0)
    expect(page.locator("#rv-current-step")).to_have_text("0")
    expect(undo).to_be_disabled()
    page.keyboard.press("z")  # nothing left: no request, nothing changes
    assert stored() == {}
    # Every undo is a label change in the history like any other.
    events = list(
        LabelEvent.objects.filter(step__trajectory=trajectory)
        .order_by("pk")
        .values_list("step__index", "old_value", "new_value")
    )
    assert events == [
        (0, None, 1),
        (1, None, -1),
        (1, -1, 0),
        (1, 0, -1),
        (1, -1, None),
        (0, 1, None),
    ]
    assert page.errors == []  # type: ignore[attr-defined]


def test_sign_in_lists_demo_logins_in_the_embedded_mode_only(
    browser_page, live_server, settings
) -> None:  # type: ignore[no-untyped-def]
    """#23.13: the embedded demo (SQLite) names its demo accounts on the sign-in page; a
    deployment on PostgreSQL never does, even with the same accounts present."""
    import io

    from django.core.management import call_command

    call_command("seed_demo", stdout=io.StringIO())
    page = browser_page
    settings.EMBEDDED = True
    page.goto(f"{live_server.url}/accounts/login/")
    demo = page.locator("#demo-logins")
    expect(demo).to_contain_text("expert · expert")
    expect(demo).to_contain_text("safety · safety_lead")
    expect(demo).to_contain_text("admin · admin")
    # The listed account signs in with the printed default password.
    page.fill("input[name=username]", "expert")
    page.fill("input[name=password]", "rewardhub-demo")
    page.click("button[type=submit]")
    page.wait_for_url(f"{live_server.url}/")

    page.context.clear_cookies()
    settings.EMBEDDED = False
    page.goto(f"{live_server.url}/accounts/login/")
    expect(page.locator("input[name=username]")).to_be_visible()
    expect(page.locator("#demo-logins")).to_have_count(0)
    assert "rewardhub-demo" not in page.content()
