"""The main pages as each role sees them, at 1440 and 375 px (#23.13), in real Chromium on
PostgreSQL with the demo data: every page answers 200 without a script error, no page scrolls
sideways, no behaviour name is cut off, and badge, severity, status and pressed-button text
meets WCAG AA contrast (4.5:1). The screenshots land in var/screens/ (ignored by git) for a
person to look at."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from django.core.management import call_command

from annotations.models import Trajectory
from review import services as review_services
from review.models import ReviewQueue
from safety import services as safety_services
from safety.models import Flag
from tests.browser.conftest import login

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

VAR = Path(__file__).resolve().parents[2] / "var" / "screens"

# The text the issue names: severity and status badges, and pressed buttons.
CONTRAST_SELECTORS = (
    "[class*='sev-'], .rv-badge, .badge, .job-state, .rv-flag, [aria-pressed='true'], "
    "button.on, .rv-val.on, .state"
)

CONTRAST = """(selector) => {
  function rgba(text) {
    const m = text.match(/rgba?\\(([^)]+)\\)/);
    if (!m) return [0, 0, 0, 0];
    const p = m[1].split(",").map((x) => parseFloat(x));
    return [p[0], p[1], p[2], p.length > 3 ? p[3] : 1];
  }
  function background(el) {
    for (let e = el; e; e = e.parentElement) {
      const c = rgba(getComputedStyle(e).backgroundColor);
      if (c[3] > 0.5) return c;
    }
    return [255, 255, 255, 1];
  }
  function lum(c) {
    const f = (v) => {
      v /= 255;
      return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4);
    };
    return 0.2126 * f(c[0]) + 0.7152 * f(c[1]) + 0.0722 * f(c[2]);
  }
  const out = [];
  document.querySelectorAll(selector).forEach((el) => {
    if (!el.offsetParent || !el.textContent.trim()) return;
    const fg = rgba(getComputedStyle(el).color);
    const bg = background(el);
    const [a, b] = [lum(fg) + 0.05, lum(bg) + 0.05];
    const ratio = Math.max(a, b) / Math.min(a, b);
    const text = el.textContent.trim().slice(0, 20);
    if (ratio < 4.5) out.push(el.className + " '" + text + "' " + ratio.toFixed(2));
  });
  return out;
}"""

# Behaviour names, and names in badges, that the page cuts off (their box narrower than the text).
CUT = """() => Array.from(document.querySelectorAll(".rv-label-name, .badge.behaviour"))
  .filter((el) => el.offsetParent && el.scrollWidth > el.clientWidth + 1)
  .map((el) => el.textContent.trim())"""

OVERFLOW = """() => {
  const width = document.documentElement.clientWidth;
  const wide = [];
  document.querySelectorAll("main *, header *").forEach((el) => {
    const box = el.getBoundingClientRect();
    if (box.width && box.right > width + 1 && !el.closest(".scroll-x, pre, .table-wrap")) {
      wide.push(el.tagName.toLowerCase() + "." + el.className + " right=" + Math.round(box.right));
    }
  });
  return { scroll: document.scrollingElement.scrollWidth, width: width, wide: wide.slice(0, 5) };
}"""

# At phone width nothing scrolls sideways: not the document, and not a table inside its box.
PHONE_OVERFLOW = """() => {
  const doc = document.documentElement;
  const out = [];
  if (doc.scrollWidth > doc.clientWidth) {
    out.push("document " + doc.scrollWidth + " > " + doc.clientWidth);
  }
  document.querySelectorAll("main table").forEach((el) => {
    if (el.offsetParent && el.scrollWidth > el.clientWidth + 1) {
      const name = "table#" + el.id + "." + el.className;
      out.push(name + " " + el.scrollWidth + " > " + el.clientWidth);
    }
  });
  return out;
}"""
# The pages whose tables fit at 375 px (stacked cards); others' wide tables scroll in their box.
FITTED_TABLES = {"agreement", "trajectories", "flag-queue"}


def demo_world(make_user):  # type: ignore[no-untyped-def]
    call_command("seed_demo", stdout=io.StringIO())
    for trajectory in Trajectory.objects.all():
        safety_services.trajectory_scan(trajectory_id=trajectory.pk)
    queue = ReviewQueue.objects.get(slug="swe-bugfix-all")
    users = {
        "expert": make_user("ann", "expert"),
        "lead": make_user("lena", "safety_lead"),
        "admin": make_user("ada", "admin", staff=True),
    }
    bob = make_user("bob", "expert")
    for user, flip in ((users["expert"], 1), (bob, -1)):
        assignment = review_services.assignment_next(queue=queue, reviewer=user)
        assert assignment is not None
        for step in assignment.trajectory.steps.all():
            review_services.step_label_set(
                step=step, reviewer=user, value=1 if step.index % 3 else flip
            )
        review_services.assignment_submit(assignment=assignment, reviewer=user)
    return users


def pages(flagged: Trajectory, flag: Flag) -> dict[str, list[tuple[str, str]]]:
    common = [
        ("home", "/"),
        ("trajectories", "/review/trajectories/"),
        ("viewer", f"/review/trajectories/{flagged.pk}/"),
        ("queues", "/review/queues/"),
        ("import", "/review/import/"),
        ("reward-models", "/rewards/models/"),
        ("task-type", "/rewards/task-types/swe-bugfix/"),
        ("score", "/rewards/score/"),
        ("learned", "/rewards/learned/"),
    ]
    lead = [
        ("flag-queue", "/safety/flags/"),
        ("flag", f"/safety/flags/{flag.pk}/"),
        ("policy", "/safety/policies/default/"),
        ("bench", "/safety/bench/"),
        ("agreement", "/review/agreement/?queue=swe-bugfix-all"),
        ("disagreements", "/review/disagreements/"),
        ("exports", "/review/exports/"),
    ]
    return {
        "expert": [*common, ("agreement", "/review/agreement/?queue=swe-bugfix-all")],
        "lead": [
            ("home", "/"),
            ("trajectories", "/review/trajectories/"),
            ("queues", "/review/queues/"),
            *lead,
        ],
        "admin": [("home", "/"), ("policy", "/safety/policies/default/")],
    }


@pytest.mark.parametrize("width", [1440, 375])
def test_main_pages_at_desktop_and_phone_width(browser_page, live_server, make_user, width) -> None:  # type: ignore[no-untyped-def]
    users = demo_world(make_user)
    flag = Flag.objects.select_related("trajectory").order_by("pk").first()
    assert flag is not None
    flagged = flag.trajectory
    page = browser_page
    page.set_viewport_size({"width": width, "height": 900})
    out = VAR / str(width)
    out.mkdir(parents=True, exist_ok=True)
    problems: list[str] = []
    for role, visits in pages(flagged, flag).items():
        page.context.clear_cookies()
        login(page, live_server, users[role].username)
        for name, path in visits:
            response = page.goto(live_server.url + path)
            assert response is not None and response.status == 200, (role, path)
            if name == "viewer":
                page.locator("details.rv-behaviours summary").first.click()
                problems += [f"{role} {path}: cut off {n}" for n in page.evaluate(CUT)]
            page.screenshot(path=str(out / f"{role}-{name}.png"), full_page=True)
            page.screenshot(path=str(out / f"{role}-{name}-screenful.png"))
            if page.locator("main table:visible").count():
                page.locator("main table:visible").first.scroll_into_view_if_needed()
                page.screenshot(path=str(out / f"{role}-{name}-table.png"))
            layout = page.evaluate(OVERFLOW)
            if layout["scroll"] > layout["width"] + 1:
                problems.append(f"{role} {path}: scrolls sideways {layout}")
            if width == 375:
                for wide in page.evaluate(PHONE_OVERFLOW):
                    if wide.startswith("document") or name in FITTED_TABLES:
                        problems.append(f"{role} {path}: scrolls sideways at 375 px: {wide}")
            for low in page.evaluate(CONTRAST, CONTRAST_SELECTORS):
                problems.append(f"{role} {path}: contrast {low}")
    (out / "problems.txt").write_text("\n".join(problems) + "\n", encoding="utf-8")
    assert problems == []
    assert page.errors == []  # type: ignore[attr-defined]
