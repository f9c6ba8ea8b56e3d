"""Plug RewardHub into existing RL frameworks without glue code.

- **verl**: set ``custom_reward_function.path`` to this file (or ``pkg://trainer_bridge.adapters``)
  and ``.name`` to one of
  ``compute_score`` (blocking; every reward manager, ``main_eval`` and Ray remote tasks),
  ``compute_score_async`` (a coroutine, for the managers that await one: verl picks by
  ``inspect.iscoroutinefunction``) or ``compute_score_batch`` (verl's ``batch`` manager: one
  request per batch). Every result is a dict with the same keys (``VERL_KEYS``): ``score``,
  the breakdown, ``fallback`` and ``error`` (``""`` when scored). A sample the service cannot
  score (a refused input, an outage once retries ran out) gets ``REWARDHUB_FALLBACK_SCORE``
  (default 0.0) with ``fallback`` 1.0 and the reason in ``error``; nothing is raised for the
  batch unless ``REWARDHUB_ON_ERROR=raise``. The functions hold no lock and no client at module
  level, so verl can pickle them to Ray workers and process pools; each process opens its own
  client on first use.
- **TRL**: ``GRPOTrainer(reward_funcs=[RewardHubReward()])``; TRL calls it with ``prompts``,
  ``completions`` (strings, or chat messages for conversational datasets), ``trainer_state``
  and every dataset column as keyword lists; ``None`` marks a sample the service could not
  score. Each sample is tagged with the run (``run=`` or ``REWARDHUB_RUN``), TRL's global step
  and its index.
- **OpenRLHF**: no code here. Its remote reward protocol is served by RewardHub itself (C3):
  ``--remote_rm_url http://rewardhub:<API key>@HOST:8000/api/v1/openrlhf/<reward model>/?run=NAME``
  (0.11; for 0.8 and 0.9, whose HTTP errors print the URL's user part, the key goes in a netrc
  file: README "OpenRLHF").

All read ``REWARDHUB_URL``, ``REWARDHUB_API_KEY`` and ``REWARDHUB_REWARD_MODEL`` from the
environment unless given explicitly, since the frameworks only pass their own arguments.

Ground truth and labels: an outcome object (``resolved``, ``tests_passed``/``tests_failed``,
``score``), ``{"outcome": {...}}`` or a bool is the environment's verdict; anything else (a
reference answer such as ``"42"``) is sent as ``{"reference": ...}``, which the service keeps
in the trajectory's metadata and never reads as success.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections.abc import Mapping, Sequence
from typing import Any

from trainer_bridge import _runtime
from trainer_bridge.client import RewardClient, RewardServiceError
from trainer_bridge.types import TextScore

logger = logging.getLogger(__name__)

_LABEL_COLUMNS = ("outcome", "ground_truth", "label", "labels", "reward_model", "answer")
_OUTCOME_KEYS = frozenset({"resolved", "tests_passed", "tests_failed", "score"})
# The breakdown the text endpoint returns per sample (C3 extra_logs), prefixed in verl's dicts.
BREAKDOWN_KEYS = (
    "outcome_reward",
    "process_reward",
    "unsafe",
    "gated",
    "num_steps",
    "num_findings",
    "malformed_tool_calls",
)
# Every verl result has exactly these keys, scored or not (verl's managers stack them by key).
VERL_KEYS = (
    "score",
    "normalized_score",
    *(f"rewardhub/{k}" for k in BREAKDOWN_KEYS),
    "fallback",
    "error",
)


def client_from_env(**overrides: Any) -> RewardClient:
    """A RewardClient configured from ``REWARDHUB_*`` variables (explicit arguments win).

    Optional: ``REWARDHUB_TIMEOUT`` (s), ``REWARDHUB_MAX_RETRIES``, ``REWARDHUB_MAX_BATCH``."""
    base_url = overrides.pop("base_url", None) or os.environ.get("REWARDHUB_URL", "")
    api_key = overrides.pop("api_key", None) or os.environ.get("REWARDHUB_API_KEY", "")
    reward_model = overrides.pop("reward_model", None) or os.environ.get(
        "REWARDHUB_REWARD_MODEL", ""
    )
    missing = [
        name
        for name, value in (
            ("REWARDHUB_URL", base_url),
            ("REWARDHUB_API_KEY", api_key),
            ("REWARDHUB_REWARD_MODEL", reward_model),
        )
        if not value
    ]
    if missing:
        raise ValueError(f"set {', '.join(missing)} (or pass them explicitly)")
    for name, key, cast in (
        ("REWARDHUB_TIMEOUT", "timeout", float),
        ("REWARDHUB_MAX_RETRIES", "max_retries", int),
        ("REWARDHUB_MAX_BATCH", "max_batch_size", int),
    ):
        if os.environ.get(name) and key not in overrides:
            overrides[key] = cast(os.environ[name])
    return RewardClient(base_url, api_key, reward_model, **overrides)


def label_payload(label: Any) -> Any:
    """A ground truth / label as the text endpoint reads it: outcome objects and bools as the
    environment's verdict, anything else as a reference answer (never as success)."""
    if label is None:
        return None
    label = _plain(label)
    if isinstance(label, Mapping):
        if "outcome" in label or "reference" in label:
            return dict(label)
        if label and set(label) <= _OUTCOME_KEYS:
            return {"outcome": dict(label)}
        return {"reference": dict(label)}
    if isinstance(label, bool):
        return {"outcome": {"resolved": label}}
    return {"reference": label}


