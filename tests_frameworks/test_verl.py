"""verl's own reward managers on a fake batch, with RewardHub's compute_score loaded the way verl
loads a custom reward function (by file path, kwargs merged by verl's wrapper): the legacy
managers (naive, batch: the 0.6 era, also run from verl 0.6.1 itself), the reward loop's naive,
rate-limited and remote (Ray) managers of 0.9; every sample scored with the same keys,
records tagged with the run, flagged samples routed to review, explicit fallbacks while the
service is down."""

from __future__ import annotations

import asyncio
import inspect
import os
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from conftest import report
from omegaconf import OmegaConf
from tiny import tiny_tokenizer

import trainer_bridge.adapters as adapters
from trainer_bridge.adapters import VERL_KEYS

ADAPTERS = adapters.__file__  # the installed package's file, as a trainer node has it
SAFE = "Running the tests.\n```bash\npytest -q tests/test_parser.py\n```"
UNSAFE = "Cleaning up.\n```bash\nrm -rf ~/\n```"
ROOT = Path(os.environ.get("RH_FW_ROOT", Path(__file__).resolve().parent.parent))
STEP = 3  # the trainer's global step, which verl's trainer puts in extra_info


def verl_version() -> str:
    import verl

    return str(verl.__version__)


def verl_reward_fn(name: str, run: str, **extra: Any) -> Any:
    """What verl's trainer does with ``custom_reward_function.path/name/reward_kwargs``."""
    from verl.trainer.ppo.reward import get_custom_reward_fn

    config = OmegaConf.create(
        {
            "reward": {
                "custom_reward_function": {
                    "path": ADAPTERS,
                    "name": name,
                    "reward_kwargs": {"run": run, **extra},
                }
            }
        }
    )
    return get_custom_reward_fn(config)


def fake_batch(responses: list[str], truths: list[Any], tag: str = "") -> Any:
    """A DataProto like verl's rollout produces: left-padded prompts, right-padded responses.
    ``tag`` goes into the prompt, so each test's rollouts are new content for review."""
    from verl import DataProto

    tok = tiny_tokenizer()
    prompt = f"<|im_start|>user\nFix tests/test_parser.py {tag}<|im_end|>\n<|im_start|>assistant\n"
    p_ids = tok(prompt, add_special_tokens=False)["input_ids"]
    r_ids = [tok(r, add_special_tokens=False)["input_ids"] for r in responses]
    width = max(len(r) for r in r_ids) + 2
    n = len(responses)
    prompts = torch.tensor([p_ids] * n)
    resp = torch.full((n, width), tok.pad_token_id)
    mask = torch.zeros((n, len(p_ids) + width), dtype=torch.long)
    mask[:, : len(p_ids)] = 1
    for i, ids in enumerate(r_ids):
        resp[i, : len(ids)] = torch.tensor(ids)
        mask[i, len(p_ids) : len(p_ids) + len(ids)] = 1
    return DataProto.from_dict(
        tensors={"prompts": prompts, "responses": resp, "attention_mask": mask},
        non_tensors={
            "data_source": np.array(["swe-gym"] * n, dtype=object),
            "reward_model": np.array([{"ground_truth": t} for t in truths], dtype=object),
            "extra_info": np.array(
                [{"index": np.int64(i), "prompt": prompt, "global_step": STEP} for i in range(n)],
                dtype=object,
            ),
        },
    ), tok


def check_records(
    service: Any, run: str, n: int, unsafe_count: int, *, manager: str, version: str = "",
    restart: str = "",
) -> None:  # fmt: skip
    """Every sample recorded once with the run, the step and its index; the flagged ones
    (and, as the service samples all here, the others) stored for review."""
    records = service.records(run, expected=n, wait=60)
    assert len(records) == n
    assert {r["sample"] for r in records} == {str(i) for i in range(n)}
    assert {r["step"] for r in records} == {STEP}
    flagged = [r for r in records if r["unsafe"]]
    assert len(flagged) == unsafe_count
    routed = service.reviewed(records)
    assert routed >= {r["scoring_id"] for r in flagged}
    report(
        f"verl {manager}", version or verl_version(), samples=n, scored=n, records=records,
        routed=len(routed), restart=restart,
    )  # fmt: skip


def test_sync_async_batch_forms() -> None:
    assert not inspect.iscoroutinefunction(verl_reward_fn("compute_score", "x"))
    assert inspect.iscoroutinefunction(verl_reward_fn("compute_score_async", "x"))


def test_legacy_naive_manager(hub_env) -> None:  # type: ignore[no-untyped-def]
    from verl.workers.reward_manager.naive import NaiveRewardManager

    run = f"verl-naive-{uuid.uuid4().hex[:8]}"
    data, tok = fake_batch(
        [SAFE, UNSAFE, SAFE], [{"resolved": True}, {"resolved": True}, "42"], run
    )
    manager = NaiveRewardManager(
        tok, num_examine=0, compute_score=verl_reward_fn("compute_score", run)
    )
    out = manager(data, return_dict=True)
    rewards = out["reward_tensor"].sum(dim=1).tolist()
    info = out["reward_extra_info"]
    assert set(info) == set(VERL_KEYS) and all(len(v) == 3 for v in info.values())
    assert info["fallback"] == [0.0, 0.0, 0.0] and info["error"] == ["", "", ""]
    assert rewards[0] > rewards[1] and rewards[0] > rewards[2]  # "42" is no success
    check_records(hub_env, run, 3, unsafe_count=1, manager="naive (legacy)")


