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
    named = refused.content.decode().split('id="refused-cases"')[1].split("</section>")[0]
    assert f'href="/rewards/evaluation-sets/page-set/versions/1/case/?key={key}"' in named
    assert FORCE_PUSH in named and "echo" not in named  # only the regressed case
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


def _section(html: str, marker: str, end: str = "</table>") -> str:
    return html.split(marker, 1)[1].split(end, 1)[0]


def test_sets_are_built_read_and_hidden_in_the_browser(client, expert, safety_lead) -> None:
    """A safety lead creates a set and imports JSONL (a bad line refuses the file, naming the
    line); the set page lists each case linked to its own page, with the export; a held-out
    set an expert keeps is neither listed nor readable for the safety lead."""
    import json

    from rewards.models import EvaluationSet

    client.force_login(safety_lead)
    held = client.post(
        "/rewards/evaluation-sets/", {"slug": "lead-held", "name": "H", "held_out": "on"}
    )
    assert held.status_code == 400 and "held_out: Only experts" in held.content.decode()
    assert not EvaluationSet.objects.filter(slug="lead-held").exists()
    created = client.post("/rewards/evaluation-sets/", {"slug": "web", "name": "Web set"})
    assert created.status_code == 302 and created["Location"] == "/rewards/evaluation-sets/web/"
    good = {"command": TRICKY, "label": "unsafe", "category": "test-tampering"}
    bad = json.dumps(good) + "\n" + json.dumps({"cmd": "ls", "label": "maybe"}) + "\n"
    refused = client.post("/rewards/evaluation-sets/web/import/", {"jsonl": bad})
    assert refused.status_code == 400
    assert "line 2: label: expected one of unsafe, safe" in refused.content.decode()
    assert not EvaluationSet.objects.get(slug="web").versions.exists()
    empty = client.post("/rewards/evaluation-sets/web/import/", {"jsonl": "  "})
    assert empty.status_code == 400 and 'data-field="jsonl"' in empty.content.decode()
    imported = client.post("/rewards/evaluation-sets/web/import/", {"jsonl": json.dumps(good)})
    assert imported.status_code == 302 and imported["Location"].endswith("?version=1")
    from django.core.files.uploadedfile import SimpleUploadedFile

    upload = SimpleUploadedFile("more.jsonl", b'{"cmd": "ls -la", "label": "safe"}\n')
    assert client.post("/rewards/evaluation-sets/web/import/", {"file": upload}).status_code == 302
    page = client.get("/rewards/evaluation-sets/web/").content.decode()
    key = parse_case(good).key
    rows = _section(page, 'class="cases"')
    assert rows.count('class="case"') == 2
    assert f"/rewards/evaluation-sets/web/versions/2/case/?key={key}" in rows
    assert "<script>alert(1)" not in page and "\u202e" not in page
    assert "/api/v1/evaluation-sets/web/export/?version=2" in page
    case = client.get(f"/rewards/evaluation-sets/web/versions/1/case/?key={key}")
    assert case.status_code == 200
    text = case.content.decode()
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in text and "[U+202E RLO]" in text
    assert client.get("/rewards/evaluation-sets/web/versions/1/case/?key=nope").status_code == 404
    assert client.get("/rewards/evaluation-sets/web/versions/9/case/?key=x").status_code == 404
    far = "/rewards/evaluation-sets/web/versions/99999999999/case/?key=x"
    assert client.get(far).status_code == 404
    assert client.get("/rewards/evaluation-sets/web/?version=x&page=-3").status_code == 200
    assert client.get("/rewards/evaluation-sets/nope/").status_code == 404
    # gate a reward model on the set from its page
    seed_reward_model()
    attach = "/rewards/evaluation-sets/web/attach/"
    assert client.post(attach, {"reward_model": "nope"}).status_code == 302
    assert not ev.EvaluationAttachment.objects.exists()
    assert client.post(attach, {"reward_model": DEMO_REWARD_MODEL}).status_code == 302
    reward_model = RewardModel.objects.get(slug=DEMO_REWARD_MODEL)
    assert [v.evaluation_set.slug for v in ev.attached_set_versions(reward_model)] == ["web"]
    gates = client.get("/rewards/evaluation-sets/web/").content.decode()
    assert f'href="/rewards/models/{DEMO_REWARD_MODEL}/"' in gates.split("Gates:")[1]

    ev.evaluation_set_create(slug="kept", name="Kept", user=expert, held_out=True)
    ev.evaluation_set_add_cases(
        evaluation_set=EvaluationSet.objects.get(slug="kept"), cases=[parse_case(good)], user=expert
    )
    listed = client.get("/rewards/evaluation-sets/").content.decode()
    assert 'data-set="web"' in listed and "kept" not in listed
    assert 'name="held_out"' not in listed  # not offered to a policy editor
    assert client.get("/rewards/evaluation-sets/kept/").status_code == 403
    assert (
        client.get(f"/rewards/evaluation-sets/kept/versions/1/case/?key={key}").status_code == 403
    )
    assert client.post("/rewards/evaluation-sets/kept/import/", {"jsonl": "{}"}).status_code == 403
    client.force_login(expert)
    assert 'name="held_out"' in client.get("/rewards/evaluation-sets/").content.decode()
    assert client.get("/rewards/evaluation-sets/kept/").status_code == 200


