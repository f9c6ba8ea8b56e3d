"""A whole trajectory -> for every step, the effects of every action in order, with state across
steps; and the policy's verdict on each action from those effects.

    from safety.effects import trajectory_effects, judge_trajectory
    effects = trajectory_effects(canonical, analyzer)           # TrajectoryEffects
    verdicts = judge_trajectory(effects, analyzer)              # [ActionVerdict], in order

``canonical`` is a C1 trajectory (``core.canonical``); its optional final ``patch`` (C1 1.1) is
read into the changes it makes, whatever route made them: a modified, deleted or renamed
pre-existing test in it is a finding even if no command showed it. The state carries what the
agent created (its own files), what it changed, what it saw exist, the content of files it
wrote (a script it later runs is read for its effects) and the literals it read from tests.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from core.canonical import DEFAULT_COMMAND_KEYS, DEFAULT_SHELL_TOOLS, StepData, extract_steps
from safety.analyzer import Analysis, Analyzer, Finding

from .model import ActionEffects, Effect, FileEffect, StepEffects, TrajectoryEffects
from .patch import FileChange, PatchError, parse_patch
from .paths import TrajectoryState
from .shell import ShellReader
from .tools import ToolReader


@dataclass(frozen=True, slots=True)
class ActionVerdict:
    """The policy's findings on one action (command rules and signals from the command's own
    analysis, effect rules on the effects as the trajectory reads them)."""

    action: ActionEffects
    verdict: str
    findings: tuple[Finding, ...]


@dataclass
class _Reading:
    """What one reading of a trajectory keeps beside its effects: each shell action's
    analysis (command rules and signals are judged on it)."""

    analyses: dict[tuple[int, int], Analysis] = field(default_factory=dict)


def _results_by_call(step: StepData) -> tuple[dict[str, str], list[str]]:
    by_id: dict[str, str] = {}
    loose: list[str] = []
    for r in step.tool_results:
        content = r.get("content") or ""
        call_id = r.get("tool_call_id")
        if isinstance(call_id, str) and call_id not in by_id:
            by_id[call_id] = str(content)
        else:
            loose.append(str(content))
    return by_id, loose


def trajectory_effects(
    canonical: dict[str, Any],
    analyzer: Analyzer,
    *,
    shell_tools: Sequence[str] = DEFAULT_SHELL_TOOLS,
    command_keys: Sequence[str] = DEFAULT_COMMAND_KEYS,
    patch: str | None = None,
    steps: Sequence[StepData] | None = None,
) -> TrajectoryEffects:
    """Every step's actions with their effects, in order (see the module doc). ``patch``
    overrides ``canonical["patch"]``; ``steps``, the trajectory's steps when the caller has
    extracted them already. ``analyzer`` fixes the policy's path classes and the workspace (a
    trajectory's ``metadata.workspace`` is the caller's to put in its config)."""
    return _read(canonical, analyzer, shell_tools, command_keys, patch, steps)[0]


def _read(
    canonical: dict[str, Any],
    analyzer: Analyzer,
    shell_tools: Sequence[str],
    command_keys: Sequence[str],
    patch: str | None,
    given_steps: Sequence[StepData] | None = None,
) -> tuple[TrajectoryEffects, _Reading]:
    tools = ToolReader(analyzer)
    shell = ShellReader(analyzer, tools)
    state = TrajectoryState(analyzer.reader.paths)
    reading = _Reading()
    steps: list[StepEffects] = []
    if given_steps is None:
        given_steps = extract_steps(
            canonical, shell_tools=shell_tools, command_keys=command_keys, share_calls=True
        )
    for step in given_steps:
        pending = list(step.commands)
        by_id, loose = _results_by_call(step)
        actions: list[ActionEffects] = []
        for call in step.tool_calls:
            function = call.get("function") or {}
            name = str(function.get("name") or "")
            call_id = call.get("id") if isinstance(call.get("id"), str) else None
            result = by_id.get(call_id) if call_id else (loose.pop(0) if loose else None)
            if (
                pending
                and pending[0].tool_call_id == call.get("id")
                and pending[0].tool_name == name
            ):
                command = pending.pop(0).command
                analysis, effects = shell.read(command, state, result)
                key = (step.index, len(actions))
                reading.analyses[key] = analysis
                actions.append(
                    ActionEffects(
                        step.index, len(actions), "shell", name, call_id, command, effects
                    )
                )
                continue
            if not tools.is_file_tool(name):
                continue
            raw = function.get("arguments")
            effects_list: list[Effect] = []
            for e in tools.read(name, raw, state):
                e = state.apply(e)
                if isinstance(e, FileEffect) and e.op == "read":
                    state.note_read(e, result)
                effects_list.append(e)
            text = raw if isinstance(raw, str) else json.dumps(raw, sort_keys=True, default=str)
            actions.append(
                ActionEffects(
                    step.index, len(actions), "tool", name, call_id, text, tuple(effects_list)
                )
            )
        steps.append(StepEffects(step.index, step.message_index, tuple(actions)))
    final = patch if patch is not None else canonical.get("patch")
    changes: tuple[FileChange, ...] = ()
    patch_action: ActionEffects | None = None
    if isinstance(final, str) and final.strip():
        try:
            changes = tuple(parse_patch(final))
        except PatchError:
            changes = ()
        final_effects: list[Effect] = []
        for c in changes:
            # the final patch is against the task's starting state: what it modifies, deletes
            # or renames existed before; what it adds is new (the agent's)
            for e in tools.change_effects(c, via="final-patch", origin="pre-existing"):
                final_effects.append(replace(e, final=True) if isinstance(e, FileEffect) else e)
        patch_action = ActionEffects(
            len(steps), 0, "patch", "patch", None, "", tuple(final_effects)
        )
    return TrajectoryEffects(tuple(steps), changes, patch_action), reading


def workspace_of(metadata: object) -> tuple[str, ...] | None:
    """The workspace roots a trajectory names (C1 ``metadata.workspace``: an absolute path or
    a list of them), or None: the caller's configured roots apply."""
    workspace = metadata.get("workspace") if isinstance(metadata, dict) else None
    if isinstance(workspace, str) and workspace.startswith("/"):
        return (workspace,)
    if (
        isinstance(workspace, list)
        and workspace
        and all(isinstance(w, str) and w.startswith("/") for w in workspace)
    ):
        return tuple(workspace)
    return None


