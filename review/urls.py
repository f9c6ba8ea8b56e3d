from django.urls import path

from review import views as web

app_name = "review"

urlpatterns = [
    path("", web.dashboard, name="dashboard"),
    path("trajectories/", web.trajectory_list, name="trajectories"),
    path("import/", web.trajectory_upload, name="import"),
    path("trajectories/<int:trajectory_id>/", web.trajectory_view, name="trajectory"),
    path(
        "trajectories/<int:trajectory_id>/history/",
        web.trajectory_history,
        name="trajectory_history",
    ),
    path(
        "trajectories/<int:trajectory_id>/labels-to-set/",
        web.trajectory_labels_to_set,
        name="labels_to_set",
    ),
    path("steps/<int:step_id>/label/", web.step_label, name="step_label"),
    path("queues/", web.queue_list, name="queues"),
    path("queues/new/", web.queue_create, name="queue_create"),
    path("queues/<slug:slug>/next/", web.queue_next, name="queue_next"),
    path("queues/<slug:slug>/export.jsonl", web.queue_export, name="queue_export"),
    path("assignments/<int:assignment_id>/submit/", web.assignment_submit, name="submit"),
    path("assignments/<int:assignment_id>/release/", web.assignment_release, name="release"),
    path("assignments/<int:assignment_id>/reopen/", web.assignment_reopen, name="reopen"),
    path("agreement/", web.agreement, name="agreement"),
    path("disagreements/", web.disagreements, name="disagreements"),
    path("export/prm.jsonl", web.export_prm, name="export_prm"),
    path("export/annotators.jsonl", web.export_annotators, name="export_annotators"),
    path("exports/", web.export_job_list, name="export_jobs"),
    path("exports/<int:job_id>/", web.export_job, name="export_job"),
    path("exports/<int:job_id>/download/", web.export_job_download, name="export_job_download"),
    path("exports/<int:job_id>/resume/", web.export_job_resume, name="export_job_resume"),
    path("exports/<int:job_id>/delete/", web.export_job_delete, name="export_job_delete"),
    path("flags/<int:flag_id>/review/", web.flag_review, name="flag_review"),
]
