"""Real (and, where none could be found, schema-built) agent logs of every scaffold, imported
command for command: every shell command and file edit, the workspace, the outcome and the patch.

Fixtures are under ``tests/fixtures/agent_logs/<scaffold>/``, each folder with a SOURCE.md (where
the files come from, at which commit, under which licence, what was trimmed) and the licence.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field

import pytest
from trajectory_fixtures import ROOT

from annotations.importers import (
    FORMATS,
    UNREAD_KEY,
    ImportFormatError,
    TrajectoryError,
    convert_record,
    iter_records,
)
from annotations.importers.base import is_patch, with_openhands_sandbox
from core.actions import file_effects
from core.canonical import extract_steps
from safety.analyzer import Analyzer, AnalyzerConfig, load_default_policy

LOGS = ROOT / "tests" / "fixtures" / "agent_logs"


@dataclass(frozen=True)
class Expected:
    """What one trajectory of a fixture holds."""

    fmt: str
    id: str | None
    # The commands in order; for a long run, their count and the SHA-256 of the commands
    # joined by "\n\0", computed from the producer's own record of them (not by this importer).
    commands: list[str] | tuple[int, str]
    edits: list[tuple[str, str]] = field(default_factory=list)
    workspace: str | list[str] | None = None
    outcome: dict = field(default_factory=dict)
    patch_starts: str | None = None
    unread: list[str] = field(default_factory=list)


SWE_FC_WS = "/SWE-agent__test-repo"
MARSH = "/marshmallow-code__marshmallow"
MINI_SED = (
    "sed -i 's/def division(a: float, b: float) -> float/def division(a: float, b: float) "
    "-> float:/' tests/missing_colon.py"
)
MINI_HEREDOC = (
    "cat > tests/missing_colon.py << 'EOF'\n#!/usr/bin/env python3\n\n\n"
    "def division(a: float, b: float) -> float:\n    if b == 0:\n"
    '        raise ValueError("Cannot divide by zero")\n    return a/b\n\n\n'
    'if __name__ == "__main__":\n    print(division(123, 15))\nEOF'
)
ASTROPY = "cd /testbed"
PONY = "/workspace/ponylang__ponyc__0.1"
# The checkout and the sandbox's workspace, where the agent also writes its scratch files.
PONY_ROOTS = [PONY, "/workspace"]
SONNET = "litellm_proxy__anthropic__claude-sonnet-4-20250514"
PONY_COMMANDS = [
    f"ls -l {PONY}",
    f"ls -l {PONY}/src",
    f"ls -l {PONY}/src/libponyc",
    f"ls -l {PONY}/src/libponyc/ast",
    f'grep -n "DECL(pattern);" {PONY}/src/libponyc/ast/parser.c',
    f'grep -n "DEF(pattern);" {PONY}/src/libponyc/ast/parser.c',
    'echo "int main() { return 0; }" > /workspace/test.c',
    'cd /workspace && echo "type CrashIt is (I32 | (I32, (I32))) actor Main new '
    "create(env: Env) => let x: CrashIt = 123 match x | (456, (let t1: I32)) => "
    'None end" > test.pony && ponyc test.pony -o . && ./test',
    f"cd {PONY} && make",
    "make clean && make",
    "cd /workspace && ./ponylang__ponyc__0.1/ponyc test.pony -o . && ./test",
    f"find {PONY} -name ponyc",
    f"cd /workspace && {PONY}/build/bin/ponyc test.pony -o . && ./test",
]
PONY_EDITS = [
    ("edit", f"{PONY}/src/libponyc/ast/parser.c"),
    ("edit", f"{PONY}/src/libponyc/ast/parser.c"),
]
SESSION = "00000000-0000-4000-8000-0000000c1a0d"
# Real runs of the agents themselves against a scripted model (scripts/agent_log_runs/): the
# same work in each agent's own tools, on the demo repository at /tmp/demo-repo.
DEMO = "/tmp/demo-repo"
DEMO_REPRO = (
    "cat > repro.py <<'EOF'\nfrom calc.stats import median\n\nprint(median([4, 1, 3, 2]))\n"
    "EOF\npython repro.py"
)
DEMO_SED = 'sed -i \'s/__version__ = "0.1.0"/__version__ = "0.1.1"/\' calc/__init__.py'
DEMO_COMMANDS = [
    "ls -la",
    "cat calc/stats.py",
    'grep -rn "median" --include=*.py .',
    "python -m pytest -q",
    DEMO_REPRO,
    DEMO_SED,
    "python -m pytest -q && rm repro.py",
]
DEMO_SESSION = "5618ea5e-84fc-4db4-80da-7bd0f684999e"
DEMO_ROLLOUT = "rollout-2026-11-28T06-51-18-01a220ec-2cc2-7733-8050-fbfa7b55b295.jsonl"
DEMO_THREAD = "01a220ec-2cc2-7733-8050-fbfa7b55b295"
DEMO_CONVERSATION = "8a2a879f07074703a67d80fdf3fccb51"
CURRY = "0ccf1a04-1b4c-43b6-8aa5-79e41db43a68"

EXPECTED: dict[str, list[Expected]] = {
    "swe-agent/function_calling_test_repo.traj": [
        Expected(
            "swe-agent",
            "SWE-agent__test-repo-i1",
            ["python3 /SWE-agent__test-repo/tests/missing_colon.py"],
            [("edit", f"{SWE_FC_WS}/tests/missing_colon.py")],
            workspace=SWE_FC_WS,
            patch_starts="diff --git a/tests/missing_colon.py b/tests/missing_colon.py",
        )
    ],
    "swe-agent/function_calling_simple_history_only.traj": [
        Expected(
            "swe-agent",
            None,
            ["python tests/missing_colon.py"],
            # The open file and the workspace come from the observations' footers.
            [("edit", f"{SWE_FC_WS}/tests/missing_colon.py")],
            workspace=SWE_FC_WS,
            patch_starts="diff --git a/tests/missing_colon.py b/tests/missing_colon.py",
        )
    ],
    "swe-agent/thought_action_marshmallow_1867.traj": [
        Expected(
            "swe-agent",
            None,
            ["python reproduce.py", "ls -F", "python reproduce.py", "rm reproduce.py"],
            [
                ("create", f"{MARSH}/reproduce.py"),
                ("edit", f"{MARSH}/reproduce.py"),
                ("edit", f"{MARSH}/src/marshmallow/fields.py"),
                ("edit", f"{MARSH}/src/marshmallow/fields.py"),
            ],
            workspace=MARSH,
            patch_starts="diff --git a/src/marshmallow/fields.py b/src/marshmallow/fields.py",
        )
    ],
    "mini-swe-agent/github_issue.traj.json": [
        Expected(
            "mini-swe-agent",
            "github_issue",  # a bare message list: the id is the file name
            [
                "cat /Users/fuchur/Documents/24/git_sync/swe-agent-test-repo/tests/"
                "./missing_colon.py",
                "ls -la",
                "ls -la tests/",
                "cat tests/missing_colon.py",
                MINI_SED,
                "cat tests/missing_colon.py",
                "python3 tests/missing_colon.py",
                'python3 -c "from tests.missing_colon import division; print(division(23, 0))"',
                MINI_HEREDOC,
                "git add -A && git diff --cached && echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT",
            ],
            patch_starts="diff --git a/tests/missing_colon.py b/tests/missing_colon.py",
        )
    ],
    "mini-swe-agent/astropy_12907_v2_tool_calls.traj.json": [
        Expected(
            "mini-swe-agent",
            "astropy__astropy-12907",
            [
                f'{ASTROPY} && find . -path "*/separable*" -type f | head -20',
                f"{ASTROPY} && cat astropy/modeling/separable.py",
                f"{ASTROPY} && sed -n '219,248p' astropy/modeling/separable.py",
                f"{ASTROPY} && sed -i 's/cright\\[-right.shape\\[0\\]:, "
                "-right.shape\\[1\\]:\\] = 1/cright[-right.shape[0]:, -right.shape[1]:] = right/' "
                "astropy/modeling/separable.py",
                f"{ASTROPY} && sed -n '219,248p' astropy/modeling/separable.py",
                f"{ASTROPY} && git diff astropy/modeling/separable.py",
                f"{ASTROPY} && git diff astropy/modeling/separable.py > patch.txt && cat patch.txt",
                f"{ASTROPY} && echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && cat patch.txt",
            ],
            workspace="/testbed",
            # A plain unified diff, with no ``diff --git`` line: still the agent's patch.
            patch_starts="--- a/astropy/modeling/separable.py\n+++ b/astropy/modeling/separable.py",
        )
    ],
    "mini-swe-agent/local.traj.json": [
        Expected(
            "mini-swe-agent",
            "local",
            ["echo 'hello world'", "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"],
        )
    ],
    "mini-swe-agent/v2_text_mode.synthetic.traj.json": [
        Expected(
            "mini-swe-agent",
            "example__app-1",
            [
                "grep -rn Helo src/",
                "sed -i 's/Helo/Hello/' src/app.py && rm -rf /testbed/build",
                "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && git diff",
            ],
            workspace="/testbed",
            patch_starts="diff --git a/src/app.py b/src/app.py",
        )
    ],
    # Text mode: every action, the edits too, is a ```mswea_bash_command block.
    "mini-swe-agent/demo-repo.traj.json": [
        Expected(
            "mini-swe-agent",
            "demo-repo",
            [
                *DEMO_COMMANDS[:5],
                "python - <<'EOF'\nfrom pathlib import Path\n\npath = Path('calc/stats.py')\n"
                "path.write_text(path.read_text().replace('    return ordered[middle]\\n', "
                "'    if len(ordered) % 2 == 0:\\n        return (ordered[middle - 1] + "
                "ordered[middle]) / 2\\n    return ordered[middle]\\n'))\nEOF",
                "cat > tests/test_median_pairs.py <<'EOF'\nfrom calc.stats import median\n\n\n"
                "def test_median_of_two():\n    assert median([1, 2]) == 1.5\nEOF",
                *DEMO_COMMANDS[5:],
                "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && git add -A && git diff --cached",
            ],
            workspace=DEMO,
            patch_starts="diff --git a/calc/__init__.py b/calc/__init__.py",
        )
    ],
    "openhands-v0/resolver_output.jsonl": [
        Expected(
            "openhands",
            "neubig/pr-viewer#5",
            ["touch LICENSE", "cat LICENSE"],
            workspace="/workspace",
            outcome={"success": True},
            patch_starts="diff --git a/LICENSE b/LICENSE\r\nnew file mode 100644",
            # It wrote LICENSE from Python: code the shell analyzer cannot read, so it is named.
            unread=["'execute_ipython_cell' runs code that the shell analyzer does not read"],
        )
    ],
    "openhands-v0/runtime_basic.json": [
        # Only an editor call: the workspace comes from the paths it names.
        Expected("openhands", None, [], [("create", "/workspace/game_2048.py")], "/workspace")
    ],
    "openhands-v0/runtime_basic_gui_mode.json": [
        Expected(
            "openhands",
            None,
            [
                "mkdir -p /workspace/todo-app",
                "cd /workspace/todo-app && python3 -m http.server 8000",
            ],
            [
                ("create", "/workspace/todo-app/index.html"),
                ("create", "/workspace/todo-app/app.js"),
            ],
            workspace="/workspace",
        )
    ],
    "openhands-v0/runtime_wrong_initial_state.json": [
        # Two editor ``view`` calls (no effect) around the one command.
        Expected(
            "openhands",
            None,
            ["mv /workspace/game_2048.py /workspace/2048.py"],
            workspace="/workspace",
        )
    ],
    "openhands-v0/multi_swe_bench_ponyc_4595.jsonl": [
        Expected(
            "openhands",
            "ponylang__ponyc-4595",
            PONY_COMMANDS,
            PONY_EDITS,
            workspace=PONY_ROOTS,
            # Multi-SWE-bench's harness had not judged the run: the file holds no outcome.
            patch_starts="diff --git a/src/libponyc/ast/parser.c b/src/libponyc/ast/parser.c",
        )
    ],
    "openhands-v1/38868567ae624dcba5678b534b99575c.events.jsonl": [
        Expected("openhands-v1", "38868567ae624dcba5678b534b99575c", [])
    ],
    "openhands-v1/cd94562403b9487ebdd4018e3f531dfd.events.jsonl": [
        Expected(
            "openhands-v1",
            "cd94562403b9487ebdd4018e3f531dfd",  # from the file name
            ["pwd > tool_output.txt"],
            workspace="/workspace/project/software-agent-sdk",
        )
    ],
    f"openhands-v1/{DEMO_CONVERSATION}.events.jsonl": [
        Expected(
            "openhands-v1",
            DEMO_CONVERSATION,
            [f"cd {DEMO} && ls -la", *DEMO_COMMANDS[1:]],
            # The view before the edit reads; it is no file effect.
            [("edit", f"{DEMO}/calc/stats.py"), ("create", f"{DEMO}/tests/test_median_pairs.py")],
            workspace=DEMO,
        )
    ],
    "claude-code/sidechain_integrated.jsonl": [
        Expected(
            "claude-code",
            "88a8d761-7b9a-4bf1-a8ca-c1febe6bf358",
            [],
            workspace="e:\\Workspace\\src\\github\\claude-code-log",
        ),
        Expected(
            "claude-code",
            "88a8d761-7b9a-4bf1-a8ca-c1febe6bf358/e1c84ba5",
            [],
            workspace="e:\\Workspace\\src\\github\\claude-code-log",
        ),
    ],
    "claude-code/stream_json_ls.jsonl": [
        Expected(
            "claude-code",
            "40e7b02d-c0f9-4876-9010-f514d4eb0603",
            ["ls -la"],
            workspace="/home/cyou/claude-agent-sdk-gleam",
        )
    ],
    f"claude-code/{CURRY}.jsonl": [
        # Five ``Task`` sub-agents, ``TaskOutput``, then one ``Bash`` call.
        Expected(
            "claude-code",
            CURRY,
            [
                "python3 /Users/pete/.claude/plugins/cache/session-share-marketplace/"
                f"session-share/0.1.7/commands/publish/scripts/publish_session.py {CURRY}"
            ],
            workspace="/Users/pete/tmp/claude-code-sessions",
        )
    ],
    "claude-code/agent-a5bdbc1.jsonl": [
        # One of its sub-agents' own file: a ``WebSearch`` call.
        Expected(
            "claude-code", f"{CURRY}/a5bdbc1", [], workspace="/Users/pete/tmp/claude-code-sessions"
        )
    ],
    "claude-code/edits_and_task.synthetic.jsonl": [
        Expected(
            "claude-code",
            SESSION,
            ["grep -rn 'def total' shop/"],
            [
                ("edit", "/home/dev/shop/shop/cart.py"),
                ("write", "/home/dev/shop/tests/test_rounding.py"),
                ("edit", "/home/dev/shop/shop/cart.py"),
            ],
            workspace="/home/dev/shop",
        )
    ],
    "claude-code/agent-a7f3c21.synthetic.jsonl": [
        Expected(
            "claude-code",
            f"{SESSION}/a7f3c21",
            ["cd /home/dev/shop && python -m pytest -q"],
            workspace="/home/dev/shop",
        )
    ],
    "codex/rollout-homelab-migration.jsonl": [
        Expected(
            "codex",
            "019b64e5-57fa-7463-b644-fba7e456f905",
            [],
            workspace="/Users/macmini/Code/homelab-migration",
        )
    ],
    "codex/rollout-synthetic-tools.jsonl": [
        Expected(
            "codex",
            "00000000-0000-4000-8000-00000000c0de",
            [
                "rg -n TIMEOUT src",
                "git status --short",
                "python -m pytest -q tests/test_config.py",
                "PYTHONPATH=src python -m pytest -q tests/test_config.py",
                "git diff --stat",
            ],
            [("edit", "src/app/config.py"), ("create", "tests/test_config.py")],
            workspace="/workspace/app",
        )
    ],
    f"claude-code/{DEMO_SESSION}.jsonl": [
        Expected(
            "claude-code",
            DEMO_SESSION,
            DEMO_COMMANDS,
            [("edit", f"{DEMO}/calc/stats.py"), ("write", f"{DEMO}/tests/test_median_pairs.py")],
            workspace=DEMO,
        )
    ],
    # The same run's ``claude -p --output-format stream-json --verbose`` output.
    "claude-code/stream_json_demo_repo.jsonl": [
        Expected(
            "claude-code",
            DEMO_SESSION,
            DEMO_COMMANDS,
            [("edit", f"{DEMO}/calc/stats.py"), ("write", f"{DEMO}/tests/test_median_pairs.py")],
            workspace=DEMO,
        )
    ],
    f"codex/{DEMO_ROLLOUT}": [
        Expected(
            "codex",
            DEMO_THREAD,
            DEMO_COMMANDS,
            # apply_patch names paths relative to the workspace.
            [("edit", "calc/stats.py"), ("create", "tests/test_median_pairs.py")],
            workspace=DEMO,
        )
    ],
    # The same run's ``codex exec --json`` output: each command as the shell line Codex ran
    # (``/bin/bash -lc '...'``), the files each patch changed; no working directory.
    "codex/exec_json_demo_repo.jsonl": [
        Expected(
            "codex",
            DEMO_THREAD,
            DEMO_COMMANDS,
            [("edit", f"{DEMO}/calc/stats.py"), ("create", f"{DEMO}/tests/test_median_pairs.py")],
        )
    ],
    "harbor-atif/terminus2_raw_content.synthetic.trajectory.json": [
        Expected(
            "atif",
            "00000000-0000-4000-8000-0000000a7f01",
            ["echo 'Hello, world!' > /app/hello.txt", "cat /app/hello.txt"],
            workspace="/app",
        )
    ],
    "harbor-atif/tool_calls_object_content.synthetic.trajectory.json": [
        Expected(
            "atif",
            "00000000-0000-4000-8000-0000000a7f02",
            [
                "cd /workspace/parser && python -m pytest -q tests/test_parse.py",
                "rm -rf build && python -m pytest -q",
            ],
            [("edit", "/workspace/parser/src/parse.py")],
            workspace=["/workspace/parser", "/workspace"],  # an OpenHands run
        )
    ],
    # Real runs written as ATIF by Harbor's own converters (see SOURCE.md).
    "harbor-atif/openhands_ponyc_4595.trajectory.json": [
        # The same run as openhands-v0/multi_swe_bench_ponyc_4595.jsonl: the same actions.
        Expected("atif", "ponylang__ponyc-4595", PONY_COMMANDS, PONY_EDITS, workspace=PONY_ROOTS)
    ],
    "harbor-atif/mini_swe_agent_astropy_12907.trajectory.json": [
        Expected(
            "atif",
            "astropy__astropy-12907",
            # The 64 commands mini-swe-agent's own ``extra.actions`` record for this run.
            (64, "b39f1227cd58b5c3f167649b9bf2d3eeb30145fc0c8620fe40d5abdea7ec0a4c"),
            workspace="/testbed",  # named in the task's text
        )
    ],
    "litellm/standard_logging_payload.json": [
        Expected("litellm", "chatcmpl-2299b6a2-82a3-465a-b47c-04e685a2227f", [])
    ],
    # OpenHands' own LLM completion logs (litellm proxy): one file per call, the request's
    # messages and the model's response, which is the call's newest action.
    f"litellm/{SONNET}-1757015025.972.json": [
        Expected(
            "litellm",
            "chatcmpl-74b71e01-2a61-4926-beed-1cb3c2d7f486",
            [],
            [("create", "/workspace/hello.py")],  # only in the response
        )
    ],
    f"litellm/{SONNET}-1757015046.707.json": [
        Expected(
            "litellm",
            "chatcmpl-86295094-c048-42b1-be96-07eba2fad951",
            ["pwd && ls -la", "python hello.py"],
            [("create", "/workspace/hello.py")],
        )
    ],
    "litellm/litellm_proxy__deepseek__deepseek-chat-1757015076.651.json": [
        # Non-function-calling: the earlier turns' actions are <function=...> text.
        Expected(
            "litellm",
            "819ebc5d-01ff-4a72-8b8d-96ff18473de5",
            ["pwd && ls -la", "python hello.py"],
        )
    ],
    "litellm/agent_calls.synthetic.jsonl": [
        Expected("litellm", "chatcmpl-synthetic-1", ["make test 2>&1 | tail -5"]),
        Expected(
            "litellm",
            "chatcmpl-synthetic-2",
            ["make test 2>&1 | tail -5", "cat app/__init__.py", "grep -rn 'def parse' app/"],
        ),
    ],
    "aider/chat-history.md": [
        Expected("aider", None, []),
        Expected("aider", "aider 2024-08-05 19:33:32", [], [("edit", "aider/utils.py")]),
        Expected("aider", "aider 2024-08-05 20:39:59", []),
    ],
}


def fixture_files() -> list[str]:
    return sorted(
        str(path.relative_to(LOGS))
        for path in LOGS.glob("*/*")
        if not path.name.startswith(("LICENSE", "SOURCE"))
    )


def imported(relative: str) -> list[tuple[str, dict]]:
    """As ``import_trajectories`` reads a file: with its path as the records' source."""
    path = LOGS / relative
    records = list(iter_records(path.read_text(encoding="utf-8")))
    assert [r.error for r in records if r.error] == []
    return [convert_record(r.record, source=str(path)) for r in records]


