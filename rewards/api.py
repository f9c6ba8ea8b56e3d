"""REST endpoints of the reward domain: score (C2), OpenRLHF (C3), task types, behaviours,
reward models with compile / activate / rollback / diff, and the scoring record stream."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError as DjangoValidationError
from django.db.models import Prefetch
from django.http import Http404, HttpResponse
from drf_spectacular.utils import (
    OpenApiParameter,
    PolymorphicProxySerializer,
    extend_schema,
    extend_schema_view,
)
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import NotFound, PermissionDenied, ValidationError
from rest_framework.permissions import BasePermission
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.throttling import ScopedRateThrottle
from rest_framework.views import APIView

from annotations.api import TrajectoryViewSet
from core.api_errors import PayloadTooLarge, errors_by_field
from core.authentication import (
    ApiKeyAuthentication,
    BasicApiKeyAuthentication,
    PathApiKeyAuthentication,
)
from core.canonical import TrajectoryError
from core.models import ApiKey
from core.params import parse_int
from core.parsers import ReleasesParsedBody
from core.permissions import (
    CanCompileRewards,
    CanEditEvaluationSets,
    CanEditRewards,
    CanReadRewards,
    CanScore,
)
from rewards import scoping
from rewards import selectors as reward_selectors
from rewards.evaluation import CaseError, line_messages, parse_case
from rewards.models import (
    EvaluationRun,
    EvaluationSet,
    EvaluationSetVersion,
    LearnedStatus,
    RewardModel,
    RewardModelVersion,
    ScoringRecord,
    TaskType,
    TrainingRun,
    TrustedBehaviour,
)
from rewards.scoring import WorkLimitExceeded, openrlhf_sends_extra_logs, text_logs, unit_score
from rewards.serializers import (
    STEP_MAX,
    ActivateInputSerializer,
    AttachSetInputSerializer,
    BatchScoreInputSerializer,
    C2BatchResponseDoc,
    C2ScoreResponseDoc,
    CompileInputSerializer,
    EvaluateInputSerializer,
    EvaluationCasesInputSerializer,
    EvaluationImportInputSerializer,
    EvaluationSetSerializer,
    FlagToSetInputSerializer,
    OpenRLHFInputSerializer,
    PairToSetInputSerializer,
    RewardModelSerializer,
    RewardModelVersionDetailSerializer,
    RewardModelVersionSerializer,
    ScoreInputSerializer,
    TaskTypeSerializer,
    TrustedBehaviourSerializer,
    checked_rollout,
)
from rewards.services import evaluation as evaluation_services
from rewards.services import rewards as reward_services
from rewards.services import scoring as scoring_services
from rewards.services import training as training_services
from rewards.services.evaluation import ActivationRefused


def _django_errors(exc: DjangoValidationError) -> dict[str, list[str]]:
    return errors_by_field(exc, "non_field_errors")


def _check_message_limit(trajectory: Any, field: str) -> None:
    messages = trajectory.get("messages") if isinstance(trajectory, dict) else None
    limit = settings.REWARDHUB_LIMITS["MAX_MESSAGES"]
    if isinstance(messages, list) and len(messages) > limit:
        raise PayloadTooLarge(f"{field}: {len(messages)} messages is over the limit of {limit}.")


def _body_bytes(request: Request) -> int | None:
    """The request body's declared length: Django reads no byte past ``Content-Length``, so it
    bounds the JSON text every trajectory in the body came from (``None`` if not given)."""
    try:
        length = int(request.META.get("CONTENT_LENGTH") or "")
    except ValueError:
        return None
    return length if length >= 0 else None


def _resolve(request: Request, ref: str) -> scoring_services.ResolvedVersion:
    """The version ``ref`` names, if the caller's key may use it (else 404, as if unknown)."""
    scoping.require_reward_model(request, ref)
    try:
        return scoring_services.resolve_reward_model(ref)
    except scoring_services.UnknownRewardModel as exc:
        raise NotFound(str(exc)) from exc


def _prefixed(prefix: str, errors: dict[str, list[str]]) -> dict[str, list[str]]:
    return {
        f"{prefix}.{key}" if key != "non_field_errors" else prefix: v for key, v in errors.items()
    }


