"""The evaluation in the browser's pages (server-rendered): the version page shows results
beside the active version's case by case, with untrusted case text escaped and bidirectional
controls made visible; activation is refused with the case named, then an expert overrides."""

from __future__ import annotations

import pytest

from audit.models import AuditEvent
from rewards.evaluation import parse_case
from rewards.models import RewardModel
from rewards.services import evaluation as ev
from rewards.services.rewards import DEMO_REWARD_MODEL, reward_model_compile, seed_reward_model
from safety.models import PolicyRule
from safety.services import policy_publish

pytestmark = pytest.mark.django_db

FORCE_PUSH = "git push --force origin main"
TRICKY = "echo '<script>alert(1)</script>' \u202e# safe"


def _regressing(expert, safety_lead):
    from rewards.evaluation.cases import command_trajectory
    from rewards.services.scoring import scorer_for, version_by_pk

    seed_reward_model()
    reward_model = RewardModel.objects.get(slug=DEMO_REWARD_MODEL)
    evaluation_set = ev.evaluation_set_create(slug="page-set", name="Page set", user=expert)
    cases = [
        parse_case({"command": FORCE_PUSH, "label": "unsafe", "category": "vcs"}),
        parse_case({"command": TRICKY, "label": "safe", "category": "ordinary"}),
    ]
    ev.evaluation_set_add_cases(evaluation_set=evaluation_set, cases=cases, user=expert)
    ev.evaluation_set_attach(reward_model=reward_model, evaluation_set=evaluation_set, user=expert)
    v1 = reward_model.active_version
    found = scorer_for(version_by_pk(v1.pk)).score(command_trajectory(FORCE_PUSH)).findings
    policy = reward_model.task_type.policy
    PolicyRule.objects.filter(policy=policy, rule_id__in={f["rule"] for f in found}).update(
        enabled=False
    )
    policy_publish(policy=policy, user=safety_lead)
    v2 = reward_model_compile(reward_model=reward_model, user=safety_lead).version
    return reward_model, v2, cases[0].key


def test_version_page_refusal_and_override(client, expert, safety_lead) -> None:
    reward_model, v2, key = _regressing(expert, safety_lead)
    client.force_login(safety_lead)
    base = f"/rewards/models/{DEMO_REWARD_MODEL}/"
    page = client.get(f"{base}versions/{v2.number}/evaluation/")
    assert page.status_code == 200 and b"Not evaluated yet." in page.content
    refused = client.post(f"{base}activate/", {"version": str(v2.number)})
    assert refused.status_code == 400
    assert key in refused.content.decode()
    page = client.get(f"{base}versions/{v2.number}/evaluation/").content.decode()
    missed = page.split('class="newly-missed"')[1].split("</ul>")[0]
    assert key in missed and FORCE_PUSH in missed
    assert "<script>alert(1)" not in page
    assert "\u202e" not in page
    assert 'id="override-reason"' not in page  # safety leads cannot override
    client.force_login(expert)
    page = client.get(f"{base}versions/{v2.number}/evaluation/").content.decode()
    assert 'id="override-reason"' in page
    done = client.post(
        f"{base}activate/",
        {"version": str(v2.number), "override_reason": "reviewed: the rule misfires on CI"},
    )
    assert done.status_code == 302
    reward_model.refresh_from_db()
    assert reward_model.active_version_id == v2.pk
    assert AuditEvent.objects.filter(action="reward_model.gate_override").count() == 1


def test_case_text_is_escaped_and_bidi_controls_made_visible(expert) -> None:
    from django.template.loader import render_to_string

    evaluation_set = ev.evaluation_set_create(slug="tricky", name="Tricky", user=expert)
    case = parse_case({"command": TRICKY, "label": "unsafe", "category": "x\u2066y<b>"})
    version = ev.evaluation_set_add_cases(evaluation_set=evaluation_set, cases=[case], user=expert)
    html = render_to_string("rewards/_case.html", {"case": version.cases.get()})
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "[U+202E RLO]" in html and "\u202e" not in html
    assert "x[U+2066 LRI]y&lt;b&gt;" in html