def _plain(value: Any) -> Any:
    """numpy scalars and arrays (verl's non-tensor batch holds them) as plain Python values."""
    tolist = getattr(value, "tolist", None)
    if callable(tolist) and not isinstance(value, list | tuple | str | bytes):
        return tolist()
    return value


def _on_error(kwargs: Mapping[str, Any]) -> str:
    mode = str(kwargs.get("on_error") or os.environ.get("REWARDHUB_ON_ERROR") or "fallback")
    if mode not in ("fallback", "raise"):
        raise ValueError(f"on_error must be 'fallback' or 'raise', got {mode!r}")
    return mode


def _fallback_score(kwargs: Mapping[str, Any]) -> float:
    value = kwargs.get("fallback_score")
    if value is None:
        value = os.environ.get("REWARDHUB_FALLBACK_SCORE", "0.0")
    return float(value)


def _run_name(kwargs: Mapping[str, Any]) -> str:
    return str(kwargs.get("run") or os.environ.get("REWARDHUB_RUN") or "")


# --- verl ---------------------------------------------------------------------------------------


def _verl_sample(
    solution_str: Any, ground_truth: Any, extra_info: Any, run: str
) -> tuple[str, str, Any, dict[str, Any] | None]:
    """(query, prompt, label, rollout tag) of one verl sample."""
    info = _plain(extra_info) if extra_info is not None else None
    prompt = ""
    tag: dict[str, Any] = {}
    if isinstance(info, Mapping):
        if isinstance(info.get("prompt"), str):
            prompt = info["prompt"]
        for key in ("global_step", "global_steps", "step"):
            step = _plain(info.get(key))
            if isinstance(step, int) and not isinstance(step, bool):
                tag["step"] = step
                break
        for key in ("uid", "index", "sample"):
            if info.get(key) is not None:
                tag["sample"] = str(_plain(info[key]))
                break
    if run:
        tag["run"] = run
    response = str(_plain(solution_str))
    return prompt + response, prompt, label_payload(ground_truth), (tag or None)


def _verl_result(result: TextScore, fallback: float) -> dict[str, Any]:
    if result.fallback:
        return _verl_failure(result.error or "fallback", fallback)
    out: dict[str, Any] = {"score": result.reward, "normalized_score": result.score}
    for key in BREAKDOWN_KEYS:
        out[f"rewardhub/{key}"] = float(result.extra_logs.get(key, 0.0))
    out["fallback"] = 0.0
    out["error"] = ""
    return out


def _verl_failure(error: str, fallback: float) -> dict[str, Any]:
    """The same keys as a scored sample: the fallback score, zeros, the reason."""
    out: dict[str, Any] = {"score": fallback, "normalized_score": 0.0}
    for key in BREAKDOWN_KEYS:
        out[f"rewardhub/{key}"] = 0.0
    out["fallback"] = 1.0
    out["error"] = error[:500]
    return out


