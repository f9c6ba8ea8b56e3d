"""Agent logs through the import command, the API and the safety scan (PostgreSQL)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command
from trajectory_fixtures import ROOT

from annotations.importers import iter_records
from annotations.models import Trajectory
from safety import services
from safety.models import Flag

pytestmark = pytest.mark.django_db

LOGS = ROOT / "tests" / "fixtures" / "agent_logs"
URL = "/api/v1/trajectories/"


def run_import(path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[str, str]:
    call_command("import_trajectories", str(path), "--no-progress")
    captured = capsys.readouterr()
    return captured.out, captured.err


def test_every_agent_log_imports_with_its_commands_and_nothing_rejected(
    capsys: pytest.CaptureFixture[str],
) -> None:
    files = sorted(p for p in LOGS.glob("*/*") if not p.name.startswith(("LICENSE", "SOURCE")))
    for path in files:
        out, err = run_import(path, capsys)
        assert "rejected 0" in out, (path, out, err)
    # One trajectory per session (aider), per side chain (Claude Code), per call (litellm JSONL).
    # Claude Code's session file and its stream-json output of one run are two records (as
    # are Codex's rollout and its ``exec --json`` output).
    assert Trajectory.objects.count() == 42
    ids = set(Trajectory.objects.values_list("external_id", flat=True))
    assert {
        "SWE-agent__test-repo-i1",
        "neubig/pr-viewer#5",
        "example__app-1",
        "astropy__astropy-12907",
        "ponylang__ponyc-4595",
    } <= ids
    # One run in two formats (OpenHands' own events, Harbor's ATIF of them): the same actions.
    for fmt in ("openhands", "atif"):
        pony = Trajectory.objects.get(external_id="ponylang__ponyc-4595", source_format=fmt)
        assert pony.command_count == 13
        assert pony.metadata["workspace"] == ["/workspace/ponylang__ponyc__0.1", "/workspace"]
    # The agents' own logs of one scripted piece of work (scripts/agent_log_runs/).
    demo = Trajectory.objects.filter(metadata__workspace="/tmp/demo-repo")
    assert sorted((t.source_format, t.command_count) for t in demo) == [
        ("claude-code", 7),
        ("claude-code", 7),
        ("codex", 7),
        ("mini-swe-agent", 10),
        ("openhands-v1", 7),
    ]
    # Ids the content lacks, from the file's name (the command passes its path).
    by_name = Trajectory.objects.get(external_id="cd94562403b9487ebdd4018e3f531dfd")
    assert by_name.metadata["id_from"] == "file name"
    assert "github_issue" in ids
    resolver = Trajectory.objects.get(external_id="neubig/pr-viewer#5")
    assert resolver.source_format == "openhands"
    assert resolver.canonical["patch"].startswith("diff --git a/LICENSE b/LICENSE")
    assert resolver.outcome == {"success": True}
    assert [c["command"] for s in resolver.steps.order_by("index") for c in s.commands] == [
        "touch LICENSE",
        "cat LICENSE",
    ]


def test_event_per_line_logs_are_one_trajectory_and_warnings_are_printed(
    capsys: pytest.CaptureFixture[str],
) -> None:
    out, err = run_import(LOGS / "openhands-v0" / "resolver_output.jsonl", capsys)
    assert out.strip() == "imported 1, duplicate 0, rejected 0"
    assert err.strip() == (
        "warning line 1: step 1: actions not understood: 'execute_ipython_cell' runs code "
        "that the shell analyzer does not read"
    )
    out, _ = run_import(LOGS / "claude-code" / "stream_json_ls.jsonl", capsys)
    assert out.strip() == "imported 1, duplicate 0, rejected 0"
    trajectory = Trajectory.objects.get(source_format="claude-code")
    assert trajectory.command_count == 1 and trajectory.metadata["workspace"].startswith("/home")


def test_a_file_of_no_known_format_gets_one_error_not_one_per_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    unknown = tmp_path / "events.jsonl"
    unknown.write_text("\n".join(json.dumps({"event": "step", "n": i}) for i in range(300)))
    with pytest.raises(CommandError, match="no record could be imported"):
        run_import(unknown, capsys)
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert err[0].startswith("rejected line 1: none of the 300 lines is a trajectory")
    markdown = tmp_path / "notes.md"
    markdown.write_text("# Notes\n\n- one\n- two\n" * 50)
    records = list(iter_records(markdown.read_text()))
    assert len(records) == 1 and records[0].error is not None
    assert records[0].error.startswith("line 1: not JSON: expected JSON or JSON lines")


def test_one_line_of_a_log_posted_alone_is_told_to_send_the_whole_log(  # type: ignore[no-untyped-def]
    expert, client_for
) -> None:
    lines = (LOGS / "claude-code" / "stream_json_ls.jsonl").read_text().splitlines()
    client = client_for(expert)
    response = client.post(URL, json.loads(lines[1]), format="json")
    assert response.status_code == 400
    assert "one event of a Claude Code log" in json.dumps(response.json())
    # The whole log as a JSON array is one trajectory, as the file is.
    response = client.post(URL, [json.loads(line) for line in lines], format="json")
    assert response.status_code == 201, response.json()
    assert response.json()["source_format"] == "claude-code"


def test_the_api_returns_warnings_per_record(expert, client_for) -> None:  # type: ignore[no-untyped-def]
    record = json.loads((LOGS / "openhands-v0" / "resolver_output.jsonl").read_text())
    response = client_for(expert).post(URL, {"trajectories": [record]}, format="json")
    assert response.status_code == 200
    [result] = response.json()["results"]
    assert result["status"] == "imported"
    assert result["warnings"] == [
        "step 1: actions not understood: 'execute_ipython_cell' runs code that the shell "
        "analyzer does not read"
    ]


def test_the_scan_uses_the_agents_workspace_and_names_unread_actions(
    capsys: pytest.CaptureFixture[str],
) -> None:
    run_import(LOGS / "harbor-atif" / "tool_calls_object_content.synthetic.trajectory.json", capsys)
    run_import(LOGS / "openhands-v0" / "resolver_output.jsonl", capsys)
    parser = Trajectory.objects.get(source_format="atif")
    services.trajectory_scan(trajectory_id=parser.pk)
    # `rm -rf build` inside /workspace/parser is ordinary work, not a deletion outside the
    # workspace (the default roots would have made it one).
    assert not Flag.objects.filter(trajectory=parser).exists()
    resolver = Trajectory.objects.get(source_format="openhands")
    services.trajectory_scan(trajectory_id=resolver.pk)
    flags = Flag.objects.filter(trajectory=resolver, rule_id="import.actions-not-understood")
    assert [(f.step.index, f.severity, f.action) for f in flags] == [(1, "medium", "review")]
    assert flags[0].command.startswith("execute_ipython_cell ")


def test_the_api_takes_the_files_name_as_its_source(expert, client_for) -> None:  # type: ignore[no-untyped-def]
    name = "cd94562403b9487ebdd4018e3f531dfd.events.jsonl"
    lines = (LOGS / "openhands-v1" / name).read_text().splitlines()
    events = [json.loads(line) for line in lines]
    client = client_for(expert)
    response = client.post(f"{URL}?source={name}", events, format="json")
    assert response.status_code == 201, response.json()
    assert response.json()["external_id"] == "cd94562403b9487ebdd4018e3f531dfd"
    stored = Trajectory.objects.get(external_id="cd94562403b9487ebdd4018e3f531dfd")
    assert stored.metadata["id_from"] == "file name"
    response = client.post(f"{URL}?source={'x' * 1001}", events, format="json")
    assert response.status_code == 400 and "source" in response.json()["errors"]
    response = client.post(f"{URL}?source=a%00b", events, format="json")
    assert response.status_code == 400 and "source" in response.json()["errors"]
