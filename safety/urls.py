from django.urls import path
from django.views.generic import RedirectView

from safety import views

app_name = "safety"

urlpatterns = [
    path("", RedirectView.as_view(pattern_name="safety:flags"), name="index"),
    path("flags/", views.flag_queue, name="flags"),
    path("flags/review/", views.flag_bulk_review, name="flags_review"),
    path("flags/<int:flag_id>/", views.flag_detail, name="flag"),
    path("policies/", views.policy_list, name="policies"),
    path("policies/<slug:slug>/", views.policy_detail, name="policy"),
    path("policies/<slug:slug>/rules/", views.rule_save, name="rule_create"),
    path("policies/<slug:slug>/rules/<int:rule_pk>/", views.rule_save, name="rule_save"),
    path("policies/<slug:slug>/publish/", views.policy_publish, name="policy_publish"),
    path("policies/<slug:slug>/try/", views.policy_try, name="policy_try"),
    path("versions/<int:version_pk>/rescan/", views.rescan, name="rescan"),
    path("scans/<int:job_id>/", views.scan_job, name="scan_job"),
    path("scans/<int:job_id>/resume/", views.scan_job_resume, name="scan_job_resume"),
    path("scans/pending/queue/", views.pending_scans_queue, name="pending_scans_queue"),
    path("bench/", views.bench, name="bench"),
    path("rule-language/", views.rule_language, name="rule_language"),
]
