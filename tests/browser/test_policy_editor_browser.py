"""The policy editor at scale (#23.9): publishing an unchanged draft makes no new version."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from safety import services
from safety.models import PolicyVersion
from tests.browser.conftest import login

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_publish_without_a_change_makes_no_version(browser_page, live_server, safety_lead) -> None:  # type: ignore[no-untyped-def]
    page = browser_page
    policy = services.default_policy_version().policy
    versions = PolicyVersion.objects.filter(policy=policy).count()
    login(page, live_server, safety_lead.username)
    page.goto(f"{live_server.url}/safety/policies/{policy.slug}/")

    page.fill("input[name=note]", "nothing really")
    page.click("#publish")
    expect(page.locator("#publish-message")).to_contain_text(
        f"Nothing changed since v{versions}: no new version was made."
    )
    assert PolicyVersion.objects.filter(policy=policy).count() == versions

    # A real change (one rule switched off, picked in the index) publishes; again at once not.
    rule = policy.rules.filter(enabled=True, definition__action="block").order_by("position")[0]
    page.click(f"#rule-index a[href='#rule-{rule.pk}']")
    card = page.locator(f"#rule-{rule.pk}")
    expect(card).to_be_visible()
    card.locator("input[type=checkbox][name=enabled]").uncheck()
    card.locator("button[type=submit]").click()
    expect(card.locator("h3")).to_contain_text("(disabled)")
    page.click("#publish")
    expect(page.locator(f"text=v{versions + 1}").first).to_be_visible()
    assert PolicyVersion.objects.filter(policy=policy).count() == versions + 1
    page.click("#publish")
    said = page.locator("#publish-message")
    expect(said).to_contain_text(f"Nothing changed since v{versions + 1}")
    assert PolicyVersion.objects.filter(policy=policy).count() == versions + 1
    assert page.errors == []


def test_rule_index_search_filters_and_one_rule_at_a_time(  # type: ignore[no-untyped-def]
    browser_page, live_server, safety_lead
) -> None:
    page = browser_page
    policy = services.default_policy_version().policy
    rules = list(policy.rules.order_by("position"))
    assert len(rules) > 20
    login(page, live_server, safety_lead.username)
    page.goto(f"{live_server.url}/safety/policies/{policy.slug}/")

    entries = page.locator("tr.rule-entry:visible")
    expect(entries).to_have_count(len(rules))
    expect(page.locator("#rules form.rule:visible")).to_have_count(0)

    page.select_option("#rule-index select[data-facet=action]", "block")
    blocking = [r for r in rules if r.definition.get("action") == "block"]
    expect(entries).to_have_count(len(blocking))
    page.select_option("#rule-index select[data-facet=severity]", "critical")
    both = [r for r in blocking if r.definition.get("severity") == "critical"]
    expect(entries).to_have_count(len(both))
    expect(page.locator("#rule-shown")).to_have_text(f"{len(both)} of {len(rules)} shown")

    page.select_option("#rule-index select[data-facet=action]", "")
    page.select_option("#rule-index select[data-facet=severity]", "")
    target = rules[len(rules) // 2]
    page.fill("#rule-search", target.rule_id)
    expect(entries.first).to_contain_text(target.rule_id)
    page.click(f"#rule-index a[href='#rule-{target.pk}']")
    expect(page.locator("#rules form.rule:visible")).to_have_count(1)
    expect(page.locator(f"#rule-{target.pk}")).to_be_visible()
    assert page.errors == []


def test_try_the_draft_before_publishing(browser_page, live_server, safety_lead) -> None:  # type: ignore[no-untyped-def]
    page = browser_page
    policy = services.default_policy_version().policy
    login(page, live_server, safety_lead.username)
    page.goto(f"{live_server.url}/safety/policies/{policy.slug}/")
    page.evaluate("window.__pwned = false")

    page.click("#draft-run")
    expect(page.locator("#draft-results .errorlist")).to_contain_text(
        "Enter at least one command to try against the draft."
    )
    command = 'git push --force origin main; echo "<img src=x onerror=window.__pwned=true>"'
    page.fill("#draft-commands", command)
    page.click("#draft-run")
    result = page.locator("#draft-results .bench-result")
    expect(result).to_contain_text("vcs.force-push")
    assert page.evaluate("window.__pwned") is False

    # The draft without the rule (not published): the trial follows the draft.
    policy.rules.filter(rule_id="vcs.force-push").update(enabled=False)
    page.click("#draft-run")
    expect(result).not_to_contain_text("vcs.force-push")
    expect(result).to_contain_text("git push --force origin main")
    assert PolicyVersion.objects.filter(policy=policy).count() == 1
    assert page.evaluate("window.__pwned") is False
    assert page.errors == []


def test_rule_language_link_works_from_the_editor(browser_page, live_server, safety_lead) -> None:  # type: ignore[no-untyped-def]
    """#23.9: the editor links to the rule language, which the app serves from the analyzer's
    own documentation (its README section and the policy module's full reference)."""
    page = browser_page
    policy = services.default_policy_version().policy
    login(page, live_server, safety_lead.username)
    page.goto(f"{live_server.url}/safety/policies/{policy.slug}/")
    page.click("#rule-language-link")
    page.wait_for_url("**/safety/rule-language/")
    expect(page.locator("h1")).to_have_text("Rule language")
    expect(page.locator("#rule-language-summary")).to_contain_text("`match` keys are a")
    expect(page.locator("#rule-language-summary")).to_contain_text("Effect rules")
    expect(page.locator("#rule-language-reference")).to_contain_text("fs.delete-outside-workspace")
    assert page.errors == []  # type: ignore[attr-defined]
