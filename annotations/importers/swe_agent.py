"""SWE-agent ``.traj`` files: ``history`` (chat messages) preferred, else ``trajectory`` steps.

SWE-agent runs either in function-calling mode (assistant history entries carry OpenAI
``tool_calls`` and observations are ``tool`` messages with ``tool_call_ids``) or in plain
thought/action mode (``action`` is the text run in SWE-agent's shell, the next ``observation``
message is its output). Both become C1 calls. SWE-agent's own commands are not shell:
``edit`` / ``create`` / ``insert`` / ``str_replace_editor`` become file tool calls (with the
path of the file they change: the open file from the step's ``state`` for ``edit``), and
``open`` / ``goto`` / ``scroll_*`` / ``find_file`` / ``search_*`` / ``filemap`` / ``submit`` /
``exit_*`` become read-only or control calls of the same name; anything else is a ``bash`` call.
Function-calling ``edit`` / ``insert`` calls, which name no file, get the open file's ``path``;
a file without per-step ``state`` (history only) has it from the footer SWE-agent ends each
observation with (``(Open file: ...)``, ``(Current directory: ...)``), as its workspace.

The instance id comes from ``replay_config.problem_statement.id`` (or ``instance_id``), the
workspace from the steps' ``working_dir``, the patch from ``info.submission``.
"""

from __future__ import annotations

import json
import posixpath
import re
import shlex
from typing import Any

from annotations.importers.base import (
    ImportFormatError,
    assistant,
    bash_call,
    is_patch,
    passthrough,
    require_list,
    str_or_none,
    text_of,
    tool_call,
    tool_result,
)

FORMAT = "swe-agent"


def looks_like(record: dict) -> bool:
    """A ``trajectory`` of action/observation steps, or a ``history`` of SWE-agent messages."""
    trajectory = record.get("trajectory")
    if isinstance(trajectory, list) and any(
        isinstance(step, dict) and ("action" in step or "observation" in step)
        for step in trajectory
    ):
        return True
    history = record.get("history")
    return isinstance(history, list) and any(
        isinstance(item, dict) and "role" in item and ("message_type" in item or "agent" in item)
        for item in history
    )


# SWE-agent commands that read or steer: argument names as SWE-agent's own tools declare them.
READ_COMMANDS: dict[str, tuple[str, ...]] = {
    "open": ("path", "line_number"),
    "goto": ("line_number",),
    "scroll_up": (),
    "scroll_down": (),
    "find_file": ("file_name", "dir"),
    "search_dir": ("search_term", "dir"),
    "search_file": ("search_term", "file"),
    "filemap": ("file_path",),
    "submit": (),
    "exit_forfeit": (),
    "exit_cost": (),
    "exit_context": (),
    "exit_error": (),
    "exit_format": (),
    "skip": (),
}
_EDIT_LINES_RE = re.compile(r"^edit\s+(\d+)\s*:\s*(\d+)\s*\n(.*?)\n?end_of_edit\s*$", re.S)
_INSERT_RE = re.compile(r"^insert\s+(\d+)\s*\n(.*?)\n?end_of_insert\s*$", re.S)


def _state(step: dict) -> dict:
    """A step's state: an object, or (0.x) a JSON string of one."""
    state = step.get("state")
    if isinstance(state, str):
        try:
            state = json.loads(state)
        except (ValueError, RecursionError):
            return {}
    return state if isinstance(state, dict) else {}


# SWE-agent ends each observation with its state: "(Open file: ...)" "(Current directory: ...)".
_FOOTER_RE = re.compile(r"^\((Open file|Current directory): (.+)\)\s*$", re.M)
_FOOTER_KEYS = {"Open file": "open_file", "Current directory": "working_dir"}


def _footer_state(observation: str) -> dict[str, str]:
    """The state an observation's footer reports: a file without per-step ``state`` (a
    history-only ``.traj``) still says which file an ``edit`` changes, and where."""
    return {_FOOTER_KEYS[key]: value.strip() for key, value in _FOOTER_RE.findall(observation)}


def _is_observation(item: dict) -> bool:
    """The environment's answer to an action (not a demonstration's, not the task)."""
    if item.get("is_demo") is True:
        return False
    return item.get("role") == "tool" or (
        item.get("role") == "user" and item.get("message_type") == "observation"
    )


