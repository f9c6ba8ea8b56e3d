"""Under DEBUG (what `make run` serves), a form that answers 400 keeps the page: django-htmx's
debug helper must not replace the document (#23.4). Behaviour form, rule editor, score page."""

from __future__ import annotations

import json

import pytest
from playwright.sync_api import expect

from rewards.models import TrustedBehaviour
from safety import services
from tests.browser.conftest import login

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def page_kept(page) -> None:  # type: ignore[no-untyped-def]
    """The document is still ours: the top bar and the marker set before the post are there."""
    expect(page.locator("header.topbar")).to_be_visible()
    assert page.evaluate("document.documentElement.dataset.kept") == "yes"


def test_forms_keep_the_page_under_debug(
    browser_page, live_server, reward_model, make_user, settings
) -> None:  # type: ignore[no-untyped-def]
    settings.DEBUG = True
    page = browser_page
    user = make_user("devi", "expert", "safety_lead")
    services.default_policy_version()
    behaviour = TrustedBehaviour.objects.get(task_type__slug="swe-bugfix", slug="read-before-edit")
    login(page, live_server, user.username)

    page.goto(f"{live_server.url}/rewards/task-types/swe-bugfix/")
    assert "django-htmx.js" in page.content()  # the debug helper is on the page
    page.evaluate("document.documentElement.dataset.kept = 'yes'")
    card = page.locator(f"#behaviour-{behaviour.pk}")
    card.locator("textarea[name=detector]").fill('{"kind": ')
    card.locator("button[type=submit]").click()
    expect(page.locator(f"#behaviour-{behaviour.pk} .errorlist")).to_contain_text("Invalid JSON")
    page_kept(page)

    page.goto(f"{live_server.url}/safety/policies/default/")
    page.evaluate("document.documentElement.dataset.kept = 'yes'")
    page.locator("#new-rule textarea[name=definition]").fill('{"id": "custom.x", "match": ')
    page.click("#new-rule button[type=submit]")
    expect(page.locator("#new-rule .errorlist")).to_contain_text("Invalid JSON")
    page_kept(page)

    page.goto(f"{live_server.url}/rewards/score/")
    page.evaluate("document.documentElement.dataset.kept = 'yes'")
    page.fill("#score-trajectory", "{not json")
    page.click("#score-run")
    expect(page.locator("#score-errors")).to_contain_text("Invalid JSON")
    page_kept(page)
    page.fill("#score-trajectory", json.dumps({"messages": "not a list"}))
    page.click("#score-run")
    expect(page.locator("#score-errors")).to_be_visible()
    page_kept(page)
    assert page.errors == []  # type: ignore[attr-defined]