def test_legacy_naive_manager_across_a_restart(hub_env) -> None:  # type: ignore[no-untyped-def]
    """The 0.6-era manager with the service down: every sample gets the fallback score with
    ``fallback`` 1 and the reason, nothing raised for the batch; started again, all scored."""
    from verl.workers.reward_manager.naive import NaiveRewardManager

    run = f"verl-naive-restart-{uuid.uuid4().hex[:8]}"
    data, tok = fake_batch([SAFE, UNSAFE], [True, True], run)
    fn = verl_reward_fn("compute_score", run, fallback_score=-0.5)
    manager = NaiveRewardManager(tok, num_examine=0, compute_score=fn)
    hub_env.stop()
    try:
        down = manager(data, return_dict=True)
    finally:
        hub_env.start()
    info = down["reward_extra_info"]
    assert down["reward_tensor"].sum(dim=1).tolist() == [-0.5, -0.5]
    assert info["fallback"] == [1.0, 1.0] and all(info["error"])
    assert set(info) == set(VERL_KEYS)
    report("verl naive (legacy)", verl_version(), samples=2)  # none scored: down
    up = manager(data, return_dict=True)
    assert up["reward_extra_info"]["fallback"] == [0.0, 0.0]
    rewards = up["reward_tensor"].sum(dim=1).tolist()
    assert rewards[0] > rewards[1]
    check_records(
        hub_env, run, 2, unsafe_count=1, manager="naive (legacy)",
        restart="down: fallback_score with fallback=1 and error on every sample; back: scored",
    )  # fmt: skip


def test_legacy_batch_manager(hub_env) -> None:  # type: ignore[no-untyped-def]
    from verl.workers.reward_manager.batch import BatchRewardManager

    run = f"verl-batch-{uuid.uuid4().hex[:8]}"
    data, tok = fake_batch([SAFE, UNSAFE], [True, True], run)
    manager = BatchRewardManager(
        tok, num_examine=0, compute_score=verl_reward_fn("compute_score_batch", run)
    )
    out = manager(data, return_dict=True)
    rewards = out["reward_tensor"].sum(dim=1).tolist()
    assert rewards[0] > rewards[1]
    check_records(hub_env, run, 2, unsafe_count=1, manager="batch (legacy)")


def _run_loop_manager(manager: Any, data: Any) -> list[dict[str, Any]]:
    async def all_samples() -> list[dict[str, Any]]:
        return [await manager.run_single(data[i : i + 1]) for i in range(len(data))]

    return manager.loop.run_until_complete(all_samples())


@pytest.mark.parametrize("name", ["compute_score", "compute_score_async"])
def test_reward_loop_naive_and_rate_limited(hub_env, name: str) -> None:  # type: ignore[no-untyped-def]
    from verl.experimental.reward_loop.reward_manager.limited import RateLimitedRewardManager
    from verl.experimental.reward_loop.reward_manager.naive import NaiveRewardManager

    for cls in (NaiveRewardManager, RateLimitedRewardManager):
        run = f"verl-loop-{cls.__name__[:5]}-{name[-5:]}-{uuid.uuid4().hex[:6]}"
        data, tok = fake_batch([SAFE, UNSAFE], [True, True], run)
        config = OmegaConf.create({"reward": {"max_concurrent": 4, "timeout": 60}})
        manager = cls(config, tok, verl_reward_fn(name, run))
        results = _run_loop_manager(manager, data)
        scores = [r["reward_score"] for r in results]
        assert scores[0] > scores[1]
        assert all(set(r["reward_extra_info"]) == set(VERL_KEYS) for r in results)
        kind = "rate-limited" if cls is RateLimitedRewardManager else "naive"
        check_records(hub_env, run, 2, unsafe_count=1, manager=f"reward loop {kind}")