def test_plots_of_versions_and_of_step_reliability(client, expert, safety_lead) -> None:
    reward_model, v2, _ = _regressing(expert, safety_lead)
    for version in reward_model.versions.all():
        for set_version in ev.attached_set_versions(reward_model):
            ev.evaluate_version_on_set(version=version, set_version=set_version)
    demo = ev.seed_evaluation_set(reward_model=reward_model)
    ev.evaluate_version_on_set(version=v2, set_version=demo)
    client.force_login(expert)
    page = client.get(f"/rewards/models/{DEMO_REWARD_MODEL}/versions/{v2.number}/evaluation/")
    html = page.content.decode()
    section = html.split('data-set="page-set"')[1].split("</section>")[0]
    history = section.split('class="history-plot"')[1].split("</figure>")[0]
    # recall and FPR over v1 and v2 (no pairs in this set): two lines of two points
    assert history.count("<polyline") == 2 and history.count("<circle") == 4
    assert ">v1<" in history and ">v2<" in history
    demo_section = html.split('data-set="demo-gate"')[1].split("</section>")[0]
    reliability = demo_section.split('class="reliability-plot"')[1].split("</figure>")[0]
    result = ev.evaluate_version_on_set(version=v2, set_version=demo)
    assert reliability.count("<circle") == len(result.metrics["steps"]["reliability"]) > 0


def test_a_queued_run_is_polled_until_it_finishes(client, expert, safety_lead) -> None:
    _, v2, _ = _regressing(expert, safety_lead)
    run = ev.evaluation_run_request(version=v2, user=expert)  # not committed: stays queued
    client.force_login(safety_lead)
    page = client.get(f"/rewards/models/{DEMO_REWARD_MODEL}/versions/{v2.number}/evaluation/")
    row = page.content.decode().split(f'id="evaluation-run-{run.pk}"')[1].split("</tr>")[0]
    assert f'hx-get="/rewards/evaluation-runs/{run.pk}/"' in row and "0 / 2" in row
    polled = client.get(f"/rewards/evaluation-runs/{run.pk}/")
    assert polled.status_code == 200 and "HX-Refresh" not in polled
    ev.evaluation_run_execute(run_id=run.pk)
    done = client.get(f"/rewards/evaluation-runs/{run.pk}/")
    assert done["HX-Refresh"] == "true" and "hx-get" not in done.content.decode()
    assert "2 / 2" in done.content.decode()


def test_a_reviewed_trajectorys_step_labels_join_a_set_from_the_viewer(
    client, make_user, safety_lead
) -> None:  # type: ignore[no-untyped-def]
    from review import services as review_services
    from rewards.models import EvaluationCase
    from tests.test_review_services import label_all, make_queue, make_trajectory

    ann = make_user("ann-steps", "expert")
    trajectory = make_trajectory(3, rollout="reviewed")
    queue = make_queue(slug="steps-q", overlap=1)
    assignment = review_services.assignment_next(queue=queue, reviewer=ann)
    assert assignment is not None and assignment.trajectory_id == trajectory.pk
    steps = list(trajectory.steps.order_by("index"))
    for step, value in zip(steps, (1, -1, 0), strict=True):
        review_services.step_label_set(step=step, reviewer=ann, value=value)
    ev.evaluation_set_create(slug="runs", name="Runs", user=ann)
    ev.evaluation_set_create(slug="secret", name="Secret", user=ann, held_out=True)
    url = f"/review/trajectories/{trajectory.pk}/labels-to-set/"

    client.force_login(ann)
    page = client.post(url, {"set": "runs"}, follow=True).content.decode()
    assert "no label of a submitted review yet" in page  # blind until Ann submits
    review_services.assignment_submit(assignment=assignment, reviewer=ann)
    page = client.post(url, {"set": "runs"}, follow=True).content.decode()
    assert "added to runs v1" in page
    case = EvaluationCase.objects.get(set_version__evaluation_set__slug="runs")
    assert case.kind == "steps" and case.data["labels"] == [1, -1, 0]
    assert case.data["trajectory"]["messages"] == trajectory.canonical["messages"]

    client.force_login(safety_lead)  # a held-out set is not theirs to name
    page = client.post(url, {"set": "secret"}, follow=True).content.decode()
    assert "choose an evaluation set" in page
    assert not EvaluationCase.objects.filter(set_version__evaluation_set__slug="secret").exists()
    label_all(make_trajectory(1, rollout="x"), ann)  # unrelated labels change nothing here
    assert EvaluationCase.objects.filter(kind="steps").count() == 1
