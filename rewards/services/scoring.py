"""Scoring: resolve a reward model reference, score with the cached scorer, record off the hot path.

The request path does no per-rollout INSERT: results are queued in process memory and written in
bulk by a background thread (``ScoringRecorder``). Flagged rollouts, and a configurable random
sample of the rest, are imported as trajectories so they reach the review queues.
"""

from __future__ import annotations

import atexit
import logging
import random
import threading
import uuid
from collections import OrderedDict, deque
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import orjson
from django.conf import settings
from django.db import (
    DataError,
    IntegrityError,
    close_old_connections,
    connections,
    router,
    transaction,
)
from django.db.backends.base.base import BaseDatabaseWrapper
from django.utils import timezone

from core.canonical import TrajectoryError
from rewards.models import LearnedStatus, RewardModel, RewardModelVersion, ScoringRecord
from rewards.scoring import (
    Scorer,
    TextSample,
    WorkBudget,
    get_scorer,
    text_sample,
    with_text_actions,
)

logger = logging.getLogger(__name__)


class UnknownRewardModel(LookupError):
    """The slug or version does not exist, or no version is active (-> 404)."""


@dataclass(frozen=True)
class ResolvedVersion:
    pk: int
    slug: str
    number: int
    digest: str
    spec: dict[str, Any] = field(repr=False, compare=False)


# Versions are immutable, so a resolved version can be kept for the life of the process (up to
# settings.CACHE_LIMITS["REWARD_MODEL_VERSIONS"] of them; a full cache starts over).
_VERSIONS: dict[int, ResolvedVersion] = {}
_PINNED: dict[tuple[str, int], int] = {}


def _versions_limit() -> int:
    return settings.CACHE_LIMITS["REWARD_MODEL_VERSIONS"]


def _load_version(pk: int) -> ResolvedVersion:
    cached = _VERSIONS.get(pk)
    if cached is None:
        row = RewardModelVersion.objects.select_related("reward_model").get(pk=pk)
        cached = ResolvedVersion(row.pk, row.reward_model.slug, row.number, row.digest, row.spec)
        if len(_VERSIONS) >= _versions_limit():
            _VERSIONS.clear()
        _VERSIONS[pk] = cached
    return cached


_ACTIVE_SQL: dict[str, str] = {}


def _active_version_row(slug: str) -> tuple[int | None] | None:
    """``SELECT active_version_id ... WHERE slug = %s LIMIT 1`` (the unique slug index).

    The SQL is the ORM's own, compiled once per process and database: this runs on every
    scoring request, and compiling the queryset each time cost about as much as the query."""
    alias = router.db_for_read(RewardModel)
    sql = _ACTIVE_SQL.get(alias)
    if sql is None:
        query = RewardModel.objects.filter(slug="").values_list("active_version_id")[:1].query
        sql, params = query.get_compiler(using=alias).as_sql()
        if tuple(params) != ("",):  # pragma: no cover - should the ORM ever inline the slug
            raise RuntimeError(f"unexpected parameters in {sql!r}: {params!r}")
        _ACTIVE_SQL[alias] = sql
    with connections[alias].cursor() as cursor:
        cursor.execute(sql, [slug])
        return cursor.fetchone()


def resolve_reward_model(ref: str) -> ResolvedVersion:
    """``slug`` is the active version (one indexed query); ``slug@N`` is pinned (cached)."""
    slug, sep, number = ref.partition("@")
    if sep:
        if not (number.isascii() and number.isdigit()):
            raise UnknownRewardModel(f"bad version in {ref!r}: expected slug@N")
        key = (slug, int(number))
        pk = _PINNED.get(key)
        if pk is None:
            found = (
                RewardModelVersion.objects.filter(reward_model__slug=slug, number=int(number))
                .values_list("pk", flat=True)
                .first()
            )
            if found is None:
                raise UnknownRewardModel(f"unknown reward model version {ref!r}")
            if len(_PINNED) >= _versions_limit():
                _PINNED.clear()
            pk = _PINNED[key] = found
        return _load_version(pk)
    row = _active_version_row(slug)
    if row is None:
        raise UnknownRewardModel(f"unknown reward model {slug!r}")
    if row[0] is None:
        raise UnknownRewardModel(f"reward model {slug!r} has no active version")
    return _load_version(row[0])


