"""Logs the agents wrote themselves, run against a scripted model (scripts/agent_log_runs/):
what each edit wrote, results paired with their calls, reasoning and the run's own record.

test_agent_logs.py checks these files command for command with every other fixture; here are
the details only a run of the real agent shows (see each folder's SOURCE.md).
"""

from __future__ import annotations

import json

from test_agent_logs import (
    DEMO,
    DEMO_CONVERSATION,
    DEMO_ROLLOUT,
    DEMO_SESSION,
    LOGS,
    imported,
)

from annotations.importers import UNREAD_KEY, convert_record, iter_records
from core.canonical import extract_steps
from safety.analyzer import Analyzer, AnalyzerConfig, load_default_policy

OLD = "    return ordered[middle]\n"
NEW = (
    "    if len(ordered) % 2 == 0:\n"
    "        return (ordered[middle - 1] + ordered[middle]) / 2\n"
    "    return ordered[middle]\n"
)
NEW_TEST = "from calc.stats import median\n\n\ndef test_median_of_two():\n"
NEW_TEST += "    assert median([1, 2]) == 1.5\n"
TASK = "The median of an even-length list is wrong; fix it and add a test."
FINAL = "Fixed `median` for even-length lists, added a regression test and bumped the version."
FILES = [
    f"codex/{DEMO_ROLLOUT}",
    "codex/exec_json_demo_repo.jsonl",
    f"claude-code/{DEMO_SESSION}.jsonl",
    "claude-code/stream_json_demo_repo.jsonl",
    "mini-swe-agent/demo-repo.traj.json",
    f"openhands-v1/{DEMO_CONVERSATION}.events.jsonl",
]


def calls(canonical: dict) -> list[tuple[str, dict]]:
    """(tool name, arguments) of every call, in order."""
    return [
        (call["function"]["name"], json.loads(call["function"]["arguments"]))
        for step in extract_steps(canonical)
        for call in step.tool_calls
    ]


def results(canonical: dict) -> dict[str, str]:
    return {
        result["tool_call_id"]: result["content"]
        for step in extract_steps(canonical)
        for result in step.tool_results
    }


def test_codex_patches_parallel_calls_and_exit_codes() -> None:
    [(_, canonical)] = imported(f"codex/{DEMO_ROLLOUT}")
    steps = extract_steps(canonical)
    assert canonical["metadata"]["agent_version"] == "0.169.0"
    assert canonical["metadata"]["model_provider"] == "scripted"
    assert steps[0].reasoning == "Look at the repository layout first."
    assert [c["function"]["name"] for c in steps[0].tool_calls] == ["exec_command"] * 2
    first = [c["id"] for c in steps[0].tool_calls]
    assert [r["tool_call_id"] for r in steps[0].tool_results] == first
    patches = [args["input"] for name, args in calls(canonical) if name == "apply_patch"]
    assert patches == [
        "*** Begin Patch\n*** Update File: calc/stats.py\n@@ def median(values):\n"
        "     middle = len(ordered) // 2\n-    return ordered[middle]\n"
        + "".join(f"+{line}\n" for line in NEW.splitlines())
        + "*** End Patch",
        "*** Begin Patch\n*** Add File: tests/test_median_pairs.py\n"
        + "".join(f"+{line}\n" for line in NEW_TEST.splitlines())
        + "*** End Patch",
    ]
    outputs = [results(canonical)[c["id"]] for s in steps for c in s.tool_calls]
    assert "Process exited with code 1" in outputs[3]  # the failing test run
    assert "Success. Updated the following files:\nM calc/stats.py" in outputs[5]
    assert "4 passed" in outputs[-1]
    assert canonical["messages"][-1] == {"role": "assistant", "content": FINAL}


def test_codex_exec_json_commands_are_the_scripts_inside_the_shell_lines_codex_ran() -> None:
    [(_, stream)] = imported("codex/exec_json_demo_repo.jsonl")
    [(_, rollout)] = imported(f"codex/{DEMO_ROLLOUT}")
    shell = [args for name, args in calls(stream) if name == "shell"]
    assert shell[0] == {"command": "ls -la", "argv": ["/bin/bash", "-lc", "ls -la"]}
    assert [a["command"] for a in shell] == [
        json.loads(c["function"]["arguments"])["cmd"]
        for s in extract_steps(rollout)
        for c in s.tool_calls
        if c["function"]["name"] == "exec_command"
    ]
    test_run = next(s.tool_calls[0]["id"] for s in extract_steps(stream)[3:4])
    assert results(stream)[test_run].startswith("Exit code: 1\n..F")
    assert stream["metadata"].get("workspace") is None  # the stream names no directory


def exec_stream(command: str) -> list[dict]:
    item = {"id": "item_1", "type": "command_execution", "command": command,
            "aggregated_output": "", "exit_code": 0, "status": "completed"}  # fmt: skip
    return [
        {"type": "thread.started", "thread_id": "t-1"},
        {"type": "item.completed", "item": item},
    ]


def test_codex_exec_json_line_that_is_no_quoted_shell_argv_is_kept_as_it_is() -> None:
    for line in ("/bin/bash -lc 'echo unbalanced", "pytest -q tests", "/bin/bash -x 'a'"):
        _, canonical = convert_record(exec_stream(line))
        [(name, args)] = calls(canonical)
        assert (name, args) == ("shell", {"command": line})
    _, canonical = convert_record(
        exec_stream("bash -c 'apply_patch <<'\"'\"'EOF'\"'\"'\n*** x\nEOF'")
    )
    [(name, _)] = calls(canonical)
    assert name == "apply_patch"  # the patch tool reached through the shell: a file edit