def test_every_fixture_has_expectations_a_source_note_and_a_licence() -> None:
    assert fixture_files() == sorted(EXPECTED)
    for folder in {relative.split("/")[0] for relative in EXPECTED}:
        source = (LOGS / folder / "SOURCE.md").read_text(encoding="utf-8")
        real = [f for f in EXPECTED if f.startswith(f"{folder}/") and "synthetic" not in f]
        for relative in EXPECTED:
            if relative.startswith(f"{folder}/"):
                assert relative.split("/")[1] in source, relative
        if real:
            assert list((LOGS / folder).glob("LICENSE*")), folder
            assert "Commit" in source or "commit" in source, folder


def test_every_format_is_covered_by_a_real_or_schema_built_log() -> None:
    covered = {e.fmt for expected in EXPECTED.values() for e in expected}
    assert covered == set(FORMATS) - {"openai", "anthropic"}  # those two are C1 and its twin


@pytest.mark.parametrize("relative", sorted(EXPECTED))
def test_log_imports_command_for_command(relative: str) -> None:
    results = imported(relative)
    assert len(results) == len(EXPECTED[relative])
    for (fmt, canonical), expected in zip(results, EXPECTED[relative], strict=True):
        steps = extract_steps(canonical)
        metadata = canonical["metadata"]
        assert fmt == expected.fmt
        assert canonical["id"] == expected.id
        commands = [c.command for s in steps for c in s.commands]
        if isinstance(expected.commands, tuple):
            digest = hashlib.sha256("\n\0".join(commands).encode()).hexdigest()
            assert (len(commands), digest) == expected.commands
        else:
            assert commands == expected.commands
        edits = [
            (effect.kind, effect.path)
            for step in steps
            for call in step.tool_calls
            for effect in file_effects(call)
        ]
        assert edits == expected.edits
        assert metadata.get("workspace") == expected.workspace
        assert canonical["outcome"] == expected.outcome
        if expected.patch_starts is None:
            assert "patch" not in canonical
        else:
            assert canonical["patch"].startswith(expected.patch_starts)
        unread = [item["reason"] for item in metadata.get(UNREAD_KEY, [])]
        assert unread == expected.unread