def version_by_pk(pk: int) -> ResolvedVersion:
    """A version by primary key (cached for the process: versions are immutable)."""
    return _load_version(pk)


def request_budget() -> WorkBudget:
    """What one API request may have analyzed: ``REWARDHUB_LIMITS["MAX_REQUEST_COMMANDS"]``
    shell commands and ``["MAX_REQUEST_COMMAND_CHARS"]`` characters of them, over all its
    trajectories (or the commands of an analyze request), in ``SAFETY["REQUEST_SECONDS"]``."""
    limits = settings.REWARDHUB_LIMITS
    return WorkBudget(
        limits["MAX_REQUEST_COMMANDS"],
        limits["MAX_REQUEST_COMMAND_CHARS"],
        max_seconds=settings.SAFETY["REQUEST_SECONDS"],
    )


def scorer_for(version: ResolvedVersion) -> Scorer:
    if version.spec.get("learned"):
        # Imported here: the learned path loads torch, which plain specs never need.
        from rewards.services.learned import learned_scorer

        return learned_scorer(version.spec, version.digest)
    return get_scorer(version.spec, digest=version.digest)


def score_response(
    version: ResolvedVersion,
    trajectory: dict[str, Any],
    rollout: dict[str, Any] | None,
    *,
    scored_by: int | None = None,
    api_key: int | None = None,
    defer_learned: bool = False,
    source_bytes: int | None = None,
    budget: WorkBudget | None = None,
    text_actions: bool = True,
) -> dict[str, Any]:
    """Score one C1 trajectory into a C2 response and queue its record; TrajectoryError escapes.

    Assistant messages that write their actions as text (no ``tool_calls``) are read by the
    task type's text format first (``rewards.scoring.with_text_actions``), so a command in a
    fenced bash block is checked like a tool call; ``text_actions=False`` when the trajectory
    was made from text already (``score_text``).

    With learned components, the response adds ``learned_status``: ``included``, or, when
    ``defer_learned`` (the score API's latency budget), ``pending`` when the steps the
    embedding caches do not hold exceed
    ``settings.LEARNED["SYNC_MAX_UNCACHED_STEPS"]``: the learned part is then left out of
    this response (its contribution is 0; ``breakdown.learned.components[i].pending`` is
    true) and the Celery task ``rewardhub.score_learned`` scores it once the record is
    written, rewriting the record's reward (see ``rewards.services.learned_scoring``).

    ``source_bytes``: the size of the request body the trajectory came from, if known.
    ``budget``: the request's shell-analysis budget (``request_budget``), charged before the
    trajectory's commands are analyzed; ``WorkLimitExceeded`` escapes past it."""
    scorer = scorer_for(version)
    if text_actions:
        trajectory = with_text_actions(
            trajectory, scorer.text_format, shell_tool=scorer.shell_tools[0]
        )
    if defer_learned and version.spec.get("learned"):
        from rewards.services.learned import learned_sync_budget, sync_budget_setting

        with learned_sync_budget(sync_budget_setting()):
            result = scorer.score(trajectory, source_bytes=source_bytes, budget=budget)
    else:
        result = scorer.score(trajectory, source_bytes=source_bytes, budget=budget)
    response = result.to_dict()
    scoring_id = uuid.uuid4().hex
    response["reward_model"] = {
        "slug": version.slug,
        "version": version.number,
        "digest": version.digest,
    }
    response["scoring_id"] = scoring_id
    if version.spec.get("learned"):
        response["learned_status"] = (
            LearnedStatus.PENDING if result.learned_pending else LearnedStatus.INCLUDED
        ).value
    learned_pending = response.get("learned_status") == LearnedStatus.PENDING
    route = bool(response.get("findings")) or (
        random.random() < settings.SCORING["REVIEW_SAMPLE_RATE"]  # noqa: S311
    )
    keep = route or learned_pending
    recorder.add(
        PendingRecord(
            scoring_id=scoring_id,
            version_pk=version.pk,
            # a queued record holds its trajectory (tens of KB) only when it will need it
            trajectory=trajectory if keep else None,
            rollout=rollout or {},
            response=response if keep else None,
            columns=queued_result_columns(response),
            unsafe=bool(result.unsafe),
            created_at=timezone.now(),
            scored_by=scored_by,
            api_key=api_key,
            digest=_digest(trajectory),
            route=route,
        )
    )
    return response