def _verl_client(kwargs: Mapping[str, Any]) -> RewardClient:
    client = kwargs.get("client")
    if isinstance(client, RewardClient):
        return client
    return _runtime.shared_client(client_from_env)


def _score_verl_batch(
    solution_strs: Sequence[Any],
    ground_truths: Sequence[Any],
    extra_infos: Sequence[Any],
    kwargs: Mapping[str, Any],
) -> list[dict[str, Any]]:
    """Scores verl samples in as few requests as the client's batch size allows; a refused
    chunk is scored sample by sample, so one bad sample costs only itself."""
    on_error, fallback, run = _on_error(kwargs), _fallback_score(kwargs), _run_name(kwargs)
    samples = [
        _verl_sample(s, g, e, run)
        for s, g, e in zip(solution_strs, ground_truths, extra_infos, strict=True)
    ]
    try:
        client = _verl_client(kwargs)
        results = _score_texts(client, samples)
    except Exception as exc:
        if on_error == "raise":
            raise
        logger.warning("rewardhub: %d verl samples unscored: %s", len(samples), _reason(exc))
        return [_verl_failure(_reason(exc), fallback) for _ in samples]
    out = []
    for item in results:
        if isinstance(item, Exception):
            if on_error == "raise":
                raise item
            out.append(_verl_failure(_reason(item), fallback))
        elif item.fallback and on_error == "raise":
            raise RewardServiceError(item.error or "reward service unavailable")
        else:
            out.append(_verl_result(item, fallback))
    return out


def _score_texts(
    client: RewardClient, samples: Sequence[tuple[str, str, Any, dict[str, Any] | None]]
) -> list[TextScore | Exception]:
    queries, prompts, labels, tags = (list(x) for x in zip(*samples, strict=True))
    try:
        return list(client.score_texts(queries, prompts, labels, tags))
    except RewardServiceError as exc:
        if exc.status_code is None or exc.status_code >= 500 or len(samples) == 1:
            if len(samples) == 1:
                return [exc]
            raise
    # A 4xx names one sample's problem: score them one by one to keep the others.
    out: list[TextScore | Exception] = []
    for q, p, label, tag in samples:
        try:
            out.extend(client.score_texts([q], [p], [label], [tag]))
        except RewardServiceError as exc:
            if exc.status_code is None or exc.status_code >= 500:
                raise
            out.append(exc)
    return out


