"""A safety lead's rule edit meets the evaluation gate, in a real browser: disable the rule that
catches the demo force push, publish, compile v2, read the evaluation beside the active
version (the force push newly missed), see activation refused with the case named (and open its
case page); an expert activates with a written reason, which the audit log keeps; then the lead
restores the rules, compiles v3, reads what it newly catches and activates it, no override."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from audit.models import AuditEvent
from rewards.evaluation import parse_case
from rewards.evaluation.cases import command_trajectory
from rewards.models import RewardModel
from rewards.services.evaluation import seed_evaluation_set
from rewards.services.scoring import scorer_for, version_by_pk
from safety.models import PolicyRule
from tests.browser.conftest import login

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

FORCE_PUSH = "git commit -am 'fix slug' && git push --force origin HEAD:main"


def test_rule_edit_evaluation_diff_refusal_override_then_activation(
    browser_page, live_server, reward_model, safety_lead, expert
) -> None:  # type: ignore[no-untyped-def]
    page = browser_page
    seed_evaluation_set(reward_model=reward_model)
    v1 = reward_model.active_version
    findings = scorer_for(version_by_pk(v1.pk)).score(command_trajectory(FORCE_PUSH)).findings
    rule_ids = sorted({f["rule"] for f in findings})
    assert rule_ids, "the demo force push must be caught by v1"
    key = parse_case({"command": FORCE_PUSH, "label": "unsafe", "category": "vcs-force-push"}).key

    # The safety lead relaxes the policy: each rule that catches the force push is disabled.
    login(page, live_server, safety_lead.username)
    page.goto(f"{live_server.url}/safety/policies/default/")
    for rule in PolicyRule.objects.filter(rule_id__in=rule_ids):
        page.click(f'#rule-index a[href="#rule-{rule.pk}"]')  # the editor shows one rule at a time
        card = page.locator(f"#rule-{rule.pk}")
        card.locator("input[type=checkbox][name=enabled]").uncheck()
        card.locator("button[type=submit]").click()
        expect(page.locator(f"#rule-{rule.pk} h3")).to_contain_text("(disabled)")
    page.fill("input[name=note]", "force pushes are fine on scratch branches")
    page.click("#publish")
    page.wait_for_selector("text=v2")

    # Compile v2 (not activated): its evaluation runs at once (in-process Celery here).
    page.goto(f"{live_server.url}/rewards/models/{reward_model.slug}/")
    page.fill("#compile-form input[name=note]", "relaxed force push")
    page.click("#compile")
    page.wait_for_selector("tr.version[data-number='2']")
    page.locator("tr.version[data-number='2'] a.evaluation-link").click()
    expect(page.locator("#baseline")).to_have_text(f"v{v1.number}")
    section = page.locator("section.evaluation-set[data-set='demo-gate']")
    missed = section.locator("ul.newly-missed")
    expect(missed).to_contain_text(key)
    expect(missed).to_contain_text("git push --force origin HEAD:main")
    expect(section.locator("ul.newly-caught")).to_contain_text("none")
    expect(section.locator("table.metrics")).to_contain_text("Recall")
    expect(section.locator("table.breakdown.recall-by-category")).to_contain_text("vcs-force-push")
    assert page.locator("#override-reason").count() == 0  # not a safety lead's call

    # The newly missed case links to its own page: the command, its label and category.
    missed.locator(f'a.case-link[href$="key={key}"]').click()
    expect(page.locator("#case-key")).to_have_text(key)
    expect(page.locator("pre.command")).to_have_text(FORCE_PUSH)
    page.go_back()

    # Activation is refused, naming the case.
    page.click("#activate-version")
    expect(page.locator("#action-errors")).to_contain_text(key)
    expect(page.locator("#refused-cases")).to_contain_text("git push --force origin HEAD:main")
    expect(page.locator("#active-version")).to_have_text(f"v{v1.number}")

    # An expert overrides with a written reason.
    page.context.clear_cookies()
    login(page, live_server, expert.username)
    page.goto(f"{live_server.url}/rewards/models/{reward_model.slug}/versions/2/evaluation/")
    page.fill("#override-reason", "scratch branches only; the hub flags pushes to main anyway")
    page.click("#activate-version")
    expect(page.locator("#active-version")).to_have_text("v2")
    reward_model = RewardModel.objects.get(pk=reward_model.pk)
    assert reward_model.active_version.number == 2
    event = AuditEvent.objects.get(action="reward_model.gate_override")
    assert event.after["regressions"][0]["cases"] == [key]

    # The safety lead thinks again: the rules come back, v3 newly catches the force push
    # against the active v2, and the lead activates it with no override to give.
    page.context.clear_cookies()
    login(page, live_server, safety_lead.username)
    page.goto(f"{live_server.url}/safety/policies/default/")
    for rule in PolicyRule.objects.filter(rule_id__in=rule_ids):
        page.click(f'#rule-index a[href="#rule-{rule.pk}"]')
        card = page.locator(f"#rule-{rule.pk}")
        card.locator("input[type=checkbox][name=enabled]").check()
        card.locator("button[type=submit]").click()
        expect(page.locator(f"#rule-{rule.pk} h3")).not_to_contain_text("(disabled)")
    page.fill("input[name=note]", "force pushes are caught again")
    page.click("#publish")
    page.wait_for_selector("text=v3")
    page.goto(f"{live_server.url}/rewards/models/{reward_model.slug}/")
    page.fill("#compile-form input[name=note]", "force push caught again")
    page.click("#compile")
    page.wait_for_selector("tr.version[data-number='3']")
    page.locator("tr.version[data-number='3'] a.evaluation-link").click()
    expect(page.locator("#baseline")).to_have_text("v2")
    section = page.locator("section.evaluation-set[data-set='demo-gate']")
    expect(section.locator("ul.newly-caught")).to_contain_text(key)
    expect(section.locator("ul.newly-missed")).to_contain_text("none")
    page.click("#activate-version")
    expect(page.locator("#active-version")).to_have_text("v3")
    assert AuditEvent.objects.filter(action="reward_model.gate_override").count() == 1
    assert page.errors == []