def score_text(
    version: ResolvedVersion,
    query: str,
    prompt: str,
    label: Any,
    rollout: dict[str, Any] | None,
    *,
    scored_by: int | None = None,
    api_key: int | None = None,
    budget: WorkBudget | None = None,
) -> tuple[dict[str, Any], TextSample]:
    """Score one text rollout (C3) through the same path as the score API: the text becomes a
    C1 trajectory (``rewards.scoring.text_sample``: prompt/response split, steps by the task
    type's text format, the label as outcome or reference), then ``score_response`` scores,
    records and routes it. Returns the C2 response and the sample (steps, split)."""
    scorer = scorer_for(version)
    sample = text_sample(query, prompt, label, scorer.text_format, shell_tool=scorer.shell_tools[0])
    kwargs: dict[str, Any] = {
        "scored_by": scored_by,
        "api_key": api_key,
        "text_actions": False,
        "budget": budget,
    }
    try:
        response = score_response(version, sample.trajectory, rollout, **kwargs)
    except TrajectoryError as exc:
        # A label whose outcome does not validate (tests_passed: -1) scores as no outcome.
        if not exc.errors or not all(key.startswith("outcome") for key in exc.errors):
            raise
        sample.trajectory["outcome"] = {}
        response = score_response(version, sample.trajectory, rollout, **kwargs)
    return response, sample


def _digest(trajectory: dict[str, Any]) -> str:
    from core.canonical import content_digest

    try:
        return content_digest(trajectory)
    except Exception:  # the trajectory scored, so this only guards odd inputs
        return ""


@dataclass
class PendingRecord:
    scoring_id: str
    version_pk: int
    trajectory: dict[str, Any] | None  # kept only to route to review or score the learned part
    rollout: dict[str, Any]
    # The C2 response, kept (like the trajectory) only to route to review or score the learned
    # part: hundreds of records wait in the queue, and the collector traced every object of
    # every response on each pass (a tenth of a scoring's CPU). What the row needs is in columns.
    response: dict[str, Any] | None
    columns: dict[str, Any]  # queued_result_columns(response): plain values only
    unsafe: bool
    created_at: datetime
    scored_by: int | None = None  # user id (the key's owner): scopes who may read the record
    api_key: int | None = None
    digest: str = ""
    route: bool = False  # flagged, or drawn by REVIEW_SAMPLE_RATE: becomes a stored trajectory


def queued_result_columns(response: dict[str, Any]) -> dict[str, Any]:
    """The record's columns that come from the response, as plain values (the breakdown as
    JSON bytes), so a queued record holds no container the collector must trace."""
    fields = record_result_fields(response)
    breakdown = orjson.dumps(fields.pop("breakdown"))
    # A new dict that never holds a container (one that did stays tracked until a collection)
    return {
        **fields,
        "breakdown": breakdown,
        "finding_count": len(response.get("findings", [])),
        "learned_status": response.get("learned_status", ""),
    }


def _record_values(item: PendingRecord) -> dict[str, Any]:
    """The scoring record's column values by field name (one place for both ways of writing);
    ``breakdown`` is JSON bytes."""
    rollout = item.rollout
    step = rollout.get("step")
    return {
        "scoring_id": item.scoring_id,
        "version_id": item.version_pk,
        "trajectory_digest": item.digest,
        "run": str(rollout.get("run", ""))[:200],
        "step": step if isinstance(step, int) and not isinstance(step, bool) else None,
        "sample": str(rollout.get("sample", ""))[:200],
        "unsafe": item.unsafe,
        "created_at": item.created_at,
        "scored_by_id": item.scored_by,
        "api_key_id": item.api_key,
        **item.columns,
    }


def _record_row(item: PendingRecord) -> ScoringRecord:
    values = _record_values(item)
    values["breakdown"] = orjson.loads(values["breakdown"])
    return ScoringRecord(**values)