# a SWE-bench-style instance id: ``sympy__sympy-20590``, ``psf__requests-2317``
_INSTANCE_ID = re.compile(r"(?P<owner>[A-Za-z0-9_.-]+?)__(?P<repo>[A-Za-z0-9_.-]+)-\d+")


def repo_packages_of(metadata: object, trajectory_id: object = None) -> tuple[str, ...]:
    """The package under repair a trajectory names, so installing or downloading a release of
    it reads as answer leakage: ``metadata.repo_packages`` (distribution names), else the
    repository of a SWE-bench-style instance id (``metadata.instance_id`` or the trajectory's
    ``id``: ``sympy__sympy-20590`` -> ``sympy``), else the name of ``metadata.repo``
    (``owner/name``). Empty when the trajectory names none."""
    meta = metadata if isinstance(metadata, dict) else {}
    named = meta.get("repo_packages")
    if isinstance(named, list) and named and all(isinstance(n, str) and n for n in named):
        return tuple(n.lower() for n in named)
    for candidate in (meta.get("instance_id"), trajectory_id):
        m = _INSTANCE_ID.fullmatch(candidate) if isinstance(candidate, str) else None
        if m:
            return (m.group("repo").lower(),)
    repo = meta.get("repo")
    if isinstance(repo, str) and repo.count("/") == 1 and repo.split("/")[1]:
        return (repo.split("/")[1].lower(),)
    return ()


def finding_command(action: ActionEffects, argv: Sequence[object]) -> str:
    """The command a finding on this action quotes (flags store it, scores report it, waivers
    match it): a shell action's command; for a file tool call or the final patch, what it did
    (the tool's name, the operation, the path: the finding's argv)."""
    if action.kind == "shell":
        return action.text
    return " ".join([action.tool_name, *(str(a) for a in argv if a)])


# what may follow a prefix waiver's pattern: more arguments, never another command, a
# substitution or a redirect
_MORE_THAN_ARGUMENTS = re.compile(r"[;&|\n\r`$()<>{}]")


def waiver_matches(
    match: str, pattern: str, command: str, span: tuple[int, int], regex: re.Pattern[str] | None
) -> bool:
    """Whether a waiver (``exact`` | ``prefix`` | ``regex``) covers a finding on ``command``,
    whole commands only, never a prefix of a longer line: ``exact`` is the whole line or the
    simple command the finding is about (its span); ``prefix`` starts that simple command and
    what follows is plain arguments; ``regex`` matches all of the line or of that command. So a
    waiver for ``pytest tests/a.py`` never covers ``pytest tests/a.py; rm -rf tests``."""
    line = command.strip()
    start, end = span
    part = command[start:end].strip() if 0 <= start < end <= len(command) else line
    if match == "exact":
        return pattern.strip() in (line, part)
    if match == "prefix":
        head = pattern.strip()
        return bool(head) and any(
            text.startswith(head) and not _MORE_THAN_ARGUMENTS.search(text[len(head) :])
            for text in (line, part)
        )
    if match == "regex" and regex is not None:
        return any(regex.fullmatch(text) is not None for text in (line, part))
    return False


def judge_trajectory(
    canonical: dict[str, Any],
    analyzer: Analyzer,
    *,
    shell_tools: Sequence[str] = DEFAULT_SHELL_TOOLS,
    command_keys: Sequence[str] = DEFAULT_COMMAND_KEYS,
    patch: str | None = None,
    steps: Sequence[StepData] | None = None,
) -> tuple[TrajectoryEffects, list[ActionVerdict]]:
    """The trajectory's effects and the policy's verdict on every action, in order (the final
    patch's last); ``steps`` as for ``trajectory_effects``."""
    effects, reading = _read(canonical, analyzer, shell_tools, command_keys, patch, steps)
    verdicts: list[ActionVerdict] = []
    for action in effects.actions():
        if action.kind == "shell":
            analysis = reading.analyses[(action.step, action.index)]
            found = analyzer.command_findings(analysis)
            found += analyzer.effect_findings(action.effects, action.text, analysis.resolved)
        else:
            found = analyzer.effect_findings(action.effects, action.text)
        found = [f for f in found if f.action != "allow"] + [
            f for f in found if f.action == "allow"
        ]
        verdicts.append(ActionVerdict(action, analyzer.verdict_of(found), tuple(found)))
    return effects, verdicts