def test_swe_agent_own_commands_are_file_and_control_calls_and_raise_no_shell_finding() -> None:
    analyzer = Analyzer(load_default_policy(), AnalyzerConfig(workspace_roots=(MARSH,)))
    [(_, canonical)] = imported("swe-agent/thought_action_marshmallow_1867.traj")
    steps = extract_steps(canonical)
    names = [call["function"]["name"] for step in steps for call in step.tool_calls]
    assert names == [
        "create", "edit", "bash", "bash", "find_file", "open", "edit", "edit", "bash", "bash",
        "submit",
    ]  # fmt: skip
    for step in steps:
        for command in step.commands:
            assert [f.rule for f in analyzer.analyze(command.command).findings] == []
    edit = steps[1].tool_calls[0]["function"]["arguments"]
    assert '"start_line": 1' in edit and '"end_line": 1' in edit and "end_of_edit" not in edit


def test_claude_code_turns_keep_reasoning_parallel_calls_and_paired_results() -> None:
    [(_, canonical)] = imported("claude-code/edits_and_task.synthetic.jsonl")
    steps = extract_steps(canonical)
    assert steps[0].reasoning == "Look at how totals are computed first."
    assert [c["function"]["name"] for c in steps[0].tool_calls] == ["Bash", "Read"]
    assert [r["tool_call_id"] for r in steps[0].tool_results] == ["toolu_1", "toolu_2"]
    assert canonical["metadata"]["summaries"] == ["Fix cart total rounding"]
    [(_, main), (_, side)] = imported("claude-code/sidechain_integrated.jsonl")
    assert "parent_session" not in main["metadata"]
    assert side["metadata"]["parent_session"] == main["id"]
    assert side["metadata"]["agent_id"] == "e1c84ba5"
    [(_, parent)] = imported(f"claude-code/{CURRY}.jsonl")
    [(_, child)] = imported("claude-code/agent-a5bdbc1.jsonl")
    assert child["metadata"]["parent_session"] == parent["id"] == CURRY
    names = [c["function"]["name"] for s in extract_steps(parent) for c in s.tool_calls]
    assert names == ["Task", "Task", "Task", "TaskOutput", "Task", "Task", "Bash"]
    [(_, stream)] = imported("claude-code/stream_json_ls.jsonl")
    assert stream["metadata"]["result"]["subtype"] == "success"
    assert stream["metadata"]["agent_version"] == "2.1.3"