def record_result_fields(response: dict[str, Any]) -> dict[str, Any]:
    """The scoring record's columns that a (re)score sets: reward parts and the breakdown."""
    return {
        "reward": response["reward"],
        "outcome_reward": response["outcome_reward"],
        "process_reward": response["process_reward"],
        "gated": bool(response["gated"]),
        "breakdown": {
            "steps": [s["reward"] for s in response["steps"]],
            **response.get("breakdown", {}),
        },
    }


class ScoringRecorder:
    """A bounded in-memory queue flushed in bulk by one daemon thread per process.

    Bounded: under a flood the oldest unflushed records are dropped (and counted) rather than
    growing memory without limit; scoring itself never waits on the database.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._queue: deque[PendingRecord] = deque()
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None
        self._pid = 0
        self.dropped = 0
        self.rejected = 0  # records the database refused (logged); validation should stop them
        self.written = 0

    def add(self, item: PendingRecord) -> None:
        cfg = settings.SCORING
        with self._lock:
            if len(self._queue) >= cfg["RECORD_QUEUE_MAX"]:
                self._queue.popleft()
                self.dropped += 1
                if self.dropped & (self.dropped - 1) == 0:  # 1, 2, 4, 8, ...: not every time
                    logger.warning("scoring records dropped: %d so far (queue full, database "
                                   "slow or down)", self.dropped)  # fmt: skip
            self._queue.append(item)
        if not cfg["RECORD_IN_BACKGROUND"]:
            return
        self._ensure_thread()
        if len(self._queue) >= cfg["RECORD_BATCH"]:
            self._wake.set()

    def _ensure_thread(self) -> None:
        import os

        if self._thread is not None and self._thread.is_alive() and self._pid == os.getpid():
            return
        with self._lock:
            if self._thread is not None and self._thread.is_alive() and self._pid == os.getpid():
                return
            self._pid = os.getpid()  # a forked worker starts its own thread
            self._thread = threading.Thread(target=self._run, name="scoring-recorder", daemon=True)
            self._thread.start()

    def _run(self) -> None:
        while settings.SCORING["RECORD_IN_BACKGROUND"]:
            self._wake.wait(settings.SCORING["RECORD_FLUSH_SECONDS"])
            self._wake.clear()
            try:
                self.flush()
            except Exception:
                logger.exception("writing scoring records failed; will retry")
            finally:
                close_old_connections()

    def pending(self) -> int:
        return len(self._queue)

    def discard(self) -> int:
        """Drop everything queued and forget what was routed (tests start from a clean slate)."""
        with self._lock:
            count = len(self._queue)
            self._queue.clear()
            _ROUTED.clear()
        return count

    def _insert(self, batch: list[PendingRecord]) -> list[PendingRecord]:
        """Writes the records; returns those written. A value the database refuses (not an
        outage, which raises) makes it write them one by one, so a bad record costs only itself
        and never blocks the queue behind it."""
        try:
            _insert_records(batch)
        except DataError:
            return self._insert_each(batch)
        return batch

    def _insert_each(self, batch: list[PendingRecord]) -> list[PendingRecord]:
        """Writes the records one at a time; returns those written, logs and counts the rest."""
        written = []
        for item in batch:
            try:
                _insert_records([item])
            except DataError as exc:
                self.rejected += 1
                logger.error("scoring record %s cannot be stored: %s", item.scoring_id, exc)
            else:
                written.append(item)
        return written

    def flush(self) -> int:
        """Write everything queued now; returns the number of records written."""
        with self._lock:
            batch = list(self._queue)
            self._queue.clear()
        if not batch:
            return 0
        try:
            batch = self._insert(batch)
        except Exception:
            with self._lock:  # keep them for the next try (bounded by add())
                self._queue.extendleft(reversed(batch))
            raise
        self.written += len(batch)
        _enqueue_learned(batch)
        _route_to_review(batch, [item.digest for item in batch])
        return len(batch)


def _insert_records(batch: list[PendingRecord]) -> None:
    """Writes the records: with ``COPY`` on PostgreSQL, else with ``bulk_create``.

    ``COPY`` costs about a fifth of the CPU of ``bulk_create`` per row (no model instances, no
    client-side quoting of every value), and these rows are written for every scored rollout.
    A batch retried after a failure may hold rows already written; ``COPY`` then fails on the
    unique ``scoring_id`` and the batch is written again, skipping those (``ignore_conflicts``).
    """
    alias = router.db_for_write(ScoringRecord)
    connection = connections[alias]
    if connection.vendor == "postgresql":
        try:
            with transaction.atomic(using=alias), connection.wrap_database_errors:
                _copy_records(connection, batch)
            return
        except IntegrityError:
            pass
    rows = [_record_row(item) for item in batch]
    with transaction.atomic(using=alias):  # a refused row leaves the connection usable
        ScoringRecord.objects.using(alias).bulk_create(rows, ignore_conflicts=True)


def _copy_records(connection: BaseDatabaseWrapper, batch: list[PendingRecord]) -> None:
    from psycopg.types.json import Jsonb

    meta = ScoringRecord._meta
    names = list(_record_values(batch[0]))
    columns = ", ".join(connection.ops.quote_name(meta.get_field(n).column) for n in names)
    sql = f"COPY {connection.ops.quote_name(meta.db_table)} ({columns}) FROM STDIN"
    with connection.cursor() as cursor, cursor.cursor.copy(sql) as copy:
        for item in batch:
            values = _record_values(item)
            # written with orjson when queued (a fifth of the CPU of json.dumps); the same jsonb
            values["breakdown"] = Jsonb(values["breakdown"], dumps=_as_written)
            copy.write_row([values[n] for n in names])


def _as_written(text: bytes) -> bytes:
    """Jsonb's ``dumps`` for a value that is JSON text already."""
    return text


