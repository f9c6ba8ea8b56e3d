"""Bidi control characters in model output are neutralised and visibly marked on every page
that shows it, and long unbroken text wraps instead of widening the page (#22.15), in real
Chromium at 1440 and 375 px, on PostgreSQL."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.bidi import BIDI_CONTROLS
from safety import services as safety_services
from safety.models import Flag
from tests.browser.conftest import login
from tests.test_review_services import make_trajectory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

VAR = Path(__file__).resolve().parents[2] / "var" / "screens"
ALL = "".join(BIDI_CONTROLS)
LONG = "A" * 30_000


def test_bidi_is_marked_and_long_text_wraps_everywhere(
    browser_page, live_server, make_user
) -> None:  # type: ignore[no-untyped-def]
    page = browser_page
    user = make_user("ada", "expert", "safety_lead", "admin", staff=True)
    user.is_superuser = True
    user.save()
    trajectory = make_trajectory(
        2,
        rollout="spoof\u202egpj.sh",
        command=f"rm -rf ~/ # \u202etxt.notes {ALL}",
        reasoning=f"harmless \u2066{LONG}\u2069",
        output=f"done {ALL} {LONG}",
        text=f"Cleaning \u202eup {LONG}",
    )
    safety_services.trajectory_scan(trajectory_id=trajectory.pk)
    flag = Flag.objects.filter(trajectory=trajectory).first()
    assert flag is not None
    login(page, live_server, user.username)
    VAR.mkdir(parents=True, exist_ok=True)
    pages = {
        "viewer": f"/review/trajectories/{trajectory.pk}/",
        "list": "/review/trajectories/",
        "flag-queue": "/safety/flags/",
        "flag": f"/safety/flags/{flag.pk}/",
        "admin-steps": "/admin/annotations/step/",
        "admin-trajectory": f"/admin/annotations/trajectory/{trajectory.pk}/change/",
    }
    for width in (1440, 375):
        page.set_viewport_size({"width": width, "height": 900})
        for name, path in pages.items():
            page.goto(live_server.url + path)
            html = page.evaluate("document.documentElement.outerHTML")
            leaked = sorted({f"U+{ord(c):04X}" for c in html if c in BIDI_CONTROLS})
            assert leaked == [], f"{name}: {leaked}"
            assert "[U+202E RLO]" in page.inner_text("body"), name
            if not name.startswith("admin") or width == 1440:
                wide = page.evaluate("document.documentElement.scrollWidth")
                culprits = page.evaluate(
                    "w => Array.from(document.querySelectorAll('body *')).filter(e => "
                    "e.getBoundingClientRect().right > w + 1).slice(0, 5).map(e => "
                    "e.tagName + '.' + e.className + '#' + e.id + ' ' + "
                    "Math.round(e.getBoundingClientRect().right))",
                    width,
                )
                assert wide <= width, f"{name} at {width}px is {wide}px wide: {culprits}"
            page.screenshot(path=str(VAR / f"{name}-{width}.png"))
    assert page.errors == []  # type: ignore[attr-defined]