def _observed_workspace(history: object) -> str | None:
    """Where a history-only file ran: the first observation footer's current directory."""
    for item in history if isinstance(history, list) else ():
        if not isinstance(item, dict) or not _is_observation(item):
            continue
        if directory := _footer_state(text_of(item.get("content"))).get("working_dir"):
            return directory
    return None


def _open_file(state: dict) -> str | None:
    value = state.get("open_file")
    return value if isinstance(value, str) and value not in ("", "n/a") else None


def _absolute(path: str, state: dict) -> str:
    working_dir = state.get("working_dir")
    if path.startswith("/") or not isinstance(working_dir, str) or not working_dir:
        return path
    return posixpath.normpath(posixpath.join(working_dir, path))


def _words(line: str) -> list[str] | None:
    try:
        return shlex.split(line)
    except ValueError:
        return None


def command_call(call_id: str, action: str, state: dict) -> dict:
    """The C1 call for one SWE-agent action written as text (see module docstring)."""
    action = action.strip()
    first_line = action.split("\n", 1)[0]
    name = first_line.split(None, 1)[0] if first_line.strip() else ""
    if name == "edit":
        path = _open_file(state)
        match = _EDIT_LINES_RE.match(action)
        if match:
            arguments: dict[str, Any] = {
                "start_line": int(match.group(1)),
                "end_line": int(match.group(2)),
                "replacement_text": match.group(3),
            }
        else:
            words = _words(action) or []
            arguments = dict(zip(("search", "replace", "replace-all"), words[1:], strict=False))
            if not arguments:
                arguments = {"text": action[len("edit") :].strip()}
        if path:
            arguments["path"] = path
        return tool_call(call_id, "edit", arguments)
    if name == "insert":
        match = _INSERT_RE.match(action)
        arguments = (
            {"line": int(match.group(1)), "text": match.group(2)}
            if match
            else {"text": action[len("insert") :].strip()}
        )
        if path := _open_file(state):
            arguments["path"] = path
        return tool_call(call_id, "insert", arguments)
    if name == "create":
        words = _words(first_line) or []
        if len(words) >= 2:
            return tool_call(
                call_id, "create", {"filename": words[1], "path": _absolute(words[1], state)}
            )
    if name == "str_replace_editor":
        words = _words(action) or []
        if len(words) >= 3:
            arguments = {"command": words[1], "path": _absolute(words[2], state)}
            rest = words[3:]
            for key, value in zip(rest[::2], rest[1::2], strict=False):
                arguments[key.lstrip("-")] = value
            return tool_call(call_id, "str_replace_editor", arguments)
    if name in READ_COMMANDS and "\n" not in action:
        words = _words(action)
        if words is not None:
            keys = READ_COMMANDS[name]
            arguments = dict(zip(keys, words[1:], strict=False))
            if len(words) - 1 > len(keys):
                arguments["args"] = words[1 + len(keys) :]
            return tool_call(call_id, name, arguments)
    return bash_call(call_id, action)


def _thinking_text(blocks: object) -> str:
    """``thinking_blocks`` are Anthropic thinking blocks that litellm passes through."""
    if not isinstance(blocks, list):
        return ""
    return "\n".join(
        block["thinking"]
        for block in blocks
        if isinstance(block, dict) and isinstance(block.get("thinking"), str)
    )


FILE_CALLS_WITHOUT_PATH: frozenset[str] = frozenset({"edit", "insert"})


def _with_path(call: object, state: dict) -> object:
    """A function-calling ``edit`` / ``insert`` changes the open file: name it as ``path``."""
    if not isinstance(call, dict) or not isinstance(call.get("function"), dict):
        return call
    function = call["function"]
    path = _open_file(state)
    name = function.get("name")
    if not isinstance(name, str) or name not in FILE_CALLS_WITHOUT_PATH or path is None:
        return call
    arguments = function.get("arguments")
    decoded = arguments
    if isinstance(arguments, str):
        try:
            decoded = json.loads(arguments)
        except (ValueError, RecursionError):
            return call
    if not isinstance(decoded, dict) or "path" in decoded:
        return call
    return {**call, "function": {**function, "arguments": json.dumps({**decoded, "path": path})}}