def test_claude_code_session_and_stream_hold_the_same_edits_and_results() -> None:
    [(_, session)] = imported(f"claude-code/{DEMO_SESSION}.jsonl")
    [(_, stream)] = imported("claude-code/stream_json_demo_repo.jsonl")
    for canonical in (session, stream):
        edits = [(n, a) for n, a in calls(canonical) if n in {"Edit", "Write"}]
        assert edits == [
            (
                "Edit",
                {"replace_all": False, "file_path": f"{DEMO}/calc/stats.py",
                 "old_string": OLD, "new_string": NEW},
            ),
            ("Write", {"file_path": f"{DEMO}/tests/test_median_pairs.py", "content": NEW_TEST}),
        ]  # fmt: skip
        steps = extract_steps(canonical)
        assert steps[0].reasoning == "Look at the repository layout first."
        assert [c["function"]["name"] for c in steps[0].tool_calls] == ["Bash", "Bash"]
        paired = results(canonical)
        assert all(c["id"] in paired for s in steps for c in s.tool_calls)
        test_run = next(
            c["id"]
            for s in steps
            for c in s.tool_calls
            if json.loads(c["function"]["arguments"]).get("command") == "python -m pytest -q"
        )
        assert paired[test_run].startswith("Error: Exit code 1\n")  # is_error: true
        assert canonical["messages"][-1]["content"] == FINAL
        assert canonical["metadata"]["agent_version"] == "2.1.197"
    assert stream["metadata"]["result"]["subtype"] == "success"
    assert stream["metadata"]["permission_mode"] == "bypassPermissions"
    # print mode's stream does not echo the prompt; after it, the two agree message for message.
    assert session["messages"][0] == {"role": "user", "content": TASK}
    assert session["messages"][1:] == stream["messages"]


def test_mini_swe_agent_text_mode_actions_submission_and_return_codes() -> None:
    [(_, canonical)] = imported("mini-swe-agent/demo-repo.traj.json")
    metadata = canonical["metadata"]
    assert metadata["agent_version"] == "2.4.6"
    assert metadata["exit_status"] == "Submitted"
    # Read from mini-swe-agent's own parse of each fence (``extra.actions``).
    assert {name for name, _ in calls(canonical)} == {"bash"}
    patch = canonical["patch"]
    assert "+    if len(ordered) % 2 == 0:\n" in patch
    assert "+++ b/tests/test_median_pairs.py" in patch
    assert '+__version__ = "0.1.1"' in patch
    paired = results(canonical)
    # The submitting call's output is the submission itself (the ``exit`` message): no result.
    contents = [paired.get(c["id"]) for s in extract_steps(canonical) for c in s.tool_calls]
    assert contents[-1] is None and None not in contents[:-1]
    assert contents[3].startswith("<returncode>1</returncode>")
    assert contents[8].startswith("<returncode>0</returncode>") and "4 passed" in contents[8]


def test_openhands_v1_editor_calls_keep_what_they_wrote() -> None:
    [(_, canonical)] = imported(f"openhands-v1/{DEMO_CONVERSATION}.events.jsonl")
    editor = [args for name, args in calls(canonical) if name == "file_editor"]
    assert editor == [
        {"command": "view", "path": f"{DEMO}/calc/stats.py"},
        {"command": "str_replace", "path": f"{DEMO}/calc/stats.py", "old_str": OLD,
         "new_str": NEW},
        {"command": "create", "path": f"{DEMO}/tests/test_median_pairs.py",
         "file_text": NEW_TEST},
    ]  # fmt: skip
    assert calls(canonical)[-1] == ("finish", {"message": FINAL})
    steps = extract_steps(canonical)
    assert steps[0].text == "Look at the repository first."
    paired = results(canonical)
    failing = paired[steps[3].tool_calls[0]["id"]]
    assert "FAILED tests/test_stats.py::test_median_even" in failing
    # The SDK flags no error for a non-zero exit; the exit code is in what the model read.
    assert failing.endswith(
        "1 failed, 2 passed in 0.21s\n[The command completed with exit code 1.]"
    )
    assert paired[steps[9].tool_calls[0]["id"]].endswith(
        "[The command completed with exit code 0.]"
    )


def test_openhands_v1_exit_code_without_a_suffix_is_added_in_the_sdks_words() -> None:
    lines = (LOGS / f"openhands-v1/{DEMO_CONVERSATION}.events.jsonl").read_text().splitlines()
    events = [json.loads(line) for line in lines]
    for event in events:
        if event["kind"] == "ObservationEvent" and "metadata" in event["observation"]:
            del event["observation"]["metadata"]["suffix"]
    [record] = [r.record for r in iter_records(json.dumps(events))]
    _, canonical = convert_record(record)
    contents = [m["content"] for m in canonical["messages"] if m["role"] == "tool"]
    assert contents[3].endswith("in 0.21s\n[Command finished with exit code 1]")
    assert contents[5].startswith("Here's the result of running `cat -n`")  # an editor: as is


def test_scripted_runs_read_every_action_and_raise_no_shell_finding() -> None:
    """An ordinary bug fix in the agent's own workspace: nothing unread, nothing flagged."""
    analyzer = Analyzer(load_default_policy(), AnalyzerConfig(workspace_roots=(DEMO,)))
    for relative in FILES:
        for _, canonical in imported(relative):
            assert canonical["metadata"].get("workspace", DEMO) == DEMO
            assert UNREAD_KEY not in canonical["metadata"], relative
            for step in extract_steps(canonical):
                for command in step.commands:
                    findings = analyzer.analyze(command.command).findings
                    assert [f.rule for f in findings] == [], (relative, command.command)
