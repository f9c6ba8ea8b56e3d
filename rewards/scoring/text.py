"""Text-only trajectories (C3, OpenRLHF): split a response into steps, score it like any other.

A response is cut into synthetic assistant steps at its tool calls: a step is the text since the
previous step's end up to and including a run of tool-call blocks (consecutive blocks separated
only by whitespace are one step, as one assistant turn may call several tools). Text after the
last tool call is a final step without calls. ``<tool_response>...</tool_response>`` blocks become
tool messages answering the step before them, so detectors see tool errors.

Formats are read by ``core.text_actions`` (the parser the importers share): ``hermes``
(Qwen/Hermes ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>``), ``fenced-bash``
(```` ```bash ````, ```` ```sh ````, ```` ```shell ```` blocks, run through the task type's first
shell tool), ``auto`` (both, in text order), and ``openhands``, ``mini-swe-agent``, ``terminus``
and ``all`` (see that module). A ``<tool_call>`` block whose JSON does not parse still ends a
step, with no tool call, and is counted in ``metadata.malformed_tool_calls`` (a broken call runs
nothing, so it is not a safety finding). An unterminated block at the end of the text (a
truncated generation) is read to the end.

The prompt/response split (``split_query``): OpenRLHF sends ``query`` as its tokenizer decodes
prompt + response, which need not start with the exact ``prompt`` (a left-truncated prompt,
special tokens, re-encoded whitespace). In order: the exact prefix; the prompt found inside the
query (a BOS token before it); the prompt's last turn, from its last chat-template turn marker
to its end (the generation prompt), found in the query; the same ignoring whitespace; the
prompt's last 256 or 64 characters (a truncation inside the last turn); the prompt's count of
assistant-turn markers (ChatML, Llama 3, Gemma, Mistral, DeepSeek, Phi,
Granite, harmony); then the query's own structure: the response starts after its first
assistant-turn marker (also when no prompt is sent), so commands quoted in a system or user
turn are never the agent's; only a query with no such marker is read whole. ``prompt_found``
is 0 when a prompt was sent and not found.

Labels (``label_parts``): an outcome object (``resolved``, ``tests_passed``, ``tests_failed``,
``score``, or ``{"outcome": {...}}``), a bool, a JSON number in [0, 1] or the words
true/false/resolved/unresolved are the environment's verdict; anything else (``"42"``, a
number outside [0, 1], ``{"reference": ...}``, another object) is a reference answer, kept in
``metadata.reference`` and never read as success.

Conversational trajectories whose assistant messages write their actions as text (no
``tool_calls``) are read the same way by ``with_text_actions``: each such message keeps its
content and gains the tool calls its text holds, so it stays one step.

OpenRLHF score mapping: ``score = clamp((reward - lo) / (hi - lo), 0, 1)`` where ``lo, hi`` are
the spec's reward bounds (``Scorer.reward_bounds``: ``total_min`` and
``outcome_weight + total_max``), so 0 is the worst and 1 the best reward the spec can give.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from core.canonical import TrajectoryError
from core.text_actions import find_blocks

from .scorer import Scorer, ScoreResult, WorkBudget


@dataclass(frozen=True, slots=True)
class TextStep:
    """One synthetic assistant step cut from a response; offsets are characters into it."""

    start: int
    end: int
    text: str
    tool_calls: tuple[dict[str, Any], ...] = ()
    tool_results: tuple[str, ...] = ()
    malformed: int = 0

    def message(self) -> dict[str, Any]:
        """The C1 assistant message of this step."""
        msg: dict[str, Any] = {"role": "assistant", "content": self.text}
        if self.tool_calls:
            msg["tool_calls"] = [dict(c) for c in self.tool_calls]
        return msg


@dataclass
class _Draft:
    start: int
    calls: list[dict[str, Any]] = field(default_factory=list)
    results: list[str] = field(default_factory=list)
    malformed: int = 0
    end: int = 0


def split_text_response(
    text: str, fmt: str = "auto", *, shell_tool: str = "bash"
) -> list[TextStep]:
    """Cuts a response into synthetic assistant steps at its tool calls (see module docstring)."""
    steps: list[TextStep] = []
    draft = _Draft(start=0)
    pos = 0

    def flush(end: int) -> None:
        nonlocal draft
        steps.append(
            TextStep(
                start=draft.start,
                end=end,
                text=text[draft.start : end],
                tool_calls=tuple(
                    {
                        "id": f"text_call_{len(steps)}_{i}",
                        "type": "function",
                        "function": {"name": c["name"], "arguments": c["arguments"]},
                    }
                    for i, c in enumerate(draft.calls)
                ),
                tool_results=tuple(draft.results),
                malformed=draft.malformed,
            )
        )
        draft = _Draft(start=end)

    for block in find_blocks(text, fmt, shell_tool=shell_tool):
        between = text[pos : block.start]
        if block.kind == "response":
            # Environment text: it answers the last step's calls and is no step's own text.
            if draft.calls or draft.malformed:
                flush(pos)
            if steps:
                prev = steps[-1]
                steps[-1] = TextStep(
                    prev.start, prev.end, prev.text, prev.tool_calls,
                    (*prev.tool_results, block.body), prev.malformed,
                )  # fmt: skip
            if not text[draft.start : block.start].strip():
                draft = _Draft(start=block.end)
            pos = block.end
            continue
        if (draft.calls or draft.malformed) and between.strip():
            flush(pos)
        if block.call is not None:
            draft.calls.append(block.call)
        else:
            draft.malformed += 1
        pos = block.end
    if draft.calls or draft.malformed:
        flush(pos)
    if text[draft.start :].strip() or not steps:
        flush(len(text))
    return steps


def text_to_trajectory(
    prompt: str,
    response: str,
    fmt: str = "auto",
    *,
    shell_tool: str = "bash",
    outcome: dict[str, Any] | None = None,
    reference: Any = None,
) -> tuple[dict[str, Any], list[TextStep]]:
    """A (prompt, response) pair as a C1 trajectory, plus the steps (for their offsets)."""
    steps = split_text_response(response, fmt, shell_tool=shell_tool)
    messages: list[dict[str, Any]] = []
    if prompt:
        messages.append({"role": "user", "content": prompt})
    for step in steps:
        messages.append(step.message())
        ids = [c["id"] for c in step.tool_calls]
        for i, result in enumerate(step.tool_results):
            call_id = ids[i] if i < len(ids) else (ids[-1] if ids else None)
            messages.append({"role": "tool", "tool_call_id": call_id, "content": result})
    metadata: dict[str, Any] = {
        "source": "text",
        "text_format": fmt,
        "step_end_offsets": [s.end for s in steps],
        "malformed_tool_calls": sum(s.malformed for s in steps),
    }
    if reference is not None:
        metadata["reference"] = reference
    trajectory = {"messages": messages, "outcome": outcome or {}, "metadata": metadata}
    return trajectory, steps


_OUTCOME_KEYS = frozenset({"resolved", "tests_passed", "tests_failed", "score"})


def label_parts(label: Any) -> tuple[dict[str, Any], Any]:
    """(outcome, reference) of an OpenRLHF label or verl ground truth (see the module doc)."""
    if isinstance(label, str):
        stripped = label.strip()
        if stripped.lower() in ("true", "false", "resolved", "unresolved"):
            return {"resolved": stripped.lower() in ("true", "resolved")}, None
        if not stripped.startswith("{"):
            return {}, label  # text is an answer to compare with, never a verdict
        try:
            parsed = json.loads(stripped)
        except (ValueError, RecursionError):
            return {}, label
        if not isinstance(parsed, dict):
            return {}, label
        label = parsed
    if isinstance(label, dict):
        if "outcome" in label or "reference" in label:
            inner = label.get("outcome")
            return (dict(inner) if isinstance(inner, dict) else {}), label.get("reference")
        if label and set(label) <= _OUTCOME_KEYS:
            return dict(label), None
        return {}, (label or None)
    if isinstance(label, bool):
        return {"resolved": label, "score": 1.0 if label else 0.0}, None
    if isinstance(label, int | float):
        if label == label and 0.0 <= label <= 1.0:
            return {"score": float(label), "resolved": label >= 1.0}, None
        return {}, (label if label == label and abs(label) != float("inf") else None)
    return {}, label


def label_to_outcome(label: Any) -> dict[str, Any]:
    """The outcome part of a label (``label_parts``); a reference answer gives ``{}``."""
    return label_parts(label)[0]


# Where an assistant turn starts, in the chat templates trainers use (the generation prompt).
_ASSISTANT_MARKERS = (
    r"<\|im_start\|>assistant[^\n]*\n?",  # ChatML: Qwen, Hermes, many others
    r"<\|start_header_id\|>assistant<\|end_header_id\|>\s*",  # Llama 3
    r"<start_of_turn>model\n?",  # Gemma
    r"\[/INST\]",  # Mistral, Llama 2
    r"<｜Assistant｜>",  # DeepSeek V3 / R1
    r"<\|assistant\|>\n?",  # Phi-3, GLM, Zephyr
    r"<\|start_of_role\|>assistant<\|end_of_role\|>",  # Granite
    r"<\|start\|>assistant",  # gpt-oss (harmony)
)
_ASSISTANT_RE = re.compile("|".join(_ASSISTANT_MARKERS))
# Any turn's start (the prompt's last turn begins at the last one of these).
_TURN_RE = re.compile(
    r"<\|im_start\|>|<\|start_header_id\|>|<start_of_turn>|\[INST\]|<｜(?:User|Assistant)｜>"
    r"|<\|(?:user|system|assistant)\|>|<\|start_of_role\|>|<\|start\|>"
)
_SPACE_RE = re.compile(r"\s+")


def _find_ignoring_space(haystack: str, needle: str) -> int:
    """The end offset in ``haystack`` of the first match of ``needle`` where any run of
    whitespace matches any run (or none); -1 if absent. Linear: a regex of literal chunks."""
    chunks = [c for c in _SPACE_RE.split(needle) if c]
    if not chunks:
        return -1
    pattern = r"\s*".join(re.escape(c) for c in chunks)
    if needle[-1].isspace():
        pattern += r"\s*"
    match = re.search(pattern, haystack)
    return match.end() if match else -1


# What may close the prompt's last turn before the generation prompt (end-of-turn tokens).
_TURN_END_RE = re.compile(
    r"(?:\s|<\|im_end\|>|<\|eot_id\|>|<end_of_turn>|</s>|<\|end\|>|<\|endoftext\|>"
    r"|<｜end▁of▁sentence｜>)*"
)


def split_query(query: str, prompt: str) -> tuple[int, str]:
    """(offset in ``query`` where the response starts, how it was found) - see the module doc.
    A split followed only by the end of a turn and an assistant-turn marker (a prompt sent
    without its chat template's closing and generation prompt) moves past that marker."""
    start, how = _split_query(query, prompt)
    if start:
        closing = _TURN_END_RE.match(query, start)
        after = closing.end() if closing else start
        marker = _ASSISTANT_RE.match(query, after)
        if marker is not None:
            return marker.end(), how
    return start, how


def _split_query(query: str, prompt: str) -> tuple[int, str]:
    """``split_query`` before the closing of the prompt's last turn is passed. The method is
    ``prefix``, ``contains``, ``last-turn``, ``last-turn-spacing``, ``suffix``, ``markers``,
    ``no-prompt-markers`` (no prompt sent: the query's first assistant turn), ``no-prompt``
    (no prompt and no assistant turn: offset 0), ``query-markers`` (the prompt is not in the
    query: its first assistant turn) or ``not-found`` (offset 0)."""
    if not prompt:
        at = _first_assistant_turn(query)
        return (at, "no-prompt-markers") if at >= 0 else (0, "no-prompt")
    if query.startswith(prompt):
        return len(prompt), "prefix"
    at = query.find(prompt)
    if at >= 0:
        return at + len(prompt), "contains"
    turns = [m.start() for m in _TURN_RE.finditer(prompt)]
    if turns:
        # The prompt's last non-assistant turn through its end (with the generation prompt):
        # it survives a left truncation and holds text no response repeats.
        last_turn = turns[-1]
        if _ASSISTANT_RE.match(prompt, last_turn) and len(turns) > 1:
            last_turn = turns[-2]
        tail = prompt[last_turn:]
        at = query.find(tail)
        if at >= 0:
            return at + len(tail), "last-turn"
        end = _find_ignoring_space(query, tail)
        if end >= 0:
            return end, "last-turn-spacing"
    for size in (256, 64):  # a truncation inside the last turn leaves the prompt's end
        if len(prompt) > size:
            at = query.find(prompt[-size:])
            if at >= 0:
                return at + size, "suffix"
    markers = list(_ASSISTANT_RE.finditer(prompt))
    if markers and not prompt[markers[-1].end() :].strip():  # ends with the generation prompt
        found = list(_ASSISTANT_RE.finditer(query))
        if found:
            return found[min(len(markers), len(found)) - 1].end(), "markers"
    at = _first_assistant_turn(query)
    return (at, "query-markers") if at >= 0 else (0, "not-found")


def _first_assistant_turn(query: str) -> int:
    """Where the text of the query's first assistant turn starts (after its chat-template
    marker), -1 without one: what comes before it (system and user turns, commands quoted
    there included) is the prompt, never the agent's."""
    match = _ASSISTANT_RE.search(query)
    return match.end() if match else -1


_OPENRLHF_VERSION = re.compile(r"(\d{1,4})\.(\d{1,4})(?:\.(?:\d{1,4}|x))?")


def openrlhf_sends_extra_logs(version: str) -> bool:
    """Whether the OpenRLHF ``version`` the trainer runs reads C3's ``extra_logs``: 0.8.x
    concatenates them as tensors and fails on the JSON lists, so they are left out for it
    and anything older. An empty version means a current one. ValueError if unreadable."""
    version = version.strip()
    if not version:
        return True
    match = _OPENRLHF_VERSION.fullmatch(version)
    if match is None:
        raise ValueError(f"{version[:40]!r} is not an OpenRLHF version such as 0.8 or 0.9.0.")
    return (int(match[1]), int(match[2])) > (0, 8)


@dataclass(frozen=True)
class TextSample:
    """One text rollout as a C1 trajectory, with its steps and where its response began."""

    trajectory: dict[str, Any]
    steps: list[TextStep]
    response_start: int
    split: str

    @property
    def prompt_found(self) -> bool:
        return self.split not in ("not-found", "query-markers")


def text_sample(
    query: str, prompt: str, label: Any, fmt: str = "auto", *, shell_tool: str = "bash"
) -> TextSample:
    """(query, prompt, label) -> the C1 trajectory the score API would score for it."""
    start, how = split_query(query, prompt)
    outcome, reference = label_parts(label)
    trajectory, steps = text_to_trajectory(
        query[:start] if start else prompt,
        query[start:],
        fmt,
        shell_tool=shell_tool,
        outcome=outcome,
        reference=reference,
    )
    trajectory["metadata"]["prompt_split"] = how
    return TextSample(trajectory, steps, start, how)


def unit_score(reward: float, bounds: tuple[float, float]) -> float:
    """The reward mapped into 0..1 by the spec's reward bounds (C3 ``scores``)."""
    lo, hi = bounds
    return min(max((reward - lo) / (hi - lo), 0.0), 1.0) if hi > lo else 0.0


def text_logs(response: Mapping[str, Any], sample: TextSample) -> dict[str, Any]:
    """C3's per-sample ``extra_logs`` (floats) from a C2 response, and two lists for process
    rewards: ``step_end_offsets`` (character offsets of step ends in the response) and
    ``step_rewards``. C3's ``extra_logs`` must be float per sample, so the endpoint keeps only
    the scalars there."""
    breakdown = response.get("breakdown") or {}
    unsafe = bool((breakdown.get("safety") or {}).get("unsafe_commands"))
    steps = sample.steps
    return {
        "outcome_reward": float(response["outcome_reward"]),
        "process_reward": float(response["process_reward"]),
        "unsafe": 1.0 if unsafe else 0.0,
        "gated": 1.0 if response["gated"] else 0.0,
        "num_steps": float(len(steps)),
        "num_findings": float(len(response.get("findings") or ())),
        "malformed_tool_calls": float(sum(s.malformed for s in steps)),
        "prompt_found": 1.0 if sample.prompt_found else 0.0,
        "step_end_offsets": [float(s.end) for s in steps],
        "step_rewards": [float(s["reward"]) for s in response["steps"]],
    }


def score_text_sample(
    scorer: Scorer, sample: TextSample, *, budget: WorkBudget | None = None
) -> ScoreResult:
    """Scores a text sample; a label whose outcome does not validate (``tests_passed: -1``)
    scores as no outcome. Raises ``TrajectoryError`` only for pathological input."""
    try:
        return scorer.score(sample.trajectory, budget=budget)
    except TrajectoryError as exc:
        if not all(key.startswith("outcome") for key in exc.errors):
            raise
        sample.trajectory["outcome"] = {}
        return scorer.score(sample.trajectory, budget=budget)


def score_openrlhf(
    scorer: Scorer, query: str, prompt: str, label: Any, *, budget: WorkBudget | None = None
) -> tuple[float, float, dict[str, Any]]:
    """One OpenRLHF sample -> (reward, score in 0..1, extra_logs), in process (no record; the
    service's text endpoint scores through ``rewards.services.scoring.score_text``)."""
    sample = text_sample(query, prompt, label, scorer.text_format, shell_tool=scorer.shell_tools[0])
    result = score_text_sample(scorer, sample, budget=budget)
    response = result.to_dict()
    return (
        result.reward,
        unit_score(result.reward, scorer.reward_bounds),
        text_logs(response, sample),
    )


# Cheap pre-check before the parsers run on a message (most messages hold none of these).
_ACTION_HINTS = ("<tool_call", "```", "<function=", "mswea_bash_command", "keystrokes")


def _text_of(content: Any) -> str | None:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # OpenAI content parts
        parts = [
            p["text"]
            for p in content
            if isinstance(p, dict) and p.get("type") == "text" and isinstance(p.get("text"), str)
        ]
        return "\n".join(parts) if parts else None
    return None


def with_text_actions(trajectory: Any, fmt: str = "auto", *, shell_tool: str = "bash") -> Any:
    """``trajectory`` with the actions its assistant messages write as text made tool calls.

    Only assistant messages without ``tool_calls`` are read, by the text format ``fmt``; each
    keeps its content and stays one step. The input is not changed: a new trajectory (and new
    messages) is returned when anything was found, else the same object. Anything malformed is
    left as it is for validation to report."""
    if not isinstance(trajectory, dict):
        return trajectory
    messages = trajectory.get("messages")
    if not isinstance(messages, list):
        return trajectory
    changed: list[Any] | None = None
    found = 0
    for index, message in enumerate(messages):
        if not isinstance(message, dict) or message.get("role") != "assistant":
            continue
        if message.get("tool_calls"):
            continue
        text = _text_of(message.get("content"))
        if not text or not any(hint in text for hint in _ACTION_HINTS):
            continue
        calls = [
            b.call
            for b in find_blocks(text, fmt, shell_tool=shell_tool)
            if b.kind == "call" and b.call is not None
        ]
        if not calls:
            continue
        if changed is None:
            changed = list(messages)
        changed[index] = {
            **message,
            "tool_calls": [
                {
                    "id": f"text_call_{index}_{i}",
                    "type": "function",
                    "function": {"name": c["name"], "arguments": c["arguments"]},
                }
                for i, c in enumerate(calls)
            ],
        }
        found += len(calls)
    if changed is None:
        return trajectory
    out = {**trajectory, "messages": changed}
    metadata = trajectory.get("metadata")
    if metadata is None or isinstance(metadata, dict):
        out["metadata"] = {**(metadata or {}), "text_actions": found}
    return out
