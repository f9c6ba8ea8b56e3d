"""The scripted episodes: one piece of work (fix ``median`` for even-length lists in the repo
make_demo_repo.sh builds), written in each agent's own tools.

A turn is ``{"reasoning", "text", "calls"}``; a call is ``{"tool", "args"}`` (``"patch"`` for
Codex's freeform ``apply_patch``). Every agent runs the same shell commands; the edits go
through the agent's own edit tool (text-mode mini-swe-agent has only the shell).
"""

from __future__ import annotations

from typing import Any

# The agents' throwaway workspace (make_demo_repo.sh builds it there).
REPO = "/tmp/demo-repo"  # noqa: S108
LS = "ls -la"
CAT = "cat calc/stats.py"
GREP = 'grep -rn "median" --include=*.py .'
TEST = "python -m pytest -q"
REPRO = (
    "cat > repro.py <<'EOF'\nfrom calc.stats import median\n\nprint(median([4, 1, 3, 2]))\nEOF\n"
    "python repro.py"
)
SED = 'sed -i \'s/__version__ = "0.1.0"/__version__ = "0.1.1"/\' calc/__init__.py'
FINAL_TEST = "python -m pytest -q && rm repro.py"
OLD = "    return ordered[middle]\n"
NEW = (
    "    if len(ordered) % 2 == 0:\n"
    "        return (ordered[middle - 1] + ordered[middle]) / 2\n"
    "    return ordered[middle]\n"
)
NEW_TEST_PATH = "tests/test_median_pairs.py"
NEW_TEST = (
    "from calc.stats import median\n\n\n"
    "def test_median_of_two():\n    assert median([1, 2]) == 1.5\n"
)
DONE = "Fixed `median` for even-length lists, added a regression test and bumped the version."

Turn = dict[str, Any]


def turn(reasoning: str, *calls: dict[str, Any], text: str = "") -> Turn:
    return {"reasoning": reasoning, "text": text, "calls": list(calls)}


def codex() -> list[Turn]:
    """Codex CLI: ``exec_command`` (a command string) and the freeform ``apply_patch``."""

    def sh(command: str) -> dict[str, Any]:
        return {"tool": "exec_command", "args": {"cmd": command, "yield_time_ms": 30000}}

    patch = (
        "*** Begin Patch\n*** Update File: calc/stats.py\n@@ def median(values):\n"
        "     middle = len(ordered) // 2\n-    return ordered[middle]\n"
        + "".join(f"+{line}\n" for line in NEW.splitlines())
        + "*** End Patch"
    )
    create = (
        f"*** Begin Patch\n*** Add File: {NEW_TEST_PATH}\n"
        + "".join(f"+{line}\n" for line in NEW_TEST.splitlines())
        + "*** End Patch"
    )
    return [
        turn("Look at the repository layout first.", sh(LS), sh(CAT)),
        turn("Find every use of median.", sh(GREP)),
        turn("Run the tests to see the failure.", sh(TEST)),
        turn("Reproduce it with a scratch script.", sh(REPRO)),
        turn("Average the two middle values.", {"tool": "apply_patch", "patch": patch}),
        turn("Add a regression test.", {"tool": "apply_patch", "patch": create}),
        turn("Bump the patch version.", sh(SED)),
        turn("Run the tests again and remove the scratch script.", sh(FINAL_TEST)),
        turn("", text=DONE),
    ]


def claude() -> list[Turn]:
    """Claude Code: ``Bash``, ``Read`` (Edit requires it), ``Edit`` and ``Write``."""

    def bash(command: str, description: str) -> dict[str, Any]:
        return {"tool": "Bash", "args": {"command": command, "description": description}}

    stats = f"{REPO}/calc/stats.py"
    return [
        turn("Look at the repository layout first.", bash(LS, "List files"), bash(CAT, "Show")),
        turn("Find every use of median.", bash(GREP, "Find median")),
        turn("Run the tests to see the failure.", bash(TEST, "Run tests")),
        turn("Reproduce it with a scratch script.", bash(REPRO, "Reproduce")),
        turn("Read the file before editing it.", {"tool": "Read", "args": {"file_path": stats}}),
        turn(
            "Average the two middle values.",
            {"tool": "Edit", "args": {"file_path": stats, "old_string": OLD, "new_string": NEW}},
        ),
        turn(
            "Add a regression test.",
            {
                "tool": "Write",
                "args": {"file_path": f"{REPO}/{NEW_TEST_PATH}", "content": NEW_TEST},
            },
        ),
        turn("Bump the patch version.", bash(SED, "Bump version")),
        turn("Run the tests again.", bash(FINAL_TEST, "Run tests, remove scratch")),
        turn("", text=DONE),
    ]


def openhands() -> list[Turn]:
    """OpenHands SDK: ``terminal``, ``file_editor`` (view / str_replace / create), ``finish``."""

    def term(command: str) -> dict[str, Any]:
        return {"tool": "terminal", "args": {"command": command}}

    stats = f"{REPO}/calc/stats.py"
    return [
        turn("", term(f"cd {REPO} && ls -la"), text="Look at the repository first."),
        turn("", term(CAT)),
        turn("", term(GREP)),
        turn("", term(TEST)),
        turn("", term(REPRO)),
        turn("", {"tool": "file_editor", "args": {"command": "view", "path": stats}}),
        turn(
            "",
            {
                "tool": "file_editor",
                "args": {"command": "str_replace", "path": stats, "old_str": OLD, "new_str": NEW},
            },
        ),
        turn(
            "",
            {
                "tool": "file_editor",
                "args": {
                    "command": "create",
                    "path": f"{REPO}/{NEW_TEST_PATH}",
                    "file_text": NEW_TEST,
                },
            },
        ),
        turn("", term(SED)),
        turn("", term(FINAL_TEST)),
        turn("", {"tool": "finish", "args": {"message": DONE}}),
    ]


def mini() -> list[Turn]:
    """mini-swe-agent 2.x text mode: one ```mswea_bash_command block per turn, no tools."""

    def step(thought: str, command: str) -> Turn:
        text = f"THOUGHT: {thought}\n\n```mswea_bash_command\n{command}\n```"
        return {"reasoning": "", "text": text, "calls": []}

    fix = (
        "python - <<'EOF'\nfrom pathlib import Path\n\npath = Path('calc/stats.py')\n"
        f"path.write_text(path.read_text().replace({OLD!r}, {NEW!r}))\nEOF"
    )
    create = f"cat > {NEW_TEST_PATH} <<'EOF'\n{NEW_TEST}EOF"
    steps = [
        step("Look at the repository layout first.", LS),
        step("Read the module.", CAT),
        step("Find every use of median.", GREP),
        step("Run the tests to see the failure.", TEST),
        step("Reproduce it with a scratch script.", REPRO),
        step("Average the two middle values.", fix),
        step("Add a regression test.", create),
        step("Bump the patch version.", SED),
        step("Run the tests again and remove the scratch script.", FINAL_TEST),
        step(
            "Done; submit the diff.",
            "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && git add -A && git diff --cached",
        ),
    ]
    # turn_at counts assistant turns in text mode: each turn is one "call".
    for s in steps:
        s["calls"] = [None]
    return steps


EPISODES: dict[str, list[Turn]] = {
    "codex": codex(),
    "claude": claude(),
    "openhands": openhands(),
    "mini": mini(),
}