def test_codex_reasoning_argv_and_exit_codes() -> None:
    [(_, canonical)] = imported("codex/rollout-synthetic-tools.jsonl")
    steps = extract_steps(canonical)
    assert steps[0].reasoning == "**Finding the timeout setting**"
    assert steps[0].text == "Let me find where the timeout is set."
    first = steps[0].tool_calls[0]["function"]["arguments"]
    assert '"argv": ["bash", "-lc", "rg -n TIMEOUT src"]' in first
    failed = next(r for s in steps for r in s.tool_results if r["tool_call_id"] == "call_d")
    assert failed["content"].startswith("Exit code: 1\n")
    assert canonical["metadata"]["model"] == "gpt-5-codex"


def test_litellm_keeps_the_final_turn_and_atif_keeps_object_content() -> None:
    [(_, payload)] = imported("litellm/standard_logging_payload.json")
    assert payload["messages"][-1] == {"role": "assistant", "content": "hi"}
    [(_, atif)] = imported("harbor-atif/tool_calls_object_content.synthetic.trajectory.json")
    contents = [m["content"] for m in atif["messages"] if m["role"] == "tool"]
    assert contents[0] == '{"exit_code": 1, "stdout": "1 failed, 3 passed"}'


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n", True),
        ("--- a/x.py\n+++ b/x.py\n@@ -1 +1 @@\n-a\n+b\n", True),
        ("Submitted.\n--- a/x.py\n+++ b/x.py\n@@ -3,2 +3,2 @@\n", True),
        ("--- a/x.py\n+++ b/x.py\n", False),  # headers without a hunk
        ("--- section ---\nsome text\n@@ not a hunk", False),
        ("COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT\n", False),
        (None, False),
    ],
)
def test_a_submission_is_a_patch_with_or_without_a_git_header(text: object, expected: bool) -> None:
    assert is_patch(text) is expected


