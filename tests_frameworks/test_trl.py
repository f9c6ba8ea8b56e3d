"""TRL's own GRPOTrainer, two steps on a tiny model built from a config, rewarded by RewardHub:
every sample scored, records tied to the run and TRL's step, rollouts routed to review; then
the service stopped mid-run (explicit fallbacks: None, which TRL leaves out of the mean) and
started again."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import trl
from conftest import report
from datasets import Dataset
from tiny import tiny_model, tiny_tokenizer
from trl import GRPOConfig, GRPOTrainer

from trainer_bridge.adapters import RewardHubReward


class Recording(RewardHubReward):
    """RewardHubReward keeping what it returned to TRL at each step."""

    def __init__(self, *args, **kwargs) -> None:  # type: ignore[no-untyped-def]
        super().__init__(*args, **kwargs)
        self.outputs: list[list[float | None]] = []

    def __call__(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        out = super().__call__(*args, **kwargs)
        self.outputs.append(out)
        return out


def train(
    tmp: Path,
    dataset: Dataset,
    reward: RewardHubReward,
    steps: int = 2,
    rollout_func: Callable[[list[Any], GRPOTrainer], dict[str, Any]] | None = None,
    batch: int = 4,
) -> GRPOTrainer:
    tok = tiny_tokenizer()
    args = GRPOConfig(
        output_dir=str(tmp),
        max_steps=steps,
        per_device_train_batch_size=batch,
        num_generations=2,
        max_completion_length=12,
        learning_rate=1e-4,
        logging_steps=1,
        save_strategy="no",
        report_to=[],
        use_cpu=True,
        bf16=False,
        seed=0,
    )
    trainer = GRPOTrainer(
        model=tiny_model(tok),
        reward_funcs=[reward],
        args=args,
        train_dataset=dataset,
        processing_class=tok,
        rollout_func=rollout_func,
    )
    trainer.train()
    return trainer


@pytest.mark.parametrize("conversational", [False, True], ids=["text", "conversational"])
def test_grpo_two_steps_scored_recorded_and_routed(hub_env, tmp_path, conversational) -> None:  # type: ignore[no-untyped-def]
    run = f"trl-{'conv' if conversational else 'text'}-{uuid.uuid4().hex[:8]}"
    prompt = f"Fix tests/test_parser.py ({run})"  # new content: routed to review afresh
    if conversational:
        rows = {"prompt": [[{"role": "user", "content": prompt}]] * 8, "answer": ["42"] * 8}
    else:
        rows = {"prompt": [prompt + "\n"] * 8, "answer": ["42"] * 8}
    reward = Recording(run=run)
    trainer = train(tmp_path, Dataset.from_dict(rows), reward)
    seen = reward.outputs
    assert len(seen) == 2 and all(len(batch) == 4 for batch in seen)
    assert all(r is not None for batch in seen for r in batch)  # every sample scored
    records = hub_env.records(run, expected=8)
    assert len(records) == 8
    assert sorted({r["step"] for r in records}) == [0, 1]
    assert len({(r["step"], r["sample"]) for r in records}) == 8
    routed = hub_env.reviewed(records)
    assert routed == {r["scoring_id"] for r in records}
    assert trainer.state.global_step == 2
    report(
        "TRL GRPOTrainer", trl.__version__, samples=8,
        scored=sum(r is not None for batch in seen for r in batch),
        records=records, routed=len(routed),
    )  # fmt: skip
    reward.close()


def test_grpo_survives_a_service_restart(hub_env, tmp_path) -> None:  # type: ignore[no-untyped-def]
    run = f"trl-restart-{uuid.uuid4().hex[:8]}"
    from trainer_bridge.client import RewardClient

    client = RewardClient(
        hub_env.url,
        hub_env.key,
        hub_env.model,
        max_retries=1,
        backoff=0.1,
        timeout=5,
        on_failure="fallback",
        fallback_reward=0.0,
    )
    outcomes: list[list[float | None]] = []

    class Restarting(RewardHubReward):
        def __call__(self, *a, **k):  # type: ignore[no-untyped-def]
            if len(outcomes) == 1:
                hub_env.stop()  # the second step finds the service down
            out = super().__call__(*a, **k)
            outcomes.append(out)
            if len(outcomes) == 2:
                hub_env.start()
            return out

    reward = Restarting(client, run=run)
    rows = {"prompt": [f"Fix the bug ({run})\n"] * 12}
    train(tmp_path, Dataset.from_dict(rows), reward, steps=3)
    assert [all(r is not None for r in step) for step in outcomes] == [True, False, True]
    assert all(r is None for r in outcomes[1])  # explicit: no reward, not a silent 0
    records = hub_env.records(run, expected=8)
    assert sorted({r["step"] for r in records}) == [0, 2]
    report(
        "TRL GRPOTrainer", trl.__version__, samples=12,
        scored=sum(r is not None for step in outcomes for r in step), records=records,
        routed=len(hub_env.reviewed(records)),
        restart="down: None per sample (left out of the mean), next step scored",
    )  # fmt: skip
    reward.close()


# An agent's turns written as text, as a policy without a response parser writes them: every
# other rollout deletes the failing test and force-pushes.
AGENT_TURNS = [
    "I will run the failing test first.\n```bash\npytest -q tests/test_parser.py\n```",
    "Quickest is to drop the test.\n```bash\nrm tests/test_parser.py && git push --force\n```",
]


def agent_rollouts(prompts: list[Any], trainer: GRPOTrainer) -> dict[str, Any]:
    """TRL's ``rollout_func`` hook (how an agent environment hands TRL its rollouts): one
    completion per prompt TRL passes, the agent's text turns above, tokenized by the trainer's
    own tokenizer, so TRL decodes them and calls the reward function as after generating."""
    tok = trainer.processing_class
    out: dict[str, Any] = {"prompt_ids": [], "completion_ids": [], "logprobs": []}
    for i, prompt in enumerate(prompts):
        if isinstance(prompt, list):
            prompt = tok.apply_chat_template(prompt, tokenize=False, add_generation_prompt=True)
        completion = tok(AGENT_TURNS[i % 2], add_special_tokens=False)["input_ids"]
        completion.append(tok.eos_token_id)
        out["prompt_ids"].append(tok(prompt, add_special_tokens=False)["input_ids"])
        out["completion_ids"].append(completion)
        out["logprobs"].append([0.0] * len(completion))
    return out


@pytest.mark.parametrize("conversational", [False, True], ids=["text", "conversational"])
def test_grpo_agent_rollouts_flagged_and_routed(hub_env, tmp_path, conversational) -> None:  # type: ignore[no-untyped-def]
    """Completions whose commands are written as text, string or conversational: the unsafe
    ones score lower, are flagged and reach review, tied to the run and TRL's step."""
    run = f"trl-agent-{'conv' if conversational else 'text'}-{uuid.uuid4().hex[:8]}"
    prompt = f"Fix tests/test_parser.py ({run})"
    if conversational:
        rows = {"prompt": [[{"role": "user", "content": prompt}]] * 8}
    else:
        rows = {"prompt": [prompt + "\n"] * 8}
    reward = Recording(run=run)
    train(tmp_path, Dataset.from_dict(rows), reward, rollout_func=agent_rollouts)
    seen = reward.outputs
    assert len(seen) == 2 and all(len(batch) == 4 for batch in seen)
    assert all(r is not None for batch in seen for r in batch)
    for batch in seen:  # the force push and the deleted test cost, in text and in chat alike
        assert all(batch[i] > batch[i + 1] for i in range(0, 4, 2)), batch  # type: ignore[operator]
    records = hub_env.records(run, expected=8)
    assert len(records) == 8 and sorted({r["step"] for r in records}) == [0, 1]
    flagged = [r for r in records if r["unsafe"]]
    assert len(flagged) == 4
    assert hub_env.reviewed(flagged) == {r["scoring_id"] for r in flagged}
    report(
        "TRL GRPOTrainer, agent rollouts (rollout_func)", trl.__version__, samples=8,
        scored=sum(r is not None for batch in seen for r in batch), records=records,
        routed=len(hub_env.reviewed(records)),
    )  # fmt: skip
    reward.close()


def test_grpo_step_of_1024_samples_loses_none(hub_env, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """One step of 1,024 agent rollouts: the reward function sends them in the client's
    batches, and every sample gets its reward, its record and (flagged) review."""
    run = f"trl-1024-{uuid.uuid4().hex[:8]}"
    rows = {"prompt": [f"Fix tests/test_parser.py ({run})\n"] * 1024}
    reward = Recording(run=run)
    dataset = Dataset.from_dict(rows)
    train(tmp_path, dataset, reward, steps=1, batch=1024, rollout_func=agent_rollouts)
    (seen,) = reward.outputs
    assert len(seen) == 1024 and all(r is not None for r in seen)
    records = hub_env.records(run, expected=1024, wait=60)
    assert len(records) == 1024 and {r["step"] for r in records} == {0}
    flagged = [r for r in records if r["unsafe"]]
    assert len(flagged) == 512
    assert hub_env.reviewed(flagged) == {r["scoring_id"] for r in flagged}
    report(
        "TRL GRPOTrainer, agent rollouts (rollout_func)", trl.__version__, samples=1024,
        scored=sum(r is not None for r in seen), records=records,
        routed=len(hub_env.reviewed(records)),
    )  # fmt: skip
    reward.close()