def _enqueue_learned(batch: list[PendingRecord]) -> None:
    """Records whose learned part is pending exist now: score that part in the background."""
    pending = [i for i in batch if i.columns["learned_status"] == LearnedStatus.PENDING]
    if not pending:
        return
    from core.broker import publish
    from rewards.tasks import score_learned

    for n, item in enumerate(pending):
        # publish() gives up fast on a dead broker; the records keep learned_status "pending"
        if not publish(score_learned, item.scoring_id, item.version_pk, item.trajectory):
            logger.warning("the learned part of %d scorings stays pending", len(pending) - n)
            return


# Digests of rollouts already sent to review by this process: a trainer rescoring the same
# rollout (common with repeated prompts) would only hit the importer's duplicate path again.
_ROUTED: OrderedDict[str, None] = OrderedDict()  # settings.CACHE_LIMITS["ROUTED_ROLLOUTS"]


def _route_to_review(batch: list[PendingRecord], digests: list[str]) -> None:
    """Flagged rollouts and a random sample become stored trajectories, hence reviewable."""
    from annotations.services import trajectory_import

    for item, digest in zip(batch, digests, strict=True):
        if not item.route or item.trajectory is None or item.response is None:
            continue
        if digest and digest in _ROUTED:
            continue
        if digest:
            _ROUTED[digest] = None
            while len(_ROUTED) > settings.CACHE_LIMITS["ROUTED_ROLLOUTS"]:
                _ROUTED.popitem(last=False)
        metadata = dict(item.trajectory.get("metadata") or {})
        metadata["scoring"] = {
            "scoring_id": item.scoring_id,
            "reward_model": item.response["reward_model"],
            "rollout": item.rollout,
            "reward": item.response["reward"],
        }
        # A rollout the trainer did not name is named after its scoring, so the stored
        # trajectory can be found from the record (GET /api/v1/trajectories/?external_id=).
        name = item.trajectory.get("id") or f"scoring-{item.scoring_id}"
        try:
            trajectory_import(
                record={**item.trajectory, "id": name, "metadata": metadata}, fmt="openai"
            )
        except Exception:
            logger.exception("could not queue scored rollout %s for review", item.scoring_id)


recorder = ScoringRecorder()


@atexit.register
def _flush_at_exit() -> None:
    try:
        if recorder.pending():
            recorder.flush()
    except Exception:
        logger.exception("scoring records lost at exit")
    finally:
        connections.close_all()