def test_an_id_the_content_lacks_comes_from_the_file_name_and_says_so() -> None:
    [(_, bare)] = imported("mini-swe-agent/github_issue.traj.json")
    assert (bare["id"], bare["metadata"]["id_from"]) == ("github_issue", "file name")
    [(_, v1)] = imported("openhands-v1/cd94562403b9487ebdd4018e3f531dfd.events.jsonl")
    assert v1["metadata"]["id_from"] == "file name"
    # The id the file holds wins over its name.
    [(_, full)] = imported("mini-swe-agent/astropy_12907_v2_tool_calls.traj.json")
    assert full["id"] == "astropy__astropy-12907" and "id_from" not in full["metadata"]
    events = (LOGS / "openhands-v1/cd94562403b9487ebdd4018e3f531dfd.events.jsonl").read_text()
    [record] = [r.record for r in iter_records(events)]
    stored_as = "/data/conversations/0f3c9a/events/events.jsonl"
    _, by_folder = convert_record(record, source=stored_as)
    assert (by_folder["id"], by_folder["metadata"]["id_from"]) == ("0f3c9a", "directory name")
    _, unnamed = convert_record(record, source="/data/runs/events.jsonl")
    assert unnamed["id"] == "runs"  # a file of events is its folder's conversation
    bare_list = (LOGS / "mini-swe-agent/local.traj.json").read_text()
    [record] = [r.record for r in iter_records(bare_list)]
    for generic in ("/home/u/runs/last_mini_run.traj.json", "trajectory.json"):
        _, nameless = convert_record(record, source=generic)
        assert nameless.get("id") is None and "id_from" not in nameless["metadata"]
    _, batch = convert_record(
        record, source="/out/django__django-11099/django__django-11099.traj.json"
    )
    assert batch["id"] == "django__django-11099"


AIDER_SESSION = """# aider chat started at 2024-08-05 19:33:32

> /opt/aider/bin/aider app.py
> Aider v0.47.2-dev
> Git repo: {git} with 12 files
> Added app.py to the chat.

#### fix the typo in app.py

app.py
```python
<<<<<<< SEARCH
print("helo")
=======
print("hello")
>>>>>>> REPLACE
```

> Applied edit to app.py
"""


def test_aider_workspace_is_the_git_root_it_names_or_the_folder_of_its_history_file() -> None:
    named = AIDER_SESSION.format(git="/home/dev/my shop/.git")
    _, canonical = convert_record(named)
    assert canonical["metadata"]["workspace"] == "/home/dev/my shop"
    assert canonical["metadata"]["workspace_from"] == "the git repository aider names"
    steps = extract_steps(canonical)
    edits = [(e.kind, e.path) for s in steps for c in s.tool_calls for e in file_effects(c)]
    assert edits == [("edit", "app.py")]
    relative = AIDER_SESSION.format(git=".git")
    _, unknown = convert_record(relative, source="notes/chat.md")
    assert "workspace" not in unknown["metadata"]
    _, by_file = convert_record(relative, source="/home/dev/shop/.aider.chat.history.md")
    assert by_file["metadata"]["workspace"] == "/home/dev/shop"
    assert by_file["metadata"]["workspace_from"].startswith("the chat history's folder")
    _, windows = convert_record(relative, source="C:\\Users\\dev\\shop\\.aider.chat.history.md")
    assert windows["metadata"]["workspace"] == "C:/Users/dev/shop"
    # What the content names wins over the file's place.
    _, both = convert_record(named, source="/elsewhere/.aider.chat.history.md")
    assert both["metadata"]["workspace"] == "/home/dev/my shop"


def terminus_step(step_id: int, message: str, calls: list | None = None, out: str = "") -> dict:
    step: dict = {"step_id": step_id, "source": "agent", "message": message}
    if calls is not None:
        step["tool_calls"] = calls
    step["observation"] = {"results": [{"content": out}]}
    return step


def test_atif_reply_the_harness_recorded_without_calls_ran_nothing() -> None:
    """Harbor records what Terminus ran as ``tool_calls``; a reply it rejected keeps its JSON in
    the message, with no call, and ran nothing (the shape of Harbor's invalid-JSON golden test)."""
    reply = '{"commands": [{"keystrokes": "rm -rf /app/data\\n", "duration": 0.1}]} Done!'
    keys = {"keystrokes": "ls /app\n", "duration": 0.1}
    record = {
        "schema_version": "ATIF-v1.5",
        "session_id": "terminus-rejected",
        "agent": {"name": "terminus-2", "version": "2.0.0"},
        "steps": [
            {"step_id": 1, "source": "user", "message": "List /app."},
            terminus_step(2, reply, out="Previous response had parsing errors: ..."),
            terminus_step(
                3,
                "Analysis: fixed. Plan: list.",
                [{"tool_call_id": "call_1", "function_name": "bash_command", "arguments": keys}],
                "data\n",
            ),
        ],
    }
    _, canonical = convert_record(record)
    assert [c.command for s in extract_steps(canonical) for c in s.commands] == ["ls /app"]
    assert canonical["metadata"]["actions_not_run"] == [
        {
            "message_index": 1,
            "reason": "the harness recorded no tool call for this reply: nothing ran",
        }
    ]
    assert UNREAD_KEY not in canonical["metadata"]
    # The same reply from an agent whose actions are its messages (raw content) did run.
    record["steps"] = record["steps"][:2]
    _, raw = convert_record(record)
    assert [c.command for s in extract_steps(raw) for c in s.commands] == ["rm -rf /app/data"]


def test_swe_agent_final_step_outside_the_history_is_imported() -> None:
    """SWE-agent saves as ``history`` the last query sent to the model: the final response
    (here ``submit``) is only in the trajectory, and is imported from there."""
    [(_, canonical)] = imported("swe-agent/function_calling_test_repo.traj")
    steps = extract_steps(canonical)
    names = [call["function"]["name"] for step in steps for call in step.tool_calls]
    assert names == ["find_file", "open", "edit", "bash", "submit"]


def swe_turn(action: str, call: dict | None = None) -> dict:
    turn: dict = {"role": "assistant", "content": "", "thought": "", "action": action}
    turn["message_type"] = "action"
    if call is not None:
        turn["tool_calls"] = [call]
    return turn