def _matching_step(steps: list, start: int, action: object) -> int | None:
    """The first trajectory step from ``start`` that ran ``action``. SWE-agent leaves out of
    the history an edit its linter rejected (nothing changed), so the n-th action of the
    history is not always the n-th step."""
    if not isinstance(action, str) or not action.strip():
        return None
    for index in range(start, len(steps)):
        ran = steps[index].get("action") if isinstance(steps[index], dict) else None
        if isinstance(ran, str) and ran.strip() == action.strip():
            return index
    return None


def _from_history(history: list, steps: list) -> tuple[list[dict], list[dict]]:
    """The history's messages, each action with the state of the step that ran it; then the
    steps after the last one the history holds (the history SWE-agent saves is the last query
    sent to the model, so the final response, often ``submit``, is only a trajectory step).
    Also returns the steps the history left out, named rather than dropped silently."""
    messages: list[dict[str, Any]] = []
    left_out: list[dict] = []
    pending_call: str | None = None  # synthetic id of a plain-mode action awaiting its output
    actions = 0  # assistant actions so far: without action texts, the n-th is the n-th step
    next_step = 0  # the first trajectory step no history action has matched yet
    matched = False
    observed: dict[str, str] = {}  # without trajectory steps: the last observation's footer
    for i, item in enumerate(history):
        if not isinstance(item, dict):
            continue
        role = item.get("role")
        content = text_of(item.get("content"))
        if _is_observation(item):
            observed.update(_footer_state(content))
        if role == "assistant":
            tool_calls = item.get("tool_calls")
            thought = item.get("thought")
            text = thought if isinstance(thought, str) and thought else content
            reasoning = _thinking_text(item.get("thinking_blocks"))
            pending_call = None
            state: dict = dict(observed)
            if item.get("is_demo") is not True:
                found = _matching_step(steps, next_step, item.get("action"))
                if found is not None:
                    left_out.extend(_left_out(steps, next_step, found))
                    state, next_step, matched = _state(steps[found]), found + 1, True
                elif not matched and actions < len(steps) and isinstance(steps[actions], dict):
                    state = _state(steps[actions])
                actions += 1
            if isinstance(tool_calls, list) and tool_calls:
                calls = [_with_path(call, state) for call in tool_calls]
                messages.append(assistant(text, reasoning=reasoning, tool_calls=calls))
                continue
            action = item.get("action")
            calls = []
            if isinstance(action, str) and action.strip():
                pending_call = f"swe-agent-{i}"
                calls.append(command_call(pending_call, action, state))
            messages.append(assistant(text, reasoning=reasoning, tool_calls=calls))
        elif role == "tool":
            ids = item.get("tool_call_ids")
            call_id = str_or_none(item.get("tool_call_id"))
            if call_id is None and isinstance(ids, list) and ids:
                call_id = str_or_none(ids[0])
            messages.append(tool_result(call_id or pending_call, content))
            pending_call = None
        elif (
            role == "user"
            and pending_call is not None
            and item.get("message_type")
            in (
                "observation",
                None,
            )
        ):
            messages.append(tool_result(pending_call, content))
            pending_call = None
        elif role in ("system", "user"):
            messages.append({"role": role, "content": content})
            pending_call = None
        # Other roles/kinds are SWE-agent bookkeeping; skipped rather than failing the import.
    if matched:
        messages.extend(_from_steps(steps, first=next_step))
    return messages, left_out


def _left_out(steps: list, start: int, end: int) -> list[dict]:
    return [
        {
            "trajectory_step": index,
            "action": str(steps[index].get("action") or "")[:500],
            "reason": "in the trajectory, not in the history the model saw (SWE-agent leaves "
            "out an edit its linter rejected: nothing changed)",
        }
        for index in range(start, end)
        if isinstance(steps[index], dict)
    ]


def _from_steps(steps: list, first: int = 0) -> list[dict]:
    messages: list[dict[str, Any]] = []
    for i, step in enumerate(steps):
        if i < first or not isinstance(step, dict):
            continue
        thought = step.get("thought")
        response = step.get("response")
        text = thought if isinstance(thought, str) and thought else text_of(response)
        action = step.get("action")
        calls: list[dict] = []
        call_id = f"swe-agent-step-{i}"
        if isinstance(action, str) and action.strip():
            calls.append(command_call(call_id, action, _state(step)))
        messages.append(assistant(text, tool_calls=calls))
        observation = step.get("observation")
        if calls and observation is not None:
            messages.append(tool_result(call_id, text_of(observation)))
    return messages


