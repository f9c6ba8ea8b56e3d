"""The label target follows what the reviewer looks at (#23.1) and the key map is one list that
the README, the help dialog and the key handler share (#23.2): real Chromium, PostgreSQL."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from playwright.sync_api import expect

from annotations.models import LabelEvent, StepLabel
from review.keys import SHORTCUTS
from tests.browser.conftest import login
from tests.test_review_services import make_trajectory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

README = Path(__file__).resolve().parents[2] / "README.md"
VAR = Path(__file__).resolve().parents[2] / "var" / "screens"


def target(page) -> int:  # type: ignore[no-untyped-def]
    """The step the keys label now: named in the panel, marked on the step, and on screen."""
    index = int(page.locator("#rv-current-step").inner_text())
    current = page.locator("section.rv-step.current")
    expect(current).to_have_count(1)
    expect(current).to_have_attribute("id", f"step-{index}")
    expect(current.locator(".rv-current-tag")).to_be_visible()
    expect(current).to_be_in_viewport()
    return index


def press_and_wait(page, index: int, key: str) -> None:  # type: ignore[no-untyped-def]
    css = {"1": ".rv-val.v1.on", "2": ".rv-val.v0.on", "3": ".rv-val.v-1.on"}[key]
    page.keyboard.press(key)
    expect(page.locator(f"#step-{index} .rv-label-row").first.locator(css)).to_have_count(1)


def scroll_until_target_moves(page, dy: int) -> int:  # type: ignore[no-untyped-def]
    before = page.locator("#rv-current-step").inner_text()
    page.mouse.move(500, 400)
    page.mouse.wheel(0, dy)
    expect(page.locator("#rv-current-step")).not_to_have_text(before)
    return target(page)


def test_keyboard_labelling_of_200_steps_labels_the_steps_on_screen(
    browser_page, live_server, expert
) -> None:  # type: ignore[no-untyped-def]
    page = browser_page
    page.set_viewport_size({"width": 1440, "height": 900})
    trajectory = make_trajectory(200, rollout="long")
    login(page, live_server, expert.username)
    page.goto(f"{live_server.url}/review/trajectories/{trajectory.pk}/")
    expect(page.locator("section.rv-step")).to_have_count(200)
    assert target(page) == 0

    expected: dict[int, int] = {}
    value = {"1": 1, "2": 0, "3": -1}

    def label(key: str) -> None:
        index = target(page)
        press_and_wait(page, index, key)
        expected[index] = value[key]

    # A mouse scroll moves the target to the step under the reader's eye.
    scrolled = scroll_until_target_moves(page, 6000)
    assert scrolled > 5
    label("1")
    # A click in the step map: the target is the step it shows.
    page.locator('.rv-dot[href="#step-150"]').click()
    assert target(page) == 150
    label("3")
    page.keyboard.press("j")
    assert target(page) == 151
    label("2")
    # The side panel stayed in view all along, 100,000 px down.
    expect(page.locator("#submit-form, .rv-panel .rv-target").first).to_be_in_viewport()
    # Scrolling back up moves the target again.
    back = scroll_until_target_moves(page, -4000)
    assert back < 151
    label("1")
    # Jump to a step by number from the keyboard.
    page.keyboard.press("g")
    page.keyboard.type("42")
    page.keyboard.press("Enter")
    assert target(page) == 42
    label("3")
    # A click inside a step.
    page.locator("#step-43 .rv-step-head h2").click()
    assert target(page) == 43
    label("2")
    VAR.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(VAR / "viewer-200-1440.png"))

    assert len(expected) == 6
    stored = dict(
        StepLabel.objects.filter(
            step__trajectory=trajectory, reviewer=expert, behaviour=""
        ).values_list("step__index", "value")
    )
    assert stored == expected
    events = list(
        LabelEvent.objects.filter(step__trajectory=trajectory).values_list(
            "step__index", "new_value"
        )
    )
    assert sorted(events) == sorted(expected.items())
    assert not page.errors  # type: ignore[attr-defined]


def readme_keys() -> dict[str, str]:
    """The README's shortcut table: | `key` | what it does |."""
    text = README.read_text(encoding="utf-8")
    section = text.split("### Keyboard shortcuts", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^\| `([^`]+)` \| (.+?) \|$", section, flags=re.MULTILINE)
    return dict(rows)


def test_readme_key_table_is_the_apps_key_map(browser_page, live_server, expert) -> None:  # type: ignore[no-untyped-def]
    documented = readme_keys()
    assert documented == {s.key: s.text for s in SHORTCUTS}
    page = browser_page
    trajectory = make_trajectory(3, rollout="keys")
    login(page, live_server, expert.username)
    page.goto(f"{live_server.url}/review/trajectories/{trajectory.pk}/")
    # The help dialog the key handler reads says what the README says.
    rows = page.locator("#rv-help tr[data-key]")
    shown = {
        rows.nth(i).get_attribute("data-key"): rows.nth(i).locator("td").nth(1).inner_text()
        for i in range(rows.count())
    }
    assert shown == documented
    # The legend beside the labels is always visible.
    legend = page.locator(".rv-legend")
    expect(legend).to_be_visible()
    expect(legend).to_contain_text("1 +1 trusted")
    expect(legend).to_contain_text("3 −1 untrusted")
    # Each documented label key stores the value the README names.
    for index, key in enumerate(("1", "2", "3")):
        page.locator(f"#step-{index} .rv-step-head h2").click()
        expect(page.locator("#rv-current-step")).to_have_text(str(index))
        press_and_wait(page, index, key)
        sign = re.search(r"([+−]?1|0) ", documented[key])
        assert sign is not None
        want = int(sign.group(1).replace("−", "-"))
        label = StepLabel.objects.get(
            step__trajectory=trajectory, step__index=index, reviewer=expert
        )
        assert label.value == want
