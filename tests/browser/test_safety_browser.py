"""The safety lead's flows in a real browser: edit a rule, publish, rescan, review, try commands."""

from __future__ import annotations

import json

import pytest
from playwright.sync_api import expect

from annotations.services import trajectory_import
from safety import services
from safety.models import Flag
from tests.browser.conftest import login
from tests.factories import CanonicalTrajectoryFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

RULE = {
    "id": "custom.deploy-prod",
    "category": "system-control",
    "severity": "high",
    "action": "review",
    "message": "Runs the production deploy target.",
    "match": {"commands": ["make"], "argv_regex": "deploy-prod"},
    "examples": {"must_match": ["make deploy-prod"], "must_not_match": ["make test"]},
}


def test_rule_edit_publish_rescan_and_review(browser_page, live_server, safety_lead) -> None:  # type: ignore[no-untyped-def]
    page = browser_page
    services.default_policy_version()
    trajectory = trajectory_import(
        record=CanonicalTrajectoryFactory(command="make deploy-prod")
    ).trajectory
    login(page, live_server, safety_lead.username)

    page.goto(f"{live_server.url}/safety/policies/default/")
    new_rule = page.locator("#new-rule textarea[name=definition]")
    new_rule.fill('{"id": "custom.deploy-prod", "match": ')
    page.click("#new-rule button[type=submit]")
    page.wait_for_selector("#new-rule .errorlist")
    assert "Invalid JSON" in page.inner_text("#new-rule .errorlist")

    broken = {**RULE, "examples": {"must_match": ["make test"], "must_not_match": []}}
    page.locator("#new-rule textarea[name=definition]").fill(json.dumps(broken))
    page.click("#new-rule button[type=submit]")
    expect(page.locator("#new-rule .errorlist")).to_contain_text("make test")

    page.locator("#new-rule textarea[name=definition]").fill(json.dumps(RULE))
    page.click("#new-rule button[type=submit]")
    page.wait_for_selector("#rules h3:has-text('custom.deploy-prod')")
    assert page.locator("#new-rule .errorlist").count() == 0

    page.fill("input[name=note]", "flag production deploys")
    page.click("#publish")
    page.wait_for_selector("text=v2")
    page.locator("li:has-text('v2') button.rescan").click()
    page.wait_for_selector("#scan-progress[data-state=done]")
    assert Flag.objects.filter(trajectory=trajectory, rule_id="custom.deploy-prod").exists()

    page.goto(f"{live_server.url}/safety/flags/?rule=custom.deploy-prod")
    row = page.locator("tr.flag-row").first
    assert "make deploy-prod" in row.inner_text()
    page.keyboard.press("j")
    with page.expect_navigation():
        page.keyboard.press("c")
    flag = Flag.objects.get(trajectory=trajectory, rule_id="custom.deploy-prod")
    assert flag.status == "confirmed" and flag.reviewer_id == safety_lead.pk
    assert page.errors == []


def test_bench_highlights_finding_and_keeps_payload_inert(
    browser_page, live_server, safety_lead
) -> None:  # type: ignore[no-untyped-def]
    page = browser_page
    services.default_policy_version()
    login(page, live_server, safety_lead.username)
    page.goto(f"{live_server.url}/safety/bench/")
    page.evaluate("window.__pwned = false")
    page.fill(
        "#bench-commands",
        "echo '<img src=x onerror=\"window.__pwned=true\">'; rm -rf ~/",
    )
    page.click("#bench-run")
    page.wait_for_selector(".bench-result mark.finding")
    assert page.inner_text(".bench-result mark.finding").startswith("rm")
    assert page.inner_text(".bench-result .verdict") == "block"
    assert page.locator(".bench-result img").count() == 0
    assert page.evaluate("window.__pwned") is False


def test_bench_says_when_it_left_commands_out(browser_page, live_server, safety_lead) -> None:  # type: ignore[no-untyped-def]
    """#23.13: a try of more commands than one try analyses says how many it analysed."""
    page = browser_page
    services.default_policy_version()
    login(page, live_server, safety_lead.username)
    page.goto(f"{live_server.url}/safety/bench/")
    page.fill("#bench-commands", "\n".join(f"echo {i}" for i in range(103)))
    page.click("#bench-run")
    expect(page.locator("#bench-truncated")).to_have_text(
        "Only the first 100 of 103 commands were analysed."
    )
    expect(page.locator(".bench-result")).to_have_count(100)
    page.fill("#bench-commands", "echo 1\nrm -rf ~/")
    page.click("#bench-run")
    expect(page.locator(".bench-result")).to_have_count(2)
    expect(page.locator("#bench-truncated")).to_have_count(0)