class ScoreView(ReleasesParsedBody, APIView):
    """Score one trajectory with a reward model (CONTRACTS C2). API keys need the `score` scope."""

    schema_not_found = True  # unknown reward model or version: 404
    # NUL text is allowed in the scored trajectory (it never reaches a column); a flagged or
    # sampled rollout that holds some cannot be stored for review and is logged instead.
    unstored_json_fields = ("trajectory",)
    permission_classes = [CanScore]
    throttle_classes = [ScopedRateThrottle]
    throttle_scope = "score"

    @extend_schema(request=ScoreInputSerializer, responses={200: C2ScoreResponseDoc})
    def post(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        data = ScoreInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        trajectory = data.validated_data["trajectory"]
        _check_message_limit(trajectory, "trajectory")
        version = _resolve(request, data.validated_data["reward_model"])
        try:
            body = scoring_services.score_response(
                version,
                trajectory,
                data.validated_data.get("rollout"),
                defer_learned=True,
                source_bytes=_body_bytes(request),
                budget=scoring_services.request_budget(),
                **scoping.record_owner(request),
            )
        except TrajectoryError as exc:
            raise ValidationError(_prefixed("trajectory", exc.errors)) from exc
        except WorkLimitExceeded as exc:
            raise PayloadTooLarge(f"trajectory: {exc}") from exc
        finally:
            self.release(request, data)
        return Response(body)


class BatchScoreView(ReleasesParsedBody, APIView):
    """Score many trajectories with one reward model; results in the same order."""

    schema_not_found = True  # unknown reward model or version: 404
    unstored_json_fields = ("trajectories",)  # as in ScoreView
    permission_classes = [CanScore]
    throttle_classes = [ScopedRateThrottle]
    throttle_scope = "score"

    @extend_schema(request=BatchScoreInputSerializer, responses={200: C2BatchResponseDoc})
    def post(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        data = BatchScoreInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        trajectories = data.validated_data["trajectories"]
        limit = settings.SCORING["MAX_BATCH"]
        if len(trajectories) > limit:
            raise PayloadTooLarge(
                f"{len(trajectories)} trajectories is over the batch limit of {limit}."
            )
        for i, trajectory in enumerate(trajectories):
            _check_message_limit(trajectory, f"trajectories[{i}]")
        version = _resolve(request, data.validated_data["reward_model"])
        owner = scoping.record_owner(request)
        body_bytes = _body_bytes(request)
        budget = scoring_services.request_budget()  # one for the whole batch
        rollouts = data.validated_data.get("rollouts") or [None] * len(trajectories)
        results, errors = [], {}
        for i, trajectory in enumerate(trajectories):
            try:
                results.append(
                    scoring_services.score_response(
                        version,
                        trajectory,
                        rollouts[i] or None,
                        defer_learned=True,
                        source_bytes=body_bytes,
                        budget=budget,
                        **owner,
                    )
                )
            except TrajectoryError as exc:
                errors.update(_prefixed(f"trajectories[{i}]", exc.errors))
            except WorkLimitExceeded as exc:
                self.release(request, data)
                raise PayloadTooLarge(f"trajectories (at [{i}]): {exc}") from exc
        self.release(request, data)
        if errors:
            raise ValidationError(errors)
        return Response({"results": results})


class OpenRLHFView(ReleasesParsedBody, APIView):
    """OpenRLHF's remote reward protocol (CONTRACTS C3). OpenRLHF sends no auth header of its
    own, so the key may also come as the URL's user part (``http://rewardhub:KEY@host/...``,
    sent by the HTTP library as basic credentials and left out of the URLs it prints: the form
    to use) or as the last path segment (which the service never logs, see rewardhub.logging,
    but OpenRLHF prints with the URL of every failed try).

    Each sample goes through the score API's own path (``scoring_services.score_text``): parsed
    into a C1 trajectory, scored, recorded with its rollout tag, routed to review when flagged.
    Tags: ``rollouts`` in the body (one per sample), else the URL's ``?run=&step=&sample=``.
    ``?openrlhf=0.8`` (or ``RH_OPENRLHF_COMPAT=0.8`` for every request) leaves ``extra_logs``
    out (OpenRLHF 0.8 concatenates them as tensors and fails on lists)."""

    authentication_classes = [
        PathApiKeyAuthentication,
        ApiKeyAuthentication,
        BasicApiKeyAuthentication,
    ]
    # Scored text is never stored as such: NUL and unpaired surrogates are scored like on every
    # other path (a flagged rollout holding some is logged instead of stored for review).
    unstored_json_fields = ("query", "prompts", "labels")
    permission_classes = [CanScore]
    throttle_classes = [ScopedRateThrottle]
    throttle_scope = "score"

    @extend_schema(
        request=OpenRLHFInputSerializer,
        responses={200: dict},
        parameters=[
            OpenApiParameter("run", str, description="rollout run of every sample"),
            OpenApiParameter("step", int, description="rollout step of every sample"),
            OpenApiParameter("sample", str, description="rollout sample of every sample"),
            OpenApiParameter(
                "openrlhf",
                str,
                description="the trainer's OpenRLHF version; 0.8 leaves extra_logs out "
                "(default RH_OPENRLHF_COMPAT)",
            ),
        ],
    )
    def post(self, request: Request, reward_model: str, *args: Any, **kwargs: Any) -> Response:
        data = OpenRLHFInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        queries = data.validated_data["query"]
        limit = settings.SCORING["TEXT_MAX_BATCH"]
        if len(queries) > limit:
            raise PayloadTooLarge(f"{len(queries)} queries is over the batch limit of {limit}.")
        n = len(queries)
        prompts = data.validated_data.get("prompts") or [""] * n
        labels = data.validated_data.get("labels") or [None] * n
        shared = self._url_rollout(request)
        sends_extra_logs = self._sends_extra_logs(request)
        tags = data.validated_data.get("rollouts") or [{}] * n
        version = _resolve(request, reward_model)
        bounds = scoring_services.scorer_for(version).reward_bounds
        owner = scoping.record_owner(request)
        rewards: list[float] = []
        scores: list[float] = []
        ids: list[str] = []
        extra: dict[str, list[float]] = {}
        process: list[list[dict[str, float]]] = []
        errors: dict[str, list[str]] = {}
        budget = scoring_services.request_budget()
        for i, (query, prompt, label) in enumerate(zip(queries, prompts, labels, strict=True)):
            rollout = {**shared, **tags[i]} or None
            try:
                response, sample = scoring_services.score_text(
                    version, query, prompt, label, rollout, budget=budget, **owner
                )
            except TrajectoryError as exc:
                errors.update(_prefixed(f"query[{i}]", exc.errors))
                continue
            except WorkLimitExceeded as exc:
                raise PayloadTooLarge(f"query (at [{i}]): {exc}") from exc
            rewards.append(response["reward"])
            scores.append(unit_score(response["reward"], bounds))
            ids.append(response["scoring_id"])
            logs = text_logs(response, sample)
            offsets = logs.pop("step_end_offsets")
            step_rewards = logs.pop("step_rewards")
            process.append(
                [{"offset": o, "reward": r} for o, r in zip(offsets, step_rewards, strict=False)]
            )
            for name, value in logs.items():
                extra.setdefault(name, []).append(float(value))
        self.release(request, data)
        if errors:
            raise ValidationError(errors)
        body: dict[str, Any] = {"rewards": rewards, "scores": scores}
        if sends_extra_logs:
            body["extra_logs"] = extra
        body.update(
            {
                # Per-step process rewards with the character offset where each step ends.
                "process_rewards": process,
                "scoring_ids": ids,
                "reward_model": {
                    "slug": version.slug,
                    "version": version.number,
                    "digest": version.digest,
                },
            }
        )
        return Response(body)

    @staticmethod
    def _sends_extra_logs(request: Request) -> bool:
        """``?openrlhf=VERSION``, else ``RH_OPENRLHF_COMPAT``: 0.8 gets no ``extra_logs``."""
        version = request.query_params.get("openrlhf")
        if version is None:
            version = settings.SCORING["OPENRLHF_COMPAT"]
        try:
            return openrlhf_sends_extra_logs(version)
        except ValueError as exc:
            raise ValidationError({"openrlhf": [str(exc)]}) from exc

    @staticmethod
    def _url_rollout(request: Request) -> dict[str, Any]:
        """The URL's rollout tag (``?run=&step=&sample=``), checked like C2's ``rollout``."""
        params = request.query_params
        tag = {k: params[k] for k in ("run", "step", "sample") if params.get(k) not in (None, "")}
        if not tag:
            return {}
        try:
            return checked_rollout(tag)
        except serializers.ValidationError as exc:
            detail = exc.detail if isinstance(exc.detail, dict) else {}
            raise ValidationError({f"rollout.{k}": v for k, v in detail.items()}) from exc


class ScopedTrajectoryViewSet(TrajectoryViewSet):
    """Trajectories (``annotations.api``) as API keys may see them: a rollout the score API
    routed to review is scoped like its scoring record (``rewards.scoping``). The project
    routes this class, never the unscoped one."""

    def get_queryset(self):  # type: ignore[no-untyped-def]
        return scoping.trajectories_for(self.request, super().get_queryset())


class CompiledVersionSerializer(RewardModelVersionSerializer):
    """A compile's answer: 201 with ``created`` true, or 200 when the spec was already compiled."""

    created = serializers.BooleanField(read_only=True)

    class Meta(RewardModelVersionSerializer.Meta):
        fields = [*RewardModelVersionSerializer.Meta.fields, "created"]
        read_only_fields = fields


class _RewardDomainViewSet(viewsets.ModelViewSet):
    """Reads for any role (and `read` keys); writes for experts and admins only."""

    def get_permissions(self) -> list[BasePermission]:
        if self.action in ("list", "retrieve", "versions", "diff", "evaluation"):
            return [CanReadRewards()]
        if self.action in ("compile", "activate", "rollback", "evaluate", "attach_set"):
            return [CanCompileRewards()]
        return [CanEditRewards()]

    def perform_destroy(self, instance: Any) -> None:
        from django.db.models import ProtectedError

        try:
            instance.delete()
        except ProtectedError as exc:
            raise ValidationError({"non_field_errors": [f"still in use: {exc.args[0]}"]}) from exc


class TaskTypeViewSet(_RewardDomainViewSet):
    queryset = TaskType.objects.select_related("policy").order_by("slug")
    serializer_class = TaskTypeSerializer
    lookup_field = "slug"


class TrustedBehaviourViewSet(_RewardDomainViewSet):
    serializer_class = TrustedBehaviourSerializer

    def get_queryset(self):  # type: ignore[no-untyped-def]
        qs = TrustedBehaviour.objects.select_related("task_type").order_by(
            "task_type__slug", "slug"
        )
        if task_type := self.request.query_params.get("task_type"):
            qs = qs.filter(task_type__slug=task_type)
        return qs


class RewardModelViewSet(_RewardDomainViewSet):
    queryset = RewardModel.objects.select_related("task_type", "active_version").order_by("slug")
    serializer_class = RewardModelSerializer
    lookup_field = "slug"

    def get_queryset(self):  # type: ignore[no-untyped-def]
        return scoping.reward_models_for(self.request, super().get_queryset())

    def _version(self, reward_model: RewardModel, number: Any, field: str) -> RewardModelVersion:
        try:
            return reward_model.versions.get(number=int(number))
        except (TypeError, ValueError) as exc:
            raise ValidationError({field: ["expected a version number"]}) from exc
        except RewardModelVersion.DoesNotExist as exc:
            raise NotFound(f"{reward_model.slug} has no version {number}") from exc

    @extend_schema(
        request=CompileInputSerializer,
        responses={201: CompiledVersionSerializer, 200: CompiledVersionSerializer},
    )
    @action(detail=True, methods=["post"])
    def compile(self, request: Request, slug: str | None = None, **kwargs: Any) -> Response:
        reward_model = self.get_object()
        data = CompileInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        try:
            result = reward_services.reward_model_compile(
                reward_model=reward_model,
                user=request.user,  # type: ignore[arg-type]
                note=data.validated_data.get("note", ""),
                activate=data.validated_data["activate"],
            )
        except ActivationRefused as exc:  # compiled and kept, not activated
            raise ValidationError(_refusal_body(exc)) from exc
        except DjangoValidationError as exc:
            raise ValidationError(_django_errors(exc)) from exc
        body = RewardModelVersionSerializer(result.version).data
        body["created"] = result.created
        return Response(
            body, status=status.HTTP_201_CREATED if result.created else status.HTTP_200_OK
        )

    @extend_schema(request=ActivateInputSerializer, responses=RewardModelSerializer)
    @action(detail=True, methods=["post"])
    def activate(self, request: Request, slug: str | None = None, **kwargs: Any) -> Response:
        reward_model = self.get_object()
        data = ActivateInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        version = self._version(reward_model, data.validated_data["version"], "version")
        try:
            reward_services.reward_model_activate(
                reward_model=reward_model,
                version=version,
                user=request.user,  # type: ignore[arg-type]
                override_reason=data.validated_data.get("override_reason", ""),
            )
        except ActivationRefused as exc:
            raise ValidationError(_refusal_body(exc)) from exc
        except DjangoValidationError as exc:
            raise ValidationError(_django_errors(exc)) from exc
        return Response(RewardModelSerializer(reward_model).data)

    @extend_schema(request=None, responses=RewardModelSerializer)
    @action(detail=True, methods=["post"])
    def rollback(self, request: Request, slug: str | None = None, **kwargs: Any) -> Response:
        reward_model = self.get_object()
        try:
            reward_services.reward_model_rollback(reward_model=reward_model)
        except DjangoValidationError as exc:
            raise ValidationError(_django_errors(exc)) from exc
        return Response(RewardModelSerializer(reward_model).data)

    @extend_schema(
        parameters=[
            OpenApiParameter("number", int, description="one version, with its compiled spec")
        ],
        responses=PolymorphicProxySerializer(
            component_name="RewardModelVersions",
            serializers=[
                RewardModelVersionSerializer(many=True),
                RewardModelVersionDetailSerializer,
            ],
            resource_type_field_name=None,
            many=False,
        ),
    )
    @action(detail=True, methods=["get"], pagination_class=None)
    def versions(self, request: Request, slug: str | None = None, **kwargs: Any) -> Response:
        reward_model = self.get_object()
        number = request.query_params.get("number")
        if number:
            version = self._version(reward_model, number, "number")
            return Response(RewardModelVersionDetailSerializer(version).data)
        rows = reward_model.versions.select_related("policy_version__policy").order_by("-number")
        return Response(RewardModelVersionSerializer(rows, many=True).data)

    @extend_schema(
        parameters=[OpenApiParameter("a", int), OpenApiParameter("b", int)],
        responses={200: dict},
    )
    @action(detail=True, methods=["get"])
    def diff(self, request: Request, slug: str | None = None, **kwargs: Any) -> Response:
        reward_model = self.get_object()
        before = self._version(reward_model, request.query_params.get("a"), "a")
        after = self._version(reward_model, request.query_params.get("b"), "b")
        changes = reward_services.reward_model_diff(before=before, after=after)
        return Response(
            {
                "a": before.number,
                "b": after.number,
                "policy_changed": before.spec["safety"]["policy"] != after.spec["safety"]["policy"],
                "changes": [c.to_dict() for c in changes],
            }
        )

    @extend_schema(request=EvaluateInputSerializer, responses={202: dict})
    @action(detail=True, methods=["post"])
    def evaluate(self, request: Request, slug: str | None = None, **kwargs: Any) -> Response:
        """Queue an evaluation of a version on the attached sets (progress: evaluation-runs)."""
        reward_model = self.get_object()
        data = EvaluateInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        version = self._version(reward_model, data.validated_data["version"], "version")
        set_versions = evaluation_services.attached_set_versions(reward_model)
        named = data.validated_data.get("sets", [])
        found = {s.slug: s for s in _visible_sets(request).filter(slug__in=named)}
        errors: dict[str, list[str]] = {}
        for i, slug_ in enumerate(named):
            newest = found[slug_].prefetched_versions if slug_ in found else None
            if not newest:
                errors[f"sets.{i}"] = ["no such evaluation set, or it has no case yet"]
            elif newest[0].pk not in {v.pk for v in set_versions}:
                set_versions.append(newest[0])
        if errors:
            raise ValidationError(errors)
        run = evaluation_services.evaluation_run_request(
            version=version,
            user=request.user,  # type: ignore[arg-type]
            set_versions=set_versions,
        )
        if run is None:
            raise ValidationError({"version": ["no evaluation set is attached to this model"]})
        return Response(_run_body(run), status=status.HTTP_202_ACCEPTED)

    @extend_schema(
        parameters=[
            OpenApiParameter("version", int),
            OpenApiParameter(
                "draft", bool, description="the current inputs with the draft policy instead"
            ),
        ],
        responses=dict,
    )
    @action(detail=True, methods=["get"])
    def evaluation(self, request: Request, slug: str | None = None, **kwargs: Any) -> Response:
        """A version's stored results on the attached sets beside the active version's, with
        the cases it newly catches and newly misses (held-out sets: metrics and keys only)."""
        reward_model = self.get_object()
        see_held_out = not isinstance(
            request.auth, ApiKey
        ) and evaluation_services.can_see_held_out(request.user)
        if request.query_params.get("draft") in ("1", "true"):
            return Response(self._draft(reward_model, see_held_out))
        version = self._version(reward_model, request.query_params.get("version"), "version")
        from rewards.selectors import evaluation_page

        sets = evaluation_page(
            version=version, baseline=reward_model.active_version, can_see_held_out=see_held_out
        )
        body = [
            _set_result(
                s["set_version"],
                s["result"].metrics if s["result"] is not None else None,
                hidden=s["hidden"],
                caught=[k for k, _ in s["newly_caught"]],
                missed=[k for k, _ in s["newly_missed"]],
            )
            for s in sets
        ]
        return Response(_evaluation_body(version.number, reward_model, body))

    def _draft(self, reward_model: RewardModel, see_held_out: bool) -> dict[str, Any]:
        try:
            rows = evaluation_services.draft_comparison(reward_model=reward_model)
        except DjangoValidationError as exc:
            raise ValidationError(_django_errors(exc)) from exc
        from rewards.selectors import held_out_names

        body = []
        for row in rows:
            hidden = row["set_version"].evaluation_set.held_out and not see_held_out
            caught, missed = row["newly_caught"], row["newly_missed"]
            if hidden:
                caught = held_out_names(set_version=row["set_version"], keys=caught)
                missed = held_out_names(set_version=row["set_version"], keys=missed)
            body.append(
                _set_result(
                    row["set_version"], row["metrics"], hidden=hidden, caught=caught, missed=missed
                )
            )
        return _evaluation_body("draft", reward_model, body)

    @extend_schema(request=AttachSetInputSerializer, responses={201: dict})
    @action(detail=True, methods=["post"], url_path="attach-set")
    def attach_set(self, request: Request, slug: str | None = None, **kwargs: Any) -> Response:
        reward_model = self.get_object()
        data = AttachSetInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        evaluation_set = _visible_sets(request).filter(slug=data.validated_data["set"]).first()
        if evaluation_set is None:
            raise ValidationError({"set": ["no such evaluation set"]})
        evaluation_services.evaluation_set_attach(
            reward_model=reward_model,
            evaluation_set=evaluation_set,
            user=request.user,  # type: ignore[arg-type]
        )
        return Response(
            {"reward_model": reward_model.slug, "set": evaluation_set.slug},
            status=status.HTTP_201_CREATED,
        )


class ScoringRecordSerializer(serializers.ModelSerializer):
    reward_model = serializers.SerializerMethodField()

    class Meta:
        model = ScoringRecord
        fields = [
            "id",
            "scoring_id",
            "reward_model",
            "trajectory_digest",
            "run",
            "step",
            "sample",
            "reward",
            "outcome_reward",
            "process_reward",
            "gated",
            "unsafe",
            "finding_count",
            # "pending": the learned part was left out of the response and is being scored in
            # the background; "completed": reward now includes it, provisional_reward is what
            # the response said (see rewards.services.learned_scoring).
            "learned_status",
            "provisional_reward",
            "created_at",
        ]

    def get_reward_model(self, obj: ScoringRecord) -> str:
        return f"{obj.version.reward_model.slug}@{obj.version.number}"


@extend_schema_view(
    list=extend_schema(
        parameters=[
            OpenApiParameter("run", str, description="only records of this rollout run"),
            OpenApiParameter("unsafe", bool, description="only (un)safe rollouts"),
            OpenApiParameter(
                "learned_status",
                str,
                enum=[s.value for s in LearnedStatus if s.value],
                description="where the learned part of the reward stands",
            ),
        ]
    )
)
class ScoringRecordViewSet(mixins.ListModelMixin, viewsets.GenericViewSet):
    """The append-only stream of scored rollouts, newest first, with cursor pagination."""

    permission_classes = [CanReadRewards]
    serializer_class = ScoringRecordSerializer

    def get_queryset(self):  # type: ignore[no-untyped-def]
        # Only what the rows show: the breakdown (about a hundred containers each) would be
        # read and decoded for every row of every page and then dropped.
        columns = [f for f in ScoringRecordSerializer.Meta.fields if f != "reward_model"]
        records = ScoringRecord.objects.select_related("version__reward_model").only(
            *columns, "version__number", "version__reward_model__slug"
        )
        qs = scoping.scoring_records_for(self.request, records)
        if run := self.request.query_params.get("run"):
            qs = qs.filter(run=run)
        if unsafe := self.request.query_params.get("unsafe"):
            qs = qs.filter(unsafe=unsafe.lower() in ("1", "true", "yes"))
        if learned := self.request.query_params.get("learned_status"):
            qs = qs.filter(learned_status=learned)
        return qs


class TrainingRunInputSerializer(serializers.Serializer):
    name = serializers.SlugField(max_length=200)
    reward_model = serializers.CharField(max_length=200, required=False, allow_blank=True)
    config = serializers.DictField(required=False)

    def validate_config(self, value: dict[str, Any]) -> dict[str, Any]:
        try:
            training_services.check_run_config(value)
        except DjangoValidationError as exc:
            raise serializers.ValidationError(exc.messages) from exc
        return value


class TrainingMetricInputSerializer(serializers.Serializer):
    # the metrics row's step column is a 32-bit integer
    step = serializers.IntegerField(min_value=0, max_value=STEP_MAX)
    metrics = serializers.JSONField()


class TrainingRunListSerializer(serializers.ModelSerializer):
    """A run without its config (a list of runs stays small; the detail has the config)."""

    class Meta:
        model = TrainingRun
        fields = ["id", "name", "reward_model", "created_at", "updated_at"]


class TrainingRunSerializer(serializers.ModelSerializer):
    class Meta:
        model = TrainingRun
        fields = ["id", "name", "reward_model", "config", "created_at", "updated_at"]


class TrainingRunViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    """Trainers report runs and per-step metrics (keys with the `score` scope); anyone with a
    role reads them, with the metric series on the detail."""

    lookup_field = "name"

    def get_serializer_class(self):  # type: ignore[no-untyped-def]
        return TrainingRunListSerializer if self.action == "list" else TrainingRunSerializer

    def get_queryset(self):  # type: ignore[no-untyped-def]
        qs = TrainingRun.objects.order_by("-updated_at")
        if self.action == "list":
            qs = qs.defer("config")
        if self.request.method == "POST":  # another trainer's run is a 404 to report to
            return scoping.training_runs_writable(self.request, qs)
        return scoping.training_runs_for(self.request, qs)

    def get_permissions(self) -> list[BasePermission]:
        if self.action in ("create", "metrics") and self.request.method == "POST":
            return [CanScore()]
        return [CanReadRewards()]

    @extend_schema(
        request=TrainingRunInputSerializer,
        responses={201: TrainingRunSerializer, 200: TrainingRunSerializer},  # 200: it existed
    )
    def create(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        data = TrainingRunInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        scoping.require_run_reward_model(request, data.validated_data.get("reward_model", ""))
        run, created = training_services.training_run_get_or_create(
            name=data.validated_data["name"],
            reward_model=data.validated_data.get("reward_model", ""),
            config=data.validated_data.get("config"),
            user=request.user,  # type: ignore[arg-type]
        )
        if not created and not self.get_queryset().filter(pk=run.pk).exists():
            raise ValidationError({"name": ["This run name belongs to another owner."]})
        code = status.HTTP_201_CREATED if created else status.HTTP_200_OK
        return Response(TrainingRunSerializer(run).data, status=code)

    @extend_schema(
        parameters=[
            OpenApiParameter(
                "after_step", int, description="the metric series from past this step on"
            )
        ]
    )
    def retrieve(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        """The run with its config and its metric series in pages of ``MAX_RUN_DETAIL_STEPS``
        steps: a long run's whole series in one answer was a memory and bandwidth hazard."""
        raw = request.query_params.get("after_step")
        after = None if raw in (None, "") else parse_int(raw, hi=2**31 - 1)
        if raw not in (None, "") and after is None:
            raise ValidationError({"after_step": ["expected a step number (0 to 2147483647)"]})
        run = self.get_object()
        limit = int(settings.REWARDHUB_LIMITS["MAX_RUN_DETAIL_STEPS"])
        steps, next_after = reward_selectors.training_run_steps(
            run=run, after_step=after, limit=limit
        )
        body = TrainingRunSerializer(run).data
        body["steps"] = steps
        body["steps_next"] = (
            None
            if next_after is None
            else request.build_absolute_uri(f"{request.path}?after_step={next_after}")
        )
        return Response(body)

    @extend_schema(request=TrainingMetricInputSerializer, responses={200: dict})
    @action(detail=True, methods=["post"])
    def metrics(self, request: Request, name: str | None = None, **kwargs: Any) -> Response:
        run = self.get_object()
        data = TrainingMetricInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        try:
            row = training_services.training_metrics_report(
                run=run, step=data.validated_data["step"], values=data.validated_data["metrics"]
            )
        except DjangoValidationError as exc:
            raise ValidationError(_django_errors(exc)) from exc
        return Response({"run": run.name, "step": row.step, "metrics": row.values})


# --- evaluation sets and runs -------------------------------------------------------------------


def _refusal_body(exc: ActivationRefused) -> dict[str, list[str]]:
    """A refused activation's 400: ``version`` says why, ``regressions`` lists each case."""
    body = _django_errors(exc)
    body["regressions"] = [
        f"{r['set']}@{r['set_version']}: {case}" for r in exc.regressions for case in r["cases"]
    ]
    return body


def _set_result(
    set_version: EvaluationSetVersion,
    metrics: dict[str, Any] | None,
    *,
    hidden: bool,
    caught: list[str],
    missed: list[str],
) -> dict[str, Any]:
    """One set's answer: its metrics without the per-case outcomes, and for a held-out set
    the reader may not see, without the lists of cases either."""
    drop = ("outcomes", "misses", "false_positives", "inverted_pairs") if hidden else ("outcomes",)
    return {
        "set": set_version.evaluation_set.slug,
        "set_version": set_version.number,
        "evaluated": metrics is not None,
        "metrics": None if metrics is None else {k: v for k, v in metrics.items() if k not in drop},
        "newly_caught": caught,
        "newly_missed": missed,
    }


def _evaluation_body(
    version: int | str, reward_model: RewardModel, sets: list[dict[str, Any]]
) -> dict[str, Any]:
    active = reward_model.active_version
    return {"version": version, "active_version": active.number if active else None, "sets": sets}


def _run_body(run: EvaluationRun) -> dict[str, Any]:
    return {
        "id": run.pk,
        "version": run.version.number,
        "reward_model": run.version.reward_model.slug,
        "state": run.state,
        "trigger": run.trigger,
        "done": run.done,
        "total": run.total,
        "error": run.error,
    }


def _visible_sets(request: Request) -> Any:
    """The one place that hides held-out sets: from API keys and from people who are not
    experts or admins (they edit the policy)."""
    from rewards.services.evaluation import can_see_held_out

    qs = EvaluationSet.objects.prefetch_related(
        Prefetch(
            "versions",
            queryset=EvaluationSetVersion.objects.order_by("-number"),
            to_attr="prefetched_versions",
        )
    ).order_by("slug")
    if isinstance(request.auth, ApiKey) or not can_see_held_out(request.user):
        qs = qs.filter(held_out=False)
    return qs


class EvaluationSetViewSet(
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    mixins.CreateModelMixin,
    viewsets.GenericViewSet,
):
    """Named, versioned, immutable sets of evaluation cases: create, add cases (a new version),
    import and export JSONL, add a reviewed flag. Held-out sets exist only for experts."""

    serializer_class = EvaluationSetSerializer
    lookup_field = "slug"

    def get_queryset(self):  # type: ignore[no-untyped-def]
        return _visible_sets(self.request)

    def get_object(self) -> EvaluationSet:
        """A held-out set named by someone who may not see it is a 403 saying why."""
        try:
            return super().get_object()  # type: ignore[no-any-return]
        except Http404:
            slug = self.kwargs.get(self.lookup_field, "")
            if EvaluationSet.objects.filter(slug=slug, held_out=True).exists():
                raise PermissionDenied(
                    "This evaluation set is held out: only experts and admins see it."
                ) from None
            raise

    def get_permissions(self) -> list[BasePermission]:
        if self.action in ("list", "retrieve", "export"):
            return [CanReadRewards()]
        return [CanEditEvaluationSets()]

    def perform_create(self, serializer: Any) -> None:
        try:
            serializer.instance = evaluation_services.evaluation_set_create(
                user=self.request.user, **serializer.validated_data
            )
        except DjangoValidationError as exc:
            raise ValidationError(_django_errors(exc)) from exc

    def _new_version(self, evaluation_set: EvaluationSet, **kwargs: Any) -> Response:
        try:
            version = evaluation_services.evaluation_set_add_cases(
                evaluation_set=evaluation_set, user=self.request.user, **kwargs
            )
        except DjangoValidationError as exc:
            raise ValidationError(_django_errors(exc)) from exc
        return Response(
            {"set": evaluation_set.slug, "version": version.number, "cases": version.case_count},
            status=status.HTTP_201_CREATED,
        )

    @extend_schema(request=EvaluationCasesInputSerializer, responses={201: dict})
    @action(detail=True, methods=["post"])
    def cases(self, request: Request, slug: str | None = None, **kwargs: Any) -> Response:
        evaluation_set = self.get_object()
        data = EvaluationCasesInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        parsed = []
        errors: dict[str, list[str]] = {}
        for i, raw in enumerate(data.validated_data["cases"]):
            try:
                parsed.append(parse_case(raw))
            except CaseError as exc:
                for name, msgs in exc.errors.items():
                    errors[f"cases.{i}.{name}"] = msgs
        if errors:
            raise ValidationError(errors)
        return self._new_version(
            evaluation_set,
            cases=parsed,
            note=data.validated_data.get("note", ""),
            replace=data.validated_data["replace"],
        )

    @extend_schema(request=EvaluationImportInputSerializer, responses={201: dict})
    @action(detail=True, methods=["post"], url_path="import")
    def import_jsonl(self, request: Request, slug: str | None = None, **kwargs: Any) -> Response:
        evaluation_set = self.get_object()
        data = EvaluationImportInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        try:
            version = evaluation_services.evaluation_set_import_jsonl(
                evaluation_set=evaluation_set,
                text=data.validated_data["jsonl"],
                user=request.user,  # type: ignore[arg-type]
                replace=data.validated_data["replace"],
            )
        except evaluation_services.JsonlImportError as exc:
            # The API's error shape: every bad line once in "jsonl", and each of its fields
            # as "jsonl.<line>.<field>".
            body: dict[str, list[str]] = {"jsonl": line_messages(exc.lines)}
            for e in exc.lines[:100]:
                for name, msgs in e["errors"].items():
                    body[f"jsonl.{e['line']}.{name}"] = msgs
            raise ValidationError(body) from exc
        except DjangoValidationError as exc:
            raise ValidationError(_django_errors(exc)) from exc
        return Response(
            {"set": evaluation_set.slug, "version": version.number, "cases": version.case_count},
            status=status.HTTP_201_CREATED,
        )

    @extend_schema(
        parameters=[OpenApiParameter("version", int, description="default: the newest")],
        responses={(200, "application/x-ndjson"): str},
    )
    @action(detail=True, methods=["get"])
    def export(self, request: Request, slug: str | None = None, **kwargs: Any) -> HttpResponse:
        evaluation_set = self.get_object()
        versions = evaluation_set.versions.order_by("-number")
        raw = request.query_params.get("version")
        if raw:
            if not (raw.isascii() and raw.isdigit() and len(raw) < 10):
                raise ValidationError({"version": ["expected a version number"]})
            versions = versions.filter(number=int(raw))
        version = versions.first()
        if version is None:
            raise NotFound(f"{evaluation_set.slug} has no such version")
        response = HttpResponse(
            evaluation_services.evaluation_set_export(version),
            content_type="application/x-ndjson; charset=utf-8",
        )
        response["Content-Disposition"] = (
            f'attachment; filename="{evaluation_set.slug}-v{version.number}.jsonl"'
        )
        return response

    @extend_schema(request=FlagToSetInputSerializer, responses={201: dict})
    @action(detail=True, methods=["post"], url_path="add-flag")
    def add_flag(self, request: Request, slug: str | None = None, **kwargs: Any) -> Response:
        from safety.models import Flag

        evaluation_set = self.get_object()
        data = FlagToSetInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        flag = Flag.objects.filter(pk=data.validated_data["flag"]).first()
        if flag is None:
            raise ValidationError({"flag": ["no such flag"]})
        try:
            case = evaluation_services.case_from_flag(flag, data.validated_data.get("label"))
        except DjangoValidationError as exc:
            raise ValidationError(_django_errors(exc)) from exc
        return self._new_version(evaluation_set, cases=[case], note=f"flag {flag.pk}")

    @extend_schema(request=PairToSetInputSerializer, responses={201: dict})
    @action(detail=True, methods=["post"], url_path="add-pair")
    def add_pair(self, request: Request, slug: str | None = None, **kwargs: Any) -> Response:
        """An ordered pair of stored trajectories (better first) as a new case."""
        from annotations.models import Trajectory

        evaluation_set = self.get_object()
        data = PairToSetInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        found = Trajectory.objects.in_bulk(
            [data.validated_data["better"], data.validated_data["worse"]]
        )
        errors = {
            name: ["no such trajectory"]
            for name in ("better", "worse")
            if data.validated_data[name] not in found
        }
        if not errors and data.validated_data["better"] == data.validated_data["worse"]:
            errors["worse"] = ["a pair needs two different trajectories"]
        if errors:
            raise ValidationError(errors)
        try:
            case = evaluation_services.case_from_trajectories(
                found[data.validated_data["better"]],
                found[data.validated_data["worse"]],
                data.validated_data["tier"],
            )
        except DjangoValidationError as exc:
            raise ValidationError(_django_errors(exc)) from exc
        note = f"pair {data.validated_data['better']} > {data.validated_data['worse']}"
        return self._new_version(evaluation_set, cases=[case], note=note)


class EvaluationRunViewSet(mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    """An evaluation run's state and progress (poll it after ``evaluate``)."""

    permission_classes = [CanReadRewards]
    queryset = EvaluationRun.objects.select_related("version__reward_model")

    def get_queryset(self):  # type: ignore[no-untyped-def]
        models_seen = scoping.reward_models_for(self.request, RewardModel.objects.all())
        return super().get_queryset().filter(version__reward_model__in=models_seen)

    @extend_schema(responses=dict)
    def retrieve(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        """The run's state and progress, and per set version its stored result (once there is
        one; held-out sets the reader may not see: metrics only)."""
        from rewards.models import EvaluationResult
        from rewards.services.evaluation import can_see_held_out

        run = self.get_object()
        see_held_out = not isinstance(request.auth, ApiKey) and can_see_held_out(request.user)
        set_versions = list(run.set_versions.select_related("evaluation_set").order_by("pk"))
        results = {
            r.set_version_id: r.metrics
            for r in EvaluationResult.objects.filter(
                version=run.version, set_version__in=set_versions
            )
        }
        body = _run_body(run)
        body["sets"] = [
            _set_result(
                sv,
                results.get(sv.pk),
                hidden=sv.evaluation_set.held_out and not see_held_out,
                caught=[],
                missed=[],
            )
            for sv in set_versions
        ]
        for row in body["sets"]:  # a run measures one version: there is no diff to report
            del row["newly_caught"], row["newly_missed"]
        return Response(body)