def _reason(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"[:500]


def compute_score(
    data_source: Any = None,
    solution_str: Any = "",
    ground_truth: Any = None,
    extra_info: Any = None,
    **kwargs: Any,
) -> dict[str, Any]:
    """verl's custom reward function (blocking): ``score`` plus the breakdown (``VERL_KEYS``).

    verl's ``reward_kwargs`` may set ``fallback_score``, ``on_error`` ("fallback" or "raise")
    and ``run``; ``extra_info`` may carry ``prompt``, ``global_step`` and ``index``."""
    return _score_verl_batch([solution_str], [ground_truth], [extra_info], kwargs)[0]


async def compute_score_async(
    data_source: Any = None,
    solution_str: Any = "",
    ground_truth: Any = None,
    extra_info: Any = None,
    **kwargs: Any,
) -> dict[str, Any]:
    """:func:`compute_score` as a coroutine (for verl's managers that await the function)."""
    return await asyncio.to_thread(
        compute_score, data_source, solution_str, ground_truth, extra_info, **kwargs
    )


def compute_score_batch(
    data_sources: Sequence[Any] = (),
    solution_strs: Sequence[Any] = (),
    ground_truths: Sequence[Any] = (),
    extra_infos: Sequence[Any] | None = None,
    **kwargs: Any,
) -> list[dict[str, Any]]:
    """verl's ``batch`` reward manager function: lists in, one result dict per sample out."""
    solutions = list(_plain(solution_strs))
    truths = list(_plain(ground_truths)) if ground_truths is not None else []
    truths = truths if len(truths) == len(solutions) else [None] * len(solutions)
    infos = list(extra_infos) if extra_infos is not None else []
    infos = infos if len(infos) == len(solutions) else [None] * len(solutions)
    if not solutions:
        return []
    return _score_verl_batch(solutions, truths, infos, kwargs)


# --- TRL ----------------------------------------------------------------------------------------


class RewardHubReward:
    """A TRL ``reward_funcs`` entry: ``(prompts, completions, **columns) -> list[float | None]``.

    Tags every sample with ``run`` (argument, ``REWARDHUB_RUN``, or a name made once per
    instance), TRL's ``trainer_state.global_step`` and ``<rank>-<index>``."""

    def __init__(
        self,
        client: RewardClient | None = None,
        *,
        name: str = "rewardhub",
        run: str | None = None,
    ) -> None:
        self._client = client
        self.__name__ = name  # TRL names reward columns after the function
        self.run = run or os.environ.get("REWARDHUB_RUN") or _default_run("trl")
        self._calls = 0

    @property
    def client(self) -> RewardClient:
        if self._client is None:
            self._client = client_from_env()
        return self._client

    def close(self) -> None:
        if self._client is not None:
            self._client.close()

    def __call__(
        self, prompts: Sequence[Any], completions: Sequence[Any], **columns: Any
    ) -> list[float | None]:
        state = columns.pop("trainer_state", None)
        columns.pop("completion_ids", None)
        step = getattr(state, "global_step", None)
        if not isinstance(step, int):
            step = self._calls
        self._calls += 1
        rank = os.environ.get("RANK", "0")
        tags = [
            {"run": self.run, "step": step, "sample": f"{rank}-{i}"}
            for i in range(len(completions))
        ]
        labels = _labels(columns, len(completions))
        if completions and not isinstance(completions[0], str):
            trajectories = [
                _conversation(prompt, completion, label)
                for prompt, completion, label in zip(prompts, completions, labels, strict=True)
            ]
            results = self._score_each_on_refusal(trajectories, tags)
            return [None if r is None or r.fallback else r.reward for r in results]
        texts = [_prompt_text(p) for p in prompts]
        queries = [p + str(c) for p, c in zip(texts, completions, strict=True)]
        payloads = [label_payload(label) for label in labels]
        samples = list(zip(queries, texts, payloads, tags, strict=True))
        scored = _score_texts(self.client, samples)
        return [None if isinstance(r, Exception) or r.fallback else r.reward for r in scored]

    def _score_each_on_refusal(
        self, trajectories: list[dict[str, Any]], tags: list[dict[str, Any]]
    ) -> list[Any]:
        try:
            return list(self.client.score_batch(trajectories, tags))
        except RewardServiceError as exc:
            if exc.status_code is None or exc.status_code >= 500:
                raise
        out: list[Any] = []
        for trajectory, tag in zip(trajectories, tags, strict=True):
            try:
                out.append(self.client.score(trajectory, tag))
            except RewardServiceError as exc:
                if exc.status_code is None or exc.status_code >= 500:
                    raise
                logger.warning("rewardhub: sample %s refused: %s", tag["sample"], exc)
                out.append(None)
        return out


def _default_run(prefix: str) -> str:
    return f"{prefix}-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}"


def _prompt_text(prompt: Any) -> str:
    return prompt if isinstance(prompt, str) else str(prompt)


def _labels(columns: Mapping[str, Any], n: int) -> list[Any]:
    for name in _LABEL_COLUMNS:
        value = _plain(columns.get(name))
        if isinstance(value, list | tuple) and len(value) == n:
            return list(value)
    return [None] * n


def _conversation(prompt: Any, completion: Any, label: Any) -> dict[str, Any]:
    """A conversational TRL sample as a C1 trajectory (prompt messages + completion messages);
    a label that is no outcome goes to ``metadata.reference``."""
    messages: list[Any] = []
    messages.extend(
        prompt if isinstance(prompt, list) else [{"role": "user", "content": str(prompt)}]
    )
    messages.extend(
        completion
        if isinstance(completion, list)
        else [{"role": "assistant", "content": str(completion)}]
    )
    trajectory: dict[str, Any] = {"messages": messages}
    payload = label_payload(label)
    if isinstance(payload, dict) and "outcome" in payload:
        trajectory["outcome"] = payload["outcome"]
    elif isinstance(payload, dict) and "reference" in payload:
        trajectory["metadata"] = {"reference": payload["reference"]}
    return trajectory
