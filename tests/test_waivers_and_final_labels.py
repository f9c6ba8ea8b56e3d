"""Server-side checks on what leads store (issue #22, item 14): waiver match kinds, regex
waivers built from commands, final labels on behaviours that exist."""

from __future__ import annotations

import re

import pytest
from django.core.exceptions import ValidationError
from django.test import Client

from annotations.models import FinalLabel
from annotations.services import trajectory_import
from review import services as review_services
from rewards.models import RewardModel
from rewards.services.rewards import reward_model_compile
from safety import services
from safety.models import Flag, Waiver
from tests.factories import CanonicalTrajectoryFactory

pytestmark = pytest.mark.django_db


def _flag(command: str) -> Flag:
    pk = trajectory_import(record=CanonicalTrajectoryFactory(command=command)).trajectory.pk
    services.trajectory_scan(trajectory_id=pk)
    return Flag.objects.filter(trajectory_id=pk).order_by("id")[0]


def test_an_unknown_waiver_match_is_refused(client: Client, safety_lead) -> None:  # type: ignore[no-untyped-def]
    flag = _flag("rm -rf ~/")
    with pytest.raises(ValidationError) as caught:
        services.flags_review(
            flag_ids=[flag.pk], status="dismissed", user=safety_lead, waive=True,
            waiver_match="glob",
        )  # fmt: skip
    assert "waiver_match" in caught.value.message_dict
    client.force_login(safety_lead)
    response = client.post(
        f"/safety/flags/{flag.pk}/", {"status": "dismissed", "waive": "on", "waiver_match": "x"}
    )
    assert response.status_code == 400 and b"waiver_match" in response.content
    flag.refresh_from_db()
    assert flag.status == "open" and not Waiver.objects.exists()


def test_a_regex_waiver_from_a_command_matches_it_literally_and_compiles(
    reward_model, safety_lead
) -> None:  # type: ignore[no-untyped-def]
    command = "rm -rf ~/build (old) [x]+ *"
    flag = _flag(command)
    services.flags_review(
        flag_ids=[flag.pk], status="dismissed", user=safety_lead, waive=True, waiver_match="regex"
    )
    waiver = Waiver.objects.get()
    assert waiver.match == "regex" and services._waiver_matches(waiver, command)
    assert not services._waiver_matches(waiver, command + " && rm -rf /")
    # Every compile for the task type keeps working (an unescaped "(old) [x]+ *" broke them).
    result = reward_model_compile(reward_model=reward_model, user=None, note="after waiver")
    assert result.version.spec["safety"]["waived"]


def test_a_stored_waiver_with_a_bad_regex_cannot_be_saved_nor_break_compiles(reward_model) -> None:  # type: ignore[no-untyped-def]
    waiver = Waiver(rule_id="fs.delete", task_type="swe-bugfix", match="regex", pattern="rm (")
    with pytest.raises(ValidationError) as caught:
        waiver.full_clean()
    assert "pattern" in caught.value.message_dict
    with pytest.raises(ValidationError):
        Waiver(rule_id="x", match="glob", pattern="x").full_clean()
    Waiver.objects.bulk_create([waiver])  # written around the checks (an older row)
    result = reward_model_compile(reward_model=RewardModel.objects.get(), user=None, note="n")
    assert "rm (" not in str(result.version.spec["safety"]["waived"])


def test_final_labels_need_a_behaviour_of_the_task_type(
    client: Client, safety_lead, reward_model
) -> None:  # type: ignore[no-untyped-def]
    flag = _flag("rm -rf ~/")
    step = flag.step
    with pytest.raises(ValidationError) as caught:
        review_services.final_label_resolve(
            step=step, behaviour="no-such-behaviour", value=1, user=safety_lead
        )
    assert "behaviour" in caught.value.message_dict
    client.force_login(safety_lead)
    response = client.post(
        "/review/disagreements/", {"step": step.pk, "behaviour": "nope", "value": "1"}
    )
    assert response.status_code == 400 and b"behaviour" in response.content
    assert not FinalLabel.objects.exists()
    real = reward_model.task_type.behaviours.filter(active=True).order_by("slug")[0].slug
    review_services.final_label_resolve(step=step, behaviour=real, value=-1, user=safety_lead)
    review_services.final_label_resolve(step=step, behaviour="", value=1, user=safety_lead)
    assert FinalLabel.objects.count() == 2


@pytest.mark.parametrize("match", ["exact", "prefix", "regex"])
def test_a_waiver_covers_whole_commands_never_a_prefix_of_a_longer_line(match: str) -> None:
    """A waiver for one command is no waiver for what is chained after it, in the scan and in
    the score alike (issue 19)."""
    from rewards.scoring import build_scorer, default_spec

    waived = "git push --force origin feature"
    pattern = rf"\A{re.escape(waived)}\Z" if match == "regex" else waived
    Waiver.objects.create(rule_id="vcs.force-push", match=match, pattern=pattern, reason="ok")
    spec = default_spec()
    spec["safety"]["waived"] = [{"rule": "vcs.force-push", "match": match, "pattern": pattern}]
    scorer = build_scorer(spec)
    for command, covered in [
        (waived, True),
        (f"{waived}; git push --force origin main", False),
        (f"{waived} && git push --force origin main", False),
        (f"{waived} $(git push --force origin main)", False),
    ]:
        record = CanonicalTrajectoryFactory(command=command)
        pk = trajectory_import(record=record).trajectory.pk
        services.trajectory_scan(trajectory_id=pk)
        flags = Flag.objects.filter(trajectory_id=pk, rule_id="vcs.force-push")
        assert flags.exists(), command
        open_flags = flags.filter(waiver__isnull=True).count()
        assert (open_flags == 0) is covered, (command, match)
        result = scorer.score(record)
        assert result.gated is not covered, (command, match)
    # a prefix waiver still covers the same command with more arguments, never more commands
    if match == "prefix":
        assert scorer.score(CanonicalTrajectoryFactory(command=f"{waived} -q")).gated is False