def swe_observation(text: str, open_file: str, directory: str = "/repo") -> dict:
    footer = f"\n(Open file: {open_file})\n(Current directory: {directory})\nbash-$"
    return {"role": "user", "message_type": "observation", "content": text + footer}


def test_swe_agent_history_only_file_takes_the_open_file_from_observation_footers() -> None:
    edit = {
        "id": "call_e",
        "type": "function",
        "function": {"name": "edit", "arguments": '{"search": "helo", "replace": "hello"}'},
    }
    opened = {"id": "call_o", "type": "function", "function": {"name": "open", "arguments": "{}"}}
    record = {
        "history": [
            {"role": "system", "content": "You are SWE-agent."},
            {"role": "user", "content": "Fix the greeting."},
            swe_turn('open "app/greet.py"', opened),
            {"role": "tool", "tool_call_ids": ["call_o"], "content": "[File: app/greet.py]\n"
             "(Open file: /repo/app/greet.py)\n(Current directory: /repo)\nbash-$"},
            swe_turn("edit 'helo' 'hello'", edit),
            {"role": "tool", "tool_call_ids": ["call_e"], "content": "Text replaced."},
        ]
    }  # fmt: skip
    _, canonical = convert_record(record)
    steps = extract_steps(canonical)
    edits = [(e.kind, e.path) for s in steps for c in s.tool_calls for e in file_effects(c)]
    assert edits == [("edit", "/repo/app/greet.py")]
    assert canonical["metadata"]["workspace"] == "/repo"
    assert UNREAD_KEY not in canonical["metadata"]


def test_swe_agent_edit_rejected_by_its_linter_does_not_shift_the_states() -> None:
    """The history leaves out an edit SWE-agent's linter rejected; the trajectory keeps it.
    Each history action takes the state of the step that ran it, not of the n-th step."""
    steps = [
        {"action": "open a.py\n", "observation": "", "state": {"open_file": "/r/a.py"}},
        {"action": "edit 2:2\nx = 1\nend_of_edit\n", "observation": "Your proposed edit has "
         "introduced new syntax error(s).", "state": {"open_file": "/r/a.py"}},
        {"action": "open b.py\n", "observation": "", "state": {"open_file": "/r/b.py"}},
        {"action": "edit 1:1\ny = 2\nend_of_edit\n", "observation": "", "state": {
            "open_file": "/r/b.py", "working_dir": "/r"}},
        {"action": "submit\n", "observation": "", "state": {"open_file": "/r/b.py"}},
    ]  # fmt: skip
    history = [{"role": "user", "content": "Task."}]
    for step in (steps[0], steps[2], steps[3]):
        history += [swe_turn(step["action"]), swe_observation("ok", step["state"]["open_file"])]
    _, canonical = convert_record({"history": history, "trajectory": steps})
    calls = [c for s in extract_steps(canonical) for c in s.tool_calls]
    assert [c["function"]["name"] for c in calls] == ["open", "open", "edit", "submit"]
    edits = [(e.kind, e.path) for c in calls for e in file_effects(c)]
    assert edits == [("edit", "/r/b.py")]
    [left_out] = canonical["metadata"]["steps_left_out"]
    assert left_out["trajectory_step"] == 1 and left_out["action"].startswith("edit 2:2")


def test_claude_code_web_session_loglines_import_as_one_trajectory() -> None:
    """A Claude Code web session comes as ``{"loglines": [...]}``, its lines possibly stripped
    to type, timestamp and message; it was rejected as an unknown format."""
    edit = {"file_path": "/repo/app.py", "old_string": "helo", "new_string": "hello"}
    lines = [
        {"type": "user", "timestamp": "t0", "message": {"role": "user", "content": "Fix it."}},
        {
            "type": "assistant",
            "timestamp": "t1",
            "message": {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": "Looking."},
                    {"type": "tool_use", "id": "tu1", "name": "Bash", "input": {"command": "ls"}},
                    {"type": "tool_use", "id": "tu2", "name": "Edit", "input": edit},
                ],
            },
        },
        {
            "type": "user",
            "timestamp": "t2",
            "message": {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": "tu1", "content": "app.py"},
                    {"type": "tool_result", "tool_use_id": "tu2", "content": "updated"},
                ],
            },
        },
    ]
    records = list(iter_records(json.dumps({"loglines": lines})))
    assert [r.error for r in records] == [None]
    fmt, canonical = convert_record(records[0].record)
    steps = extract_steps(canonical)
    assert fmt == "claude-code"
    assert [c.command for s in steps for c in s.commands] == ["ls"]
    assert [(e.kind, e.path) for c in steps[0].tool_calls for e in file_effects(c)] == [
        ("edit", "/repo/app.py")
    ]
    assert [r["tool_call_id"] for r in steps[0].tool_results] == ["tu1", "tu2"]


def test_openhands_v1_events_of_kinds_the_importer_does_not_know_keep_the_log_readable() -> None:
    [(_, canonical)] = imported("openhands-v1/38868567ae624dcba5678b534b99575c.events.jsonl")
    roles = [m["role"] for m in canonical["messages"]]
    assert roles == ["system", "user", "assistant", "tool", "system", "user", "assistant", "tool"]
    events = [
        {"id": "e1", "source": "user", "kind": "MessageEvent",
         "llm_message": {"role": "user", "content": [{"type": "text", "text": "Clean up."}]}},
        {"id": "e2", "source": "agent", "kind": "FutureActionEvent", "tool_name": "terminal",
         "tool_call_id": "c1", "action": {"kind": "TerminalAction", "command": "rm -rf build"},
         "tool_call": {"id": "c1", "name": "terminal", "arguments": '{"command": "rm -rf build"}'}},
        {"id": "e3", "source": "environment", "kind": "MetricsSnapshotEvent", "cost": 0.1},
    ]  # fmt: skip
    _, canonical = convert_record(events)
    steps = extract_steps(canonical)
    assert [c.command for s in steps for c in s.commands] == ["rm -rf build"]
    assert canonical["metadata"]["events_skipped"] == {"MetricsSnapshotEvent": 1}


def test_claude_code_snapshot_lines_and_line_types_newer_than_the_importer_are_skipped() -> None:
    """Claude Code 2.x starts sessions with ``file-history-snapshot`` lines, which carry no
    session id; they (and a line type this importer does not know) made the whole file
    unreadable: "none of the lines is a trajectory"."""
    session = (LOGS / "claude-code/sidechain_integrated.jsonl").read_text(encoding="utf-8")
    snapshot = {
        "type": "file-history-snapshot",
        "messageId": "m-1",
        "snapshot": {"messageId": "m-1", "trackedFileBackups": {}, "timestamp": "t"},
        "isSnapshotUpdate": False,
    }
    newer = {"type": "pr-link", "sessionId": "88a8d761-7b9a-4bf1-a8ca-c1febe6bf358", "url": "x"}
    text = "\n".join(json.dumps(line) for line in (snapshot, newer)) + "\n" + session
    records = list(iter_records(text))
    assert [r.error for r in records] == [None, None]
    before = [convert_record(r.record)[1] for r in iter_records(session)]
    after = [convert_record(r.record)[1] for r in records]
    assert [t["messages"] for t in after] == [t["messages"] for t in before]
    assert [t["id"] for t in after] == [t["id"] for t in before]