def _replay_config(record: dict) -> dict:
    config = record.get("replay_config")
    if isinstance(config, str):
        try:
            config = json.loads(config)
        except (ValueError, RecursionError):
            config = None
    return config if isinstance(config, dict) else {}


def _model_name(info: dict, config: dict) -> str | None:
    if isinstance(info.get("model"), str):
        return info["model"]
    agent = config.get("agent")
    model = agent.get("model") if isinstance(agent, dict) else None
    if isinstance(model, dict) and isinstance(model.get("name"), str):
        return model["name"]
    return None


def _instance_id(record: dict, config: dict) -> str | None:
    instance_id = str_or_none(record.get("instance_id"))
    if instance_id:
        return instance_id
    problem = config.get("problem_statement")
    return str_or_none(problem.get("id")) if isinstance(problem, dict) else None


def _workspace(states: list[dict]) -> str | None:
    for state in states:
        working_dir = state.get("working_dir")
        if isinstance(working_dir, str) and working_dir.startswith("/"):
            return working_dir
    return None


def _submitted_diff(steps: object) -> str | None:
    """Older files without ``info``: what the ``submit`` command printed, when it is a diff."""
    if not isinstance(steps, list):
        return None
    for step in reversed(steps):
        if not isinstance(step, dict) or not isinstance(step.get("action"), str):
            continue
        if step["action"].strip() == "submit":
            observation = step.get("observation")
            if isinstance(observation, str) and is_patch(observation):
                return observation
            return None
    return None


def _submitted_in(messages: list[dict[str, Any]]) -> str | None:
    """A history-only file: what its last ``submit`` call answered, when that is a diff."""
    submits = {
        str_or_none(call.get("id"))
        for message in messages
        for call in message.get("tool_calls") or ()
        if isinstance(call, dict)
        and isinstance(call.get("function"), dict)
        and call["function"].get("name") == "submit"
    }
    submits.discard(None)
    for message in reversed(messages):
        if message.get("role") == "tool" and str_or_none(message.get("tool_call_id")) in submits:
            content = message.get("content")
            return content if is_patch(content) else None
    return None


def convert(record: object) -> dict:
    """``exit_status`` "submitted" is not success: ``resolved`` is set only if the file says so."""
    if not isinstance(record, dict):
        raise ImportFormatError(f"{FORMAT}: expected an object with 'history' or 'trajectory'")
    steps = record.get("trajectory")
    states = (
        [_state(step) for step in steps if isinstance(step, dict)]
        if isinstance(steps, list)
        else []
    )
    history = record.get("history")
    if isinstance(history, list) and history:
        messages, left_out = _from_history(history, steps if isinstance(steps, list) else [])
    else:
        messages, left_out = _from_steps(require_list(steps, "trajectory", FORMAT)), []
    info = record.get("info") if isinstance(record.get("info"), dict) else {}
    config = _replay_config(record)
    metadata: dict[str, Any] = {"agent": "swe-agent"}
    if left_out:
        metadata["steps_left_out"] = left_out
    if info:
        metadata["source_info"] = info
        if isinstance(info.get("exit_status"), str):
            metadata["exit_status"] = info["exit_status"]
    model = _model_name(info, config)
    if model:
        metadata["model"] = model
    workspace = _workspace(states) or _observed_workspace(history)
    if workspace:
        metadata["workspace"] = workspace
    outcome: dict[str, Any] = {}
    if isinstance(info.get("resolved"), bool):
        outcome["resolved"] = info["resolved"]
    canonical: dict[str, Any] = {"messages": messages, "metadata": metadata, "outcome": outcome}
    patch = (
        info.get("submission")
        or record.get("model_patch")
        or _submitted_diff(steps)
        or _submitted_in(messages)
    )
    if isinstance(patch, str) and patch.strip():
        canonical["patch"] = patch.lstrip("\r\n")
    instance_id = _instance_id(record, config)
    if instance_id:
        canonical["id"] = instance_id
    return passthrough(record, canonical)
