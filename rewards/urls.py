"""URLs of the expert pages, mounted at /rewards/."""

from django.urls import path
from django.views.generic import RedirectView

from rewards import views as web

app_name = "rewards"

urlpatterns = [
    path("", RedirectView.as_view(pattern_name="rewards:reward_models"), name="index"),
    path("task-types/", web.task_type_list, name="task_types"),
    path("task-types/new/", web.task_type_create, name="task_type_create"),
    path("task-types/<slug:slug>/", web.task_type_detail, name="task_type"),
    path("task-types/<slug:slug>/behaviours/", web.behaviour_save, name="behaviour_create"),
    path("task-types/<slug:slug>/behaviours/<int:pk>/", web.behaviour_save, name="behaviour_save"),
    path("models/", web.reward_model_list, name="reward_models"),
    path("models/new/", web.reward_model_create, name="reward_model_create"),
    path("models/<slug:slug>/", web.reward_model_detail, name="reward_model"),
    path("models/<slug:slug>/compile/", web.reward_model_compile, name="compile"),
    path("models/<slug:slug>/activate/", web.reward_model_activate, name="activate"),
    path("models/<slug:slug>/rollback/", web.reward_model_rollback, name="rollback"),
    path("models/<slug:slug>/diff/", web.reward_model_diff, name="diff"),
    path(
        "models/<slug:slug>/versions/<int:number>/evaluation/",
        web.version_evaluation,
        name="version_evaluation",
    ),
    path(
        "models/<slug:slug>/versions/<int:number>/evaluate/",
        web.version_evaluate,
        name="version_evaluate",
    ),
    path("models/<slug:slug>/draft-evaluation/", web.draft_evaluation, name="draft_evaluation"),
    path("evaluation-sets/", web.evaluation_set_list, name="evaluation_sets"),
    path("evaluation-sets/<slug:slug>/", web.evaluation_set_detail, name="evaluation_set"),
    path(
        "evaluation-sets/<slug:slug>/import/",
        web.evaluation_set_import,
        name="evaluation_set_import",
    ),
    path(
        "evaluation-sets/<slug:slug>/attach/",
        web.evaluation_set_attach,
        name="evaluation_set_attach",
    ),
    path(
        "evaluation-sets/<slug:slug>/versions/<int:number>/case/",
        web.evaluation_case,
        name="evaluation_case",
    ),
    path("evaluation-runs/<int:run_id>/", web.evaluation_run, name="evaluation_run"),
    path("evaluation-sets/add-flag/<int:flag_id>/", web.flag_to_set, name="flag_to_set"),
    path(
        "evaluation-sets/add-pair/<int:trajectory_id>/",
        web.trajectory_pair_to_set,
        name="trajectory_pair_to_set",
    ),
    path("score/", web.score, name="score"),
    path("learned/", web.learned_overview, name="learned_overview"),
    path("learned/<int:pk>/", web.learned_detail, name="learned_component"),
    path("learned/jobs/<int:job_id>/", web.learned_job, name="learned_job"),
    path("task-types/<slug:slug>/learned/", web.learned_list, name="learned"),
    path("task-types/<slug:slug>/learned/train/", web.learned_train, name="learned_train"),
]
