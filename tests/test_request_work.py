"""Work per request is bounded (issue #22, item 10): shell commands and their characters per
analyze or score request, a 413 naming the limit, answered before the over-limit analysis."""

from __future__ import annotations

import time
from typing import Any

import pytest

from tests.factories import bash_call

pytestmark = pytest.mark.django_db


def _trajectory(commands: list[str]) -> dict[str, Any]:
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Fix it."}]
    for i, command in enumerate(commands):
        messages.append({"role": "assistant", "tool_calls": [bash_call(f"c{i}", command)]})
        messages.append({"role": "tool", "tool_call_id": f"c{i}", "content": "ok"})
    return {"messages": messages}


def _limited(settings, commands: int, chars: int) -> None:  # type: ignore[no-untyped-def]
    settings.REWARDHUB_LIMITS = {
        **settings.REWARDHUB_LIMITS,
        "MAX_REQUEST_COMMANDS": commands,
        "MAX_REQUEST_COMMAND_CHARS": chars,
    }


def test_score_requests_over_the_command_budget_are_413(
    key_client, reward_model, recorder, settings
) -> None:  # type: ignore[no-untyped-def]
    _limited(settings, commands=10, chars=1000)
    client = key_client("score")
    ok = {"reward_model": reward_model.slug, "trajectory": _trajectory(["ls"] * 10)}
    assert client.post("/api/v1/score/", ok, format="json").status_code == 200
    many = {"reward_model": reward_model.slug, "trajectory": _trajectory(["ls"] * 11)}
    response = client.post("/api/v1/score/", many, format="json")
    assert response.status_code == 413
    assert "over the limit of 10 shell commands per request" in str(response.json()["errors"])
    long = {"reward_model": reward_model.slug, "trajectory": _trajectory(["ls " + "a" * 600] * 2)}
    response = client.post("/api/v1/score/", long, format="json")
    assert response.status_code == 413
    assert "over the limit of 1000 characters of shell commands" in str(response.json()["errors"])
    # A batch shares one budget: each trajectory is within it, together they are not.
    batch = {"reward_model": reward_model.slug, "trajectories": [_trajectory(["ls"] * 6)] * 2}
    assert client.post("/api/v1/score/batch/", batch, format="json").status_code == 413
    text = "Fix it.\n" + "```bash\nls\n```\n" * 11
    rlhf = client.post(f"/api/v1/openrlhf/{reward_model.slug}/", {"query": [text]}, format="json")
    assert rlhf.status_code == 413


def test_analyze_requests_over_the_character_budget_are_413(key_client, settings) -> None:  # type: ignore[no-untyped-def]
    _limited(settings, commands=10, chars=1000)
    client = key_client("analyze")
    assert (
        client.post("/api/v1/analyze/", {"commands": ["ls"] * 10}, format="json").status_code == 200
    )
    response = client.post("/api/v1/analyze/", {"commands": ["ls"] * 11}, format="json")
    assert response.status_code == 413 and "10 shell commands" in str(response.json()["errors"])
    long = {"commands": ["echo " + "a" * 600, "echo " + "b" * 600]}
    response = client.post("/api/v1/analyze/", long, format="json")
    assert response.status_code == 413 and "1000 characters" in str(response.json()["errors"])


def test_the_default_budget_refuses_what_held_a_thread_for_seconds(
    key_client, reward_model, recorder
) -> None:  # type: ignore[no-untyped-def]
    """Within every other default limit (20,000 characters per command, 1,000 commands, 5,000
    messages), such requests analyzed for many seconds; the budget answers first."""
    heavy = [f"echo $(date) | grep x{i} && cat 'q s' " * 500 for i in range(60)]  # 19,000 chars
    client = key_client("analyze,score")
    start = time.monotonic()
    analyzed = client.post("/api/v1/analyze/", {"commands": heavy}, format="json")
    scored = client.post(
        "/api/v1/score/",
        {"reward_model": reward_model.slug, "trajectory": _trajectory(heavy)},
        format="json",
    )
    assert (analyzed.status_code, scored.status_code) == (413, 413)
    assert time.monotonic() - start < 2.0


def _slow_commands(n: int) -> list[str]:
    """Distinct commands each within every count and size limit that take the analyzer tens of
    milliseconds (long pipelines of substitutions), none cached from another test."""
    return [f"echo $(date) | grep y{i}{time.time_ns()} && cat 'q s' " * 120 for i in range(n)]


def test_a_request_past_its_analysis_time_is_413_naming_the_limit(
    key_client, reward_model, recorder, settings
) -> None:  # type: ignore[no-untyped-def]
    settings.SAFETY = {**settings.SAFETY, "REQUEST_SECONDS": 0.05}
    client = key_client("analyze,score")
    start = time.monotonic()
    analyzed = client.post("/api/v1/analyze/", {"commands": _slow_commands(40)}, format="json")
    assert analyzed.status_code == 413
    assert "over the limit of 0.05 seconds per request" in str(analyzed.json()["errors"])
    scored = client.post(
        "/api/v1/score/",
        {"reward_model": reward_model.slug, "trajectory": _trajectory(_slow_commands(40))},
        format="json",
    )
    assert scored.status_code == 413
    assert "over the limit of 0.05 seconds per request" in str(scored.json()["errors"])
    batch = {
        "reward_model": reward_model.slug,
        "trajectories": [_trajectory(_slow_commands(10)) for _ in range(4)],
    }
    assert client.post("/api/v1/score/batch/", batch, format="json").status_code == 413
    assert time.monotonic() - start < 5.0  # each stopped near its bound, not at 40 x 2 s
    # The same commands within the default bound are analyzed and scored.
    settings.SAFETY = {**settings.SAFETY, "REQUEST_SECONDS": 10.0}
    ok = client.post("/api/v1/analyze/", {"commands": _slow_commands(3)}, format="json")
    assert ok.status_code == 200 and len(ok.json()["results"]) == 3