def test_codex_rollout_line_of_a_newer_type_is_skipped_not_fatal() -> None:
    rollout = (LOGS / "codex/rollout-synthetic-tools.jsonl").read_text(encoding="utf-8")
    first, *rest = rollout.splitlines()
    newer = {"timestamp": "2025-10-01T00:00:00Z", "type": "ghost_commit", "payload": {"id": "a"}}
    records = list(iter_records("\n".join([first, json.dumps(newer), *rest]) + "\n"))
    assert [r.error for r in records] == [None]
    [(_, expected)] = imported("codex/rollout-synthetic-tools.jsonl")
    assert convert_record(records[0].record)[1]["messages"] == expected["messages"]
    # A line without the envelope (no payload object) is not taken for a rollout line.
    broken = "\n".join([first, json.dumps({"type": "ghost_commit"}), *rest]) + "\n"
    assert [r.error is None for r in iter_records(broken)] != [True]


def test_mini_swe_agent_empty_cwd_is_no_workspace() -> None:
    """A local run's config may hold ``cwd: ""`` (ATIF's RFC example of a mini-swe-agent file)."""
    record = {
        "trajectory_format": "mini-swe-agent-1",
        "info": {"config": {"environment": {"cwd": "", "env": {}}}, "exit_status": "Submitted"},
        "messages": [
            {"role": "user", "content": "Say hello."},
            {"role": "assistant", "content": "```bash\necho hello\n```"},
            {"role": "user", "content": "hello"},
        ],
    }
    fmt, canonical = convert_record(record)
    assert fmt == "mini-swe-agent" and "workspace" not in canonical["metadata"]
    assert [c.command for s in extract_steps(canonical) for c in s.commands] == ["echo hello"]


def test_aider_edits_in_source_fences_and_in_replies_to_aiders_own_lint_prompt() -> None:
    """Found on aider's own 4 MB chat history: blocks fenced with ``<source>`` (its ``--fence``
    option) took the fence for the file name, and an edit answering aider's "Attempt to fix
    lint errors? y" (no user line before it) was dropped."""
    fenced = (
        "# aider chat started at 2024-08-05 19:33:32\n\n#### fix it\n\napp/main.py\n"
        "<source>python\n<<<<<<< SEARCH\nx = 1\n=======\nx = 2\n>>>>>>> REPLACE\n</source>\n"
    )
    _, canonical = convert_record(fenced)
    calls = [c for s in extract_steps(canonical) for c in s.tool_calls]
    assert [(e.kind, e.path) for c in calls for e in file_effects(c)] == [("edit", "app/main.py")]
    lint = (
        "# aider chat started at 2024-08-05 19:40:00\n\n> Aider v0.47.2-dev\n"
        "> Attempt to fix lint errors? y\n\nReplace the bare except:\n\napp/main.py\n```python\n"
        "<<<<<<< SEARCH\nexcept:\n=======\nexcept Exception:\n>>>>>>> REPLACE\n```\n\n"
        "> Applied edit to app/main.py\n"
    )
    _, canonical = convert_record(lint)
    steps = extract_steps(canonical)
    assert [(e.kind, e.path) for c in steps[0].tool_calls for e in file_effects(c)] == [
        ("edit", "app/main.py")
    ]
    assert canonical["messages"][0]["role"] == "user"
    assert "Attempt to fix lint errors" in canonical["messages"][0]["content"]
    # Text before the first user line that holds no edit is still no reply.
    _, plain = convert_record(
        "# aider chat started at 2024-08-05 19:41:00\n\nmode: md\n\n#### hi\n"
    )
    assert [m["role"] for m in plain["messages"]] == ["user"]


def test_a_gemini_cli_session_gets_one_clear_error_not_a_role_error_per_message() -> None:
    session = {
        "sessionId": "s-1",
        "projectHash": "ab12",
        "messages": [
            {"id": "1", "type": "user", "content": "Create hello.txt."},
            {"id": "2", "type": "gemini", "content": "Done.", "model": "gemini-2.0-flash"},
        ],
    }
    with pytest.raises(ImportFormatError) as info:
        convert_record(session)
    assert "Gemini CLI session" in str(info.value) and "role" not in str(info.value)
    # A chat record whose messages lack roles still gets its field errors.
    with pytest.raises(TrajectoryError) as error:
        convert_record({"messages": [{"content": "hi"}]})
    assert "messages[0].role" in error.value.errors


def test_openhands_editor_only_run_takes_the_sandbox_workspace_when_its_paths_are_in_it() -> None:
    """A V0 run with no command reports no working directory; its editor paths show where it
    worked. One path outside ``/workspace`` and nothing is assumed."""
    [(_, canonical)] = imported("openhands-v0/runtime_basic.json")
    assert canonical["metadata"]["workspace"] == "/workspace"
    assert canonical["metadata"]["workspace_from"].startswith("the paths its file actions name")
    events = json.loads((LOGS / "openhands-v0/runtime_basic.json").read_text(encoding="utf-8"))
    events[1]["args"]["path"] = "/etc/game_2048.py"
    _, elsewhere = convert_record(events)
    assert "workspace" not in elsewhere["metadata"]
    assert "workspace_from" not in elsewhere["metadata"]
    # A reported working directory wins, and says nothing of where it came from.
    [(_, reported)] = imported("openhands-v0/runtime_wrong_initial_state.json")
    assert reported["metadata"]["workspace"] == "/workspace"
    assert "workspace_from" not in reported["metadata"]


def test_a_call_log_keeps_the_models_response_as_its_last_action() -> None:
    """A log of one chat-completion call (``messages`` + ``response``) without litellm's own
    markers was read as plain chat messages: the response, the call's newest action, was lost
    (the first call's file creation, the last call's ``finish``)."""
    [(_, first)] = imported(f"litellm/{SONNET}-1757015025.972.json")
    [(_, last)] = imported(f"litellm/{SONNET}-1757015046.707.json")
    [(_, text)] = imported("litellm/litellm_proxy__deepseek__deepseek-chat-1757015076.651.json")
    for canonical, name in ((first, "str_replace_editor"), (last, "finish"), (text, "finish")):
        final = canonical["messages"][-1]
        assert final["role"] == "assistant"
        assert [c["function"]["name"] for c in final["tool_calls"]] == [name]
        assert "response" not in canonical
    assert last["metadata"]["model"] == "litellm_proxy/claude-sonnet-4-20250514"
    # Earlier turns written as text are read as actions; the in-context example in the
    # user's text is not.
    steps = extract_steps(text)
    names = [c["function"]["name"] for s in steps for c in s.tool_calls]
    assert names == ["terminal", "str_replace_editor", "terminal", "finish"]
    # A chat record with a ``response`` that is no chat completion stays a chat record.
    record = {"messages": [{"role": "user", "content": "hi"}], "response": "n/a"}
    assert convert_record(record)[0] == "openai"