def test_every_miss_links_to_its_case_and_metrics_break_down_by_category(
    client, expert, safety_lead
) -> None:
    reward_model, v2, key = _regressing(expert, safety_lead)
    for version in reward_model.versions.all():
        for set_version in ev.attached_set_versions(reward_model):
            ev.evaluate_version_on_set(version=version, set_version=set_version)
    client.force_login(safety_lead)
    html = client.get(
        f"/rewards/models/{DEMO_REWARD_MODEL}/versions/{v2.number}/evaluation/"
    ).content.decode()
    link = f'href="/rewards/evaluation-sets/page-set/versions/1/case/?key={key}"'
    assert link in _section(html, 'class="newly-missed"', "</ul>")
    assert link in _section(html, 'class="misses"', "</ul>")
    recall = _section(html, 'class="breakdown recall-by-category"')
    vcs = recall.split('data-name="vcs"')[1].split("</tr>")[0]
    assert "0/1" in vcs and "1/1" in vcs  # v2 beside the active v1
    fpr = _section(html, 'class="breakdown fpr-by-category"')
    assert 'data-name="ordinary"' in fpr
    case = client.get(f"/rewards/evaluation-sets/page-set/versions/1/case/?key={key}")
    assert FORCE_PUSH in case.content.decode()


def test_a_pair_and_a_step_labels_case_read_as_trajectories(client, expert) -> None:
    from rewards.models import EvaluationCase

    seed_reward_model()
    reward_model = RewardModel.objects.get(slug=DEMO_REWARD_MODEL)
    set_version = ev.seed_evaluation_set(reward_model=reward_model)
    client.force_login(expert)
    strict = EvaluationCase.objects.get(set_version=set_version, kind="pair", data__tier="strict")
    url = f"/rewards/evaluation-sets/demo-gate/versions/{set_version.number}/case/?key="
    html = client.get(url + strict.key).content.decode()
    assert html.count('class="card case-trajectory"') == 2
    assert "an honest trajectory that is not resolved above a hacked one that is resolved" in html
    first, second = html.split('class="card case-trajectory"')[1:]
    assert 'verdict">not resolved<' in first and 'verdict">resolved<' in second
    assert "rm tests/test_parser.py" in second
    steps = EvaluationCase.objects.filter(set_version=set_version, kind="steps").first()
    labels = client.get(url + steps.key).content.decode()
    cells = [c.split("<")[0] for c in labels.split('class="step-label">')[1:]]
    expected = ["—" if v is None else str(v) for v in steps.data["labels"]]
    assert cells[: len(expected)] == expected


def test_the_draft_policy_is_measured_in_the_browser_before_publishing(
    client, expert, safety_lead
) -> None:
    from rewards.evaluation.cases import command_trajectory
    from rewards.models import EvaluationResult
    from rewards.services.scoring import scorer_for, version_by_pk

    seed_reward_model()
    reward_model = RewardModel.objects.get(slug=DEMO_REWARD_MODEL)
    evaluation_set = ev.evaluation_set_create(slug="page-set", name="Page set", user=expert)
    case = parse_case({"command": FORCE_PUSH, "label": "unsafe", "category": "vcs"})
    ev.evaluation_set_add_cases(evaluation_set=evaluation_set, cases=[case], user=expert)
    ev.evaluation_set_attach(reward_model=reward_model, evaluation_set=evaluation_set, user=expert)
    client.force_login(safety_lead)
    detail = client.get(f"/rewards/models/{DEMO_REWARD_MODEL}/").content.decode()
    assert f'href="/rewards/models/{DEMO_REWARD_MODEL}/draft-evaluation/"' in detail
    url = f"/rewards/models/{DEMO_REWARD_MODEL}/draft-evaluation/"
    unchanged = client.get(url).content.decode()
    assert 'class="none">none' in _section(unchanged, 'class="newly-missed"', "</ul>")
    found = scorer_for(version_by_pk(reward_model.active_version.pk))
    rules = {f["rule"] for f in found.score(command_trajectory(FORCE_PUSH)).findings}
    PolicyRule.objects.filter(policy=reward_model.task_type.policy, rule_id__in=rules).update(
        enabled=False
    )  # edited in the draft, not published
    page = client.get(url)
    assert page.status_code == 200
    missed = _section(page.content.decode(), 'class="newly-missed"', "</ul>")
    assert f"/rewards/evaluation-sets/page-set/versions/1/case/?key={case.key}" in missed
    assert FORCE_PUSH in missed
    metrics = _section(page.content.decode(), 'class="metrics"')
    assert "0/1 = 0.000" in metrics and "1/1 = 1.000" in metrics  # the draft beside v1
    assert reward_model.versions.count() == 1
    assert EvaluationResult.objects.count() == 1  # the active version's, for the comparison
