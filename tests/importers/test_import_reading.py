"""Imports read actions the task type's way, and what they cannot read is a review item."""

from __future__ import annotations

import pytest

from annotations.services import action_reading_for, trajectory_import
from core.actions import ActionReading
from review.selectors import review_page
from rewards.models import TaskType
from safety import services
from safety.models import Flag

pytestmark = pytest.mark.django_db


def call(call_id: str, name: str, arguments: str) -> dict:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def messages(*calls: dict, text: str = "") -> list[dict]:
    return [
        {"role": "user", "content": "Fix the build."},
        {"role": "assistant", "content": text, "tool_calls": list(calls)},
    ]


def test_the_task_types_shell_tools_and_text_format_apply_at_import() -> None:
    TaskType.objects.create(
        slug="custom-shell",
        name="Custom shell",
        shell_tools=["run"],
        command_keys=["script"],
        tool_call_format="hermes",
    )
    reading = action_reading_for("custom-shell")
    assert reading.shell_tools == ("run",) and reading.text_format == "hermes"
    assert action_reading_for("no-such-type") == ActionReading()
    record = {"messages": messages(call("c1", "run", '{"script": "make -j4"}'))}
    result = trajectory_import(record=record, task_type="custom-shell")
    assert result.status == "imported", result.errors
    step = result.trajectory.steps.get()
    assert [c["command"] for c in step.commands] == ["make -j4"]
    assert result.warnings == []
    # Without the task type, "run" is an unknown tool: imported, but named as not understood.
    other = trajectory_import(record={**record, "id": "again"}, task_type=None)
    assert other.status == "imported"
    assert other.warnings == [
        "step 0: actions not understood: unknown tool 'run': no shell command or file effect "
        "could be read"
    ]


def test_text_actions_are_read_in_the_task_types_format_only() -> None:
    TaskType.objects.create(slug="hermes-only", name="Hermes", tool_call_format="hermes")
    text = "Let me check.\n```bash\nls -la\n```"
    record = {
        "messages": [{"role": "user", "content": "x"}, {"role": "assistant", "content": text}]
    }
    plain = trajectory_import(record=record)
    assert [c["command"] for c in plain.trajectory.steps.get().commands] == ["ls -la"]
    assert plain.warnings == []
    hermes = trajectory_import(record=record, task_type="hermes-only")
    assert hermes.status == "imported"
    assert hermes.trajectory.steps.get().commands == []
    assert hermes.warnings == [
        "step 0: actions not understood: action-shaped text (fenced-bash) in a format the task "
        "type does not read"
    ]


def test_unread_actions_become_medium_review_flags_in_the_scan() -> None:
    record = {
        "messages": messages(
            call("c1", "bash", '{"timeout": 30}'),
            call("c2", "bash", '{"command": "rm -rf build"}'),
            call("c3", "str_replace_editor", '{"command": "create", "file_text": "x"}'),
        ),
        "metadata": {"workspace": "/workspace/app"},
    }
    result = trajectory_import(record=record)
    assert result.status == "imported"
    assert [w.split(": ", 2)[2] for w in result.warnings] == [
        "shell tool 'bash' called without a command",
        "file tool 'str_replace_editor' called without a file path that could be read",
    ]
    services.trajectory_scan(trajectory_id=result.trajectory.pk)
    flags = Flag.objects.filter(
        trajectory=result.trajectory, rule_id="import.actions-not-understood"
    ).order_by("command_index")
    # One flag per unreadable call: the editor call whose file the effect model cannot tell has
    # the model's own (the score reads that finding too), numbered after the step's command;
    # the shell call with no command has the importer's, after that.
    assert [(f.command_index, f.severity, f.action) for f in flags] == [(2, "medium", "review")]
    unknown = Flag.objects.get(trajectory=result.trajectory, rule_id="analyzer.unknown-effect")
    assert unknown.command_index == 1 and unknown.command.startswith("str_replace_editor")
    assert unknown.action == "review"
    assert flags[0].command == 'bash {"timeout": 30}'
    assert flags[0].message == (
        "Actions not understood: shell tool 'bash' called without a command."
    )
    # rm -rf build inside the agent's real workspace is ordinary work: no shell flag.
    assert set(
        Flag.objects.filter(trajectory=result.trajectory).values_list("rule_id", flat=True)
    ) == {
        "import.actions-not-understood",
        "analyzer.unknown-effect",
    }
    assert services.trajectory_scan(trajectory_id=result.trajectory.pk).flags_created == 0


def unread_record() -> dict:
    """A shell command with a finding, two calls nothing could be read from (one step), and
    action-shaped text that gave no call (the next step)."""
    return {
        "messages": [
            *messages(
                call("c1", "bash", '{"command": "rm -rf ~/"}'),
                call("c2", "mystery_tool", '{"x": "<img src=x onerror=window.__pwned=1>"}'),
                call("c3", "bash", '{"timeout": 30}'),
            ),
            {"role": "tool", "tool_call_id": "c1", "content": ""},
            {"role": "tool", "tool_call_id": "c2", "content": "ok"},
            {"role": "tool", "tool_call_id": "c3", "content": ""},
            {
                "role": "assistant",
                "content": 'Now: <tool_call>{"name": "bash", "arguments": {"command": </tool_call>',
            },
            {"role": "user", "content": "?"},
        ]
    }


def test_the_viewer_shows_each_unread_action_flag_on_the_call_it_concerns(
    safety_lead,  # type: ignore[no-untyped-def]
) -> None:
    result = trajectory_import(record=unread_record())
    services.trajectory_scan(trajectory_id=result.trajectory.pk)
    page = review_page(trajectory_id=result.trajectory.pk, user=safety_lead)
    first, second = page.steps
    on_calls = {call.id: [f.rule_id for f in call.flags] for call in first.tool_calls}
    assert on_calls["c2"] == ["import.actions-not-understood"]
    assert on_calls["c3"] == ["import.actions-not-understood"]
    assert "import.actions-not-understood" not in on_calls["c1"] and on_calls["c1"]
    c2 = next(c for c in first.tool_calls if c.id == "c2").flags[0]
    assert "mystery_tool" in c2.message and c2.command.startswith("mystery_tool ")
    assert first.step_flags == [] and first.flag_count == len(on_calls["c1"]) + 2
    # Text has no call to carry its flag: the step shows it.
    assert [f.rule_id for f in second.step_flags] == ["import.actions-not-understood"]
    assert "hermes" in second.step_flags[0].message
