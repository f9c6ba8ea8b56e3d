"""One wording for outcomes (#23.13): the main pages, the admin and the API docs word a
trajectory's verdict only as ``core.outcomes`` does, and no page says "passed", "success",
"solved", "failed" or "unresolved" for it."""

from __future__ import annotations

import re
from html.parser import HTMLParser

import pytest

from core import outcomes
from core.roles import ADMIN
from tests.test_review_services import make_trajectory

pytestmark = pytest.mark.django_db

# Every other way the pages once worded a verdict or test counts.
OTHER_WORDS = re.compile(
    r"\b(unresolved|solved|success(ful)?|succeeded|fail(s|ed|ure|ing)?|passed|passing)\b",
    re.IGNORECASE,
)
VOCABULARY = set(outcomes.OUTCOME_WORDS.values())


class PageText(HTMLParser):
    """A page's text as a reader sees it, less scripts, styles and what is marked ``data-raw``
    (what a source recorded: an outcome object, an evaluation case's steps; data, not the app's
    words), plus the text of
    each verdict badge (class ``verdict``)."""

    SKIP = {"script", "style"}
    VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source"}

    def __init__(self) -> None:
        super().__init__()
        self.parts: list[str] = []
        self.badges: list[str] = []
        self._stack: list[tuple[str, bool, bool]] = []  # (tag, skipped, an outcome element)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in self.VOID:
            return
        named = dict(attrs)
        skip = tag in self.SKIP or "data-raw" in named
        badge = "verdict" in (named.get("class") or "").split()
        self._stack.append((tag, skip, badge))
        if badge:
            self.badges.append("")

    def handle_endtag(self, tag: str) -> None:
        while self._stack:
            if self._stack.pop()[0] == tag:
                break

    def handle_data(self, data: str) -> None:
        if any(skip for _, skip, _ in self._stack):
            return
        self.parts.append(data)
        if self._stack and self._stack[-1][2]:
            self.badges[-1] += data

    @property
    def text(self) -> str:
        return " ".join(" ".join(self.parts).split())


def read(client, url: str) -> PageText:  # type: ignore[no-untyped-def]
    response = client.get(url)
    assert response.status_code == 200, url
    page = PageText()
    page.feed(response.content.decode())
    return page


@pytest.fixture
def trajectories():  # type: ignore[no-untyped-def]
    """One trajectory per verdict, with test counts, and model output free of verdict words."""
    resolved = make_trajectory(
        2, rollout="fixed", output="ok", reasoning="Read the code.", resolved=True
    )
    failed = make_trajectory(
        2, rollout="broken", output="ok", reasoning="Read the code.", resolved=False
    )
    none = make_trajectory(2, rollout="unknown", output="ok", reasoning="Read the code.")
    for trajectory, outcome in (
        (resolved, {"resolved": True, "tests_passed": 4, "tests_failed": 0, "success": True}),
        (failed, {"resolved": False, "tests_passed": 3, "tests_failed": 1}),
        (none, {}),
    ):
        trajectory.outcome = outcome
        trajectory.resolved = outcome.get("resolved")
        trajectory.save(update_fields=["outcome", "resolved"])
    return resolved, failed, none


def assert_one_wording(page: PageText, url: str) -> None:
    assert set(page.badges) <= VOCABULARY, (url, page.badges)
    found = OTHER_WORDS.search(page.text)
    assert found is None, (
        f"{url}: {found.group(0)!r} in …{page.text[max(0, found.start() - 80) : found.end() + 80]}…"
    )


def test_the_review_pages_word_outcomes_one_way(client, make_user, trajectories) -> None:  # type: ignore[no-untyped-def]
    resolved, failed, none = trajectories
    client.force_login(make_user("walker", ADMIN, staff=True))
    listing = read(client, "/review/trajectories/")
    assert_one_wording(listing, "/review/trajectories/")
    assert sorted(listing.badges) == sorted(VOCABULARY)
    for value, word in (("true", outcomes.RESOLVED), ("false", outcomes.NOT_RESOLVED)):
        url = f"/review/trajectories/?resolved={value}"
        page = read(client, url)
        assert_one_wording(page, url)
        assert page.badges == [word]
    for trajectory, word, tests in (
        (resolved, outcomes.RESOLVED, "4 of 4 tests pass"),
        (failed, outcomes.NOT_RESOLVED, "3 of 4 tests pass"),
        (none, outcomes.NO_OUTCOME, None),
    ):
        url = f"/review/trajectories/{trajectory.pk}/"
        page = read(client, url)
        assert_one_wording(page, url)
        assert page.badges == [word, word]  # the header and the outcome card
        if tests:
            assert page.text.count(tests) == 2
    for url in ("/review/", "/review/queues/", "/review/agreement/"):
        assert_one_wording(read(client, url), url)


def test_the_admin_words_outcomes_one_way(client, make_user, trajectories) -> None:  # type: ignore[no-untyped-def]
    client.force_login(make_user("walker", ADMIN, staff=True))
    url = "/admin/annotations/trajectory/"
    page = read(client, url)
    assert_one_wording(page, url)
    for word in VOCABULARY:
        assert f" {word} " in f" {page.text} "
    filtered = read(client, url + "?outcome=not-resolved")
    assert "broken" in filtered.text and "fixed" not in filtered.text
    assert "unknown" in read(client, url + "?outcome=none").text


def test_a_strict_pair_reads_in_the_same_words(client, expert) -> None:  # type: ignore[no-untyped-def]
    from rewards.models import EvaluationCase, RewardModel
    from rewards.services import evaluation as ev
    from rewards.services.rewards import DEMO_REWARD_MODEL, seed_reward_model

    seed_reward_model()
    set_version = ev.seed_evaluation_set(
        reward_model=RewardModel.objects.get(slug=DEMO_REWARD_MODEL)
    )
    strict = EvaluationCase.objects.get(set_version=set_version, kind="pair", data__tier="strict")
    client.force_login(expert)
    url = f"/rewards/evaluation-sets/demo-gate/versions/{set_version.number}/case/?key={strict.key}"
    page = read(client, url)
    assert page.badges == [outcomes.NOT_RESOLVED, outcomes.RESOLVED]  # best first: the honest one
    assert_one_wording(page, url)


def test_the_api_docs_word_the_verdict_from_the_same_place(client) -> None:  # type: ignore[no-untyped-def]
    schema = client.get("/api/schema/?format=json").json()
    params = schema["paths"]["/api/v1/trajectories/"]["get"]["parameters"]
    resolved = next(p for p in params if p["name"] == "resolved")
    assert resolved["description"] == outcomes.RESOLVED_HELP
    listed = schema["components"]["schemas"]["TrajectoryList"]["properties"]["resolved"]
    assert listed["description"] == outcomes.RESOLVED_HELP
    c1 = schema["components"]["schemas"]["C1OutcomeDoc"]["properties"]["resolved"]
    assert c1["description"] == outcomes.RESOLVED_HELP