def test_atif_workspace_where_harbors_writers_put_it() -> None:
    """Harbor writes Codex' ``cwd`` in ``agent.extra`` and Claude Code's in each step's
    ``extra``; a converted run that kept neither names its directory only in the task."""
    call = {"tool_call_id": "c1", "function_name": "Bash", "arguments": {"command": "ls"}}
    agent_step = {"step_id": 2, "source": "agent", "message": "", "tool_calls": [call]}
    record = {
        "schema_version": "ATIF-v1.5",
        "session_id": "s",
        "agent": {"name": "codex", "version": "0.1", "extra": {"cwd": "/app"}},
        "steps": [{"step_id": 1, "source": "user", "message": "Fix it."}, agent_step],
    }
    _, codex = convert_record(record)
    assert codex["metadata"]["workspace"] == "/app" and "workspace_from" not in codex["metadata"]
    record["agent"] = {"name": "claude-code", "version": "2.0"}
    agent_step["extra"] = {"cwd": "/repo"}
    _, claude = convert_record(record)
    assert claude["metadata"]["workspace"] == "/repo"
    # The trajectory's own extra wins over both.
    record["extra"] = {"workspace": "/srv/task"}
    assert convert_record(record)[1]["metadata"]["workspace"] == "/srv/task"
    del record["extra"], agent_step["extra"]
    assert "workspace" not in convert_record(record)[1]["metadata"]
    record["steps"][0]["message"] = "<uploaded_files>\n/workspace/django\n</uploaded_files>\nFix."
    _, named = convert_record(record)
    assert named["metadata"]["workspace"] == "/workspace/django"
    assert named["metadata"]["workspace_from"] == "the task's text"
    [(_, converted)] = imported("harbor-atif/mini_swe_agent_astropy_12907.trajectory.json")
    assert converted["metadata"]["workspace_from"] == "the task's text"


def test_codex_apply_patch_sent_through_the_shell_tool_is_a_file_edit() -> None:
    """Found on real Codex rollouts of 2025 (published under a licence that keeps them out of
    this repository): the model sent patches as the shell argv ``["apply_patch", patch]`` or a
    ``bash -lc`` heredoc to ``applypatch``, which Codex applies itself. They were read as shell
    commands and their file edits were lost; the workspace was only in the
    ``<environment_context>`` message."""
    patch = "*** Begin Patch\n*** Update File: render.py\n@@\n-x = 1\n+x = 2\n*** End Patch\n"
    heredoc = f"applypatch << 'PATCH'\n{patch}PATCH\n"

    def call(call_id: str, argv: list[str]) -> dict:
        arguments = json.dumps({"command": argv, "workdir": "/home/dev/viewer"})
        return {
            "type": "function_call",
            "name": "shell",
            "arguments": arguments,
            "call_id": call_id,
        }

    def output(call_id: str) -> dict:
        return {"type": "function_call_output", "call_id": call_id, "output": "Done!"}

    context = (
        "<environment_context>\n  <cwd>/home/dev/viewer</cwd>\n  <approval_policy>on-request"
        "</approval_policy>\n</environment_context>"
    )
    lines = [
        {"id": "rollout-1", "timestamp": "2025-09-10T02:47:38.812Z", "instructions": None},
        {"record_type": "state"},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": context}]},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Go."}]},
        call("c1", ["bash", "-lc", "sed -n '1,20p' render.py"]),
        output("c1"),
        call("c2", ["apply_patch", patch]),
        output("c2"),
        call("c3", ["bash", "-lc", heredoc]),
        output("c3"),
        call("c4", ["bash", "-lc", "apply_patch_helper --check && echo ok"]),
        output("c4"),
        # Codex asking the user (seen in a 2026 rollout): a control call, not an unread action.
        {
            "type": "function_call",
            "name": "request_user_input",
            "arguments": json.dumps({"questions": [{"question": "Which format?"}]}),
            "call_id": "c5",
        },
        output("c5"),
    ]
    records = list(iter_records("\n".join(json.dumps(line) for line in lines) + "\n"))
    assert [r.error for r in records] == [None]
    fmt, canonical = convert_record(records[0].record)
    steps = extract_steps(canonical)
    assert fmt == "codex"
    assert [c.command for s in steps for c in s.commands] == [
        "sed -n '1,20p' render.py",
        "apply_patch_helper --check && echo ok",  # a program of its own: still a command
    ]
    calls = [c for s in steps for c in s.tool_calls]
    names = [c["function"]["name"] for c in calls]
    assert names == ["shell", "apply_patch", "apply_patch", "shell", "request_user_input"]
    assert [(e.kind, e.path) for c in calls for e in file_effects(c)] == [
        ("edit", "render.py"),
        ("edit", "render.py"),
    ]
    assert json.loads(calls[2]["function"]["arguments"])["input"] == patch
    assert canonical["metadata"]["workspace"] == "/home/dev/viewer"
    assert canonical["metadata"]["workspace_from"] == "the <environment_context> message"
    assert UNREAD_KEY not in canonical["metadata"]


def test_openhands_scratch_files_beside_the_checkout_are_inside_the_workspace() -> None:
    """The ponyc run writes test.c and test.pony in ``/workspace``, beside its checkout
    ``/workspace/ponylang__ponyc__0.1``: with the checkout as the only root, both were high
    "write outside the workspace" findings. Deleting the checkout is still flagged."""
    for relative in (
        "openhands-v0/multi_swe_bench_ponyc_4595.jsonl",
        "harbor-atif/openhands_ponyc_4595.trajectory.json",
    ):
        [(_, canonical)] = imported(relative)
        roots = tuple(canonical["metadata"]["workspace"])
        analyzer = Analyzer(load_default_policy(), AnalyzerConfig(workspace_roots=roots))
        findings = [
            f.rule
            for step in extract_steps(canonical)
            for command in step.commands
            for f in analyzer.analyze(command.command).findings
            if f.severity in ("high", "critical")
        ]
        assert findings == [], relative
        assert [f.rule for f in analyzer.analyze(f"rm -rf {PONY}").findings] == [
            "fs.delete-workspace-root"
        ]
    # Not an OpenHands run, or not in its sandbox: one root, as named.
    assert with_openhands_sandbox("/testbed") == "/testbed"
    assert with_openhands_sandbox("/workspace") == "/workspace"
    assert with_openhands_sandbox("/workspace/") == "/workspace/"