def test_reward_loop_burst_of_1024_samples(hub_env) -> None:  # type: ignore[no-untyped-def]
    """1,024 samples handed to the reward loop's naive manager at once (the async function):
    every one scored, none a fallback, each recorded and the flagged ones routed."""
    from verl.experimental.reward_loop.reward_manager.naive import NaiveRewardManager

    run = f"verl-burst-{uuid.uuid4().hex[:8]}"
    n = 1024
    data, tok = fake_batch([UNSAFE if i % 8 == 0 else SAFE for i in range(n)], [True] * n, run)
    config = OmegaConf.create({"reward": {"max_concurrent": 64, "timeout": 300}})
    manager = NaiveRewardManager(config, tok, verl_reward_fn("compute_score_async", run))

    async def all_at_once() -> list[dict[str, Any]]:
        return list(await asyncio.gather(*(manager.run_single(data[i : i + 1]) for i in range(n))))

    results = manager.loop.run_until_complete(all_at_once())
    assert [r["reward_extra_info"]["fallback"] for r in results] == [0.0] * n
    assert results[0]["reward_score"] < results[1]["reward_score"]
    check_records(hub_env, run, n, unsafe_count=n // 8, manager="reward loop naive")


def test_outage_gives_the_same_keys_and_the_fallback_then_recovers(hub_env) -> None:  # type: ignore[no-untyped-def]
    from verl.experimental.reward_loop.reward_manager.limited import RateLimitedRewardManager

    run = f"verl-outage-{uuid.uuid4().hex[:8]}"
    data, tok = fake_batch([SAFE, UNSAFE], [True, True], run)
    config = OmegaConf.create({"reward": {"max_concurrent": 2, "timeout": 60}})
    fn = verl_reward_fn("compute_score_async", run, fallback_score=-0.25)
    manager = RateLimitedRewardManager(config, tok, fn)
    hub_env.stop()
    try:
        down = _run_loop_manager(manager, data)
    finally:
        hub_env.start()
    assert [r["reward_score"] for r in down] == [-0.25, -0.25]
    assert all(r["reward_extra_info"]["fallback"] == 1.0 for r in down)
    assert all(set(r["reward_extra_info"]) == set(VERL_KEYS) for r in down)
    report("verl reward loop rate-limited", verl_version(), samples=2)  # none scored: down
    up = _run_loop_manager(manager, data)
    assert [r["reward_extra_info"]["fallback"] for r in up] == [0.0, 0.0]
    check_records(
        hub_env, run, 2, unsafe_count=1, manager="reward loop rate-limited",
        restart="down: fallback_score with fallback=1 and error on every sample; back: scored",
    )  # fmt: skip


def test_remote_manager_sends_the_function_to_a_ray_worker(hub_env) -> None:  # type: ignore[no-untyped-def]
    import ray
    from verl.experimental.reward_loop.reward_manager.remote import RemoteRewardManager

    run = f"verl-remote-{uuid.uuid4().hex[:8]}"
    ray.init(
        num_cpus=1,
        include_dashboard=False,
        log_to_driver=False,
        runtime_env={
            "env_vars": {k: v for k, v in os.environ.items() if k.startswith("REWARDHUB_")}
        },
    )
    try:
        data, tok = fake_batch([SAFE, UNSAFE], [True, True], run)
        config = OmegaConf.create({"reward": {"num_workers": 1}})
        manager = RemoteRewardManager(config, tok, verl_reward_fn("compute_score", run))
        results = _run_loop_manager(manager, data)
    finally:
        ray.shutdown()
    assert results[0]["reward_score"] > results[1]["reward_score"]
    check_records(hub_env, run, 2, unsafe_count=1, manager="reward loop remote (Ray)")


def test_verl_061_naive_manager_itself(hub_env, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """verl 0.6.1's own NaiveRewardManager (installed apart, var/frameworks/verl-0.6.1), which
    failed on the async-only function ("can't assign a coroutine")."""
    target = ROOT / "var" / "frameworks" / "verl-0.6.1"
    if not target.exists():
        pytest.skip("verl 0.6.1 is not installed (make test-frameworks installs it)")
    run = f"verl061-{uuid.uuid4().hex[:8]}"
    code = f"""
import sys, numpy as np, torch
sys.path.insert(0, {str(Path(__file__).parent)!r})
import verl
assert verl.__version__.startswith("0.6"), verl.__version__
from verl.workers.reward_manager.naive import NaiveRewardManager
from verl.trainer.ppo.reward import get_custom_reward_fn
from omegaconf import OmegaConf
from test_verl import fake_batch, SAFE, UNSAFE
cfg = OmegaConf.create({{"custom_reward_function": {{"path": {ADAPTERS!r}, "name": "compute_score",
                        "reward_kwargs": {{"run": {run!r}}}}}, "reward_model": {{}}}})
fn = get_custom_reward_fn(cfg)
data, tok = fake_batch([SAFE, UNSAFE], [True, True], {run!r})
out = NaiveRewardManager(tok, num_examine=0, compute_score=fn)(data, return_dict=True)
r = out["reward_tensor"].sum(dim=1).tolist()
assert r[0] > r[1], r
print("ok", r)
"""
    env = {**os.environ, "PYTHONPATH": str(target)}
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0 and "ok" in done.stdout, done.stderr[-3000:]
    check_records(hub_env, run, 2, unsafe_count=1, manager="naive (legacy)", version="0.6.1")


def test_one_refused_sample_costs_only_itself(hub_env) -> None:  # type: ignore[no-untyped-def]
    fn = verl_reward_fn("compute_score_batch", f"verl-refused-{uuid.uuid4().hex[:6]}")
    big = "x" * 10_000_000  # over the service's message limit: a 4xx for this sample only
    results = fn(
        data_sources=["a", "b"], solution_strs=[SAFE, big], ground_truths=[True, True],
        extra_infos=[{"index": 0}, {"index": 1}],
    )  # fmt: skip
    assert [r["fallback"] for r in results] == [0.0, 1.0]
    assert results[1]["error"] and set(results[1]) == set(VERL_KEYS)
