from django.contrib import admin
from django.urls import include, path, re_path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView
from rest_framework.routers import DefaultRouter

from core import views as probes
from core.forms import AdminLoginForm
from review import views as review_views
from rewards import api as reward_api
from safety.api import AnalyzeCommandsView

# Sign-in forms that say when a sign-in was refused by the throttle (core.login_throttle).
admin.site.login_form = AdminLoginForm

handler404 = "core.api_errors.not_found"
handler500 = "core.api_errors.server_error"

router = DefaultRouter()
# Scoped for API keys (rewards.scoping): routed rollouts carry their scoring's details.
router.register("trajectories", reward_api.ScopedTrajectoryViewSet, basename="trajectory")
router.register("task-types", reward_api.TaskTypeViewSet, basename="task-type")
router.register("behaviours", reward_api.TrustedBehaviourViewSet, basename="behaviour")
router.register("reward-models", reward_api.RewardModelViewSet, basename="reward-model")
router.register("scorings", reward_api.ScoringRecordViewSet, basename="scoring")
router.register("training-runs", reward_api.TrainingRunViewSet, basename="training-run")
router.register("evaluation-sets", reward_api.EvaluationSetViewSet, basename="evaluation-set")
router.register("evaluation-runs", reward_api.EvaluationRunViewSet, basename="evaluation-run")

urlpatterns = [
    path("", review_views.home, name="home"),
    path("healthz", probes.healthz, name="healthz"),
    path("readyz", probes.readyz, name="readyz"),
    path("admin/", admin.site.urls),
    path("accounts/login/", probes.SignInView.as_view()),
    path("accounts/", include("django.contrib.auth.urls")),
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    # The split view serves Swagger UI's init script as a file: no inline script (CSP).
    path("api/docs/", SpectacularSwaggerSplitView.as_view(url_name="schema"), name="api-docs"),
    re_path(r"^api/(?P<version>v1)/analyze/$", AnalyzeCommandsView.as_view(), name="analyze"),
    re_path(r"^api/(?P<version>v1)/score/$", reward_api.ScoreView.as_view(), name="score"),
    re_path(
        r"^api/(?P<version>v1)/score/batch/$",
        reward_api.BatchScoreView.as_view(),
        name="score-batch",
    ),
    re_path(
        r"^api/(?P<version>v1)/openrlhf/(?P<reward_model>[\w.@-]+)(?:/(?P<api_key>rh_[\w-]+))?/?$",
        reward_api.OpenRLHFView.as_view(),
        name="openrlhf",
    ),
    re_path(r"^api/(?P<version>v1)/", include(router.urls)),
    path("safety/", include("safety.urls")),
    path("review/", include("review.urls")),
    path("rewards/", include("rewards.urls")),
]
