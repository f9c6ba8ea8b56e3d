"""The list of audited models, wired here where every app is known, so that ``audit`` depends
on ``core`` only (``audit.registry`` records their creates, edits and deletes)."""

from __future__ import annotations

from typing import Any

from audit.registry import register


def _api_key_verb(before: dict[str, Any], after: dict[str, Any]) -> str | None:
    if before.get("revoked_at") is None and after.get("revoked_at") is not None:
        return "revoke"
    return None


def register_audited_models() -> None:
    """What RewardHub audits; models join here (one place) when they hold policy or access."""
    from django.contrib.auth.models import Group

    from annotations.models import FinalLabel
    from core.models import ApiKey, User
    from review.models import ReviewQueue
    from rewards.models import (
        EvaluationAttachment,
        LearnedComponent,
        RewardModel,
        TaskType,
        TrustedBehaviour,
    )
    from safety.models import Flag, Policy, PolicyRule, Waiver

    register(TaskType, "task_type")
    register(TrustedBehaviour, "behaviour")
    register(RewardModel, "reward_model")
    register(LearnedComponent, "learned_component")
    # Which sets gate a reward model's activation: attached or removed in the admin's inline too.
    register(EvaluationAttachment, "evaluation_attachment")
    register(Policy, "policy")
    register(PolicyRule, "policy_rule")
    register(Waiver, "waiver")
    # Flags are created in bulk by scans (not audited: no one decided anything) and reviewed in
    # bulk by safety.services.flags_review (which records "flag.review"); this catches the rest.
    register(Flag, "flag")
    register(FinalLabel, "final_label")
    register(ReviewQueue, "review_queue", m2m=("members", "teams"))
    register(ApiKey, "api_key", exclude=("key_digest", "last_used_at"), refine=_api_key_verb)
    register(User, "user", exclude=("password", "last_login"), m2m=("groups", "user_permissions"))
    register(Group, "group", m2m=("permissions",))
