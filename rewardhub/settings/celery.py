"""Celery (read by rewardhub.celery under the ``CELERY_`` namespace): broker, crash safety, queues.

Embedded default: no ``CELERY_BROKER_URL`` -> tasks run in-process, eagerly.
"""

from __future__ import annotations

from rewardhub.settings.environment import env

_broker = env.str("CELERY_BROKER_URL", default="")
# Embedded default: no broker configured -> run tasks in-process, eagerly; the in-memory
# transport makes sure nothing is ever sent to a broker that happens to listen locally.
# (With a host name, so kombu does not warn about a broker host on every connection.)
CELERY_BROKER_URL = _broker or "memory://localhost/"
CELERY_RESULT_BACKEND = env.str("CELERY_RESULT_BACKEND", default="") or None
CELERY_TASK_ALWAYS_EAGER = env.bool("CELERY_TASK_ALWAYS_EAGER", default=not _broker)
CELERY_TASK_EAGER_PROPAGATES = False
# Crash safety (tasks are idempotent, so running one twice is harmless, losing one is not): a
# message is acknowledged only after its task finished; a pool process killed mid-task puts it
# back on the queue at once; a whole worker killed mid-task leaves it unacknowledged in Redis,
# where any worker restores it after the visibility timeout. That timeout must exceed the
# longest task (time limit 3600 s), or a running task would be handed to a second worker.
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_WORKER_CANCEL_LONG_RUNNING_TASKS_ON_CONNECTION_LOSS = True
CELERY_BROKER_TRANSPORT_OPTIONS = {
    "visibility_timeout": env.int("CELERY_VISIBILITY_TIMEOUT", default=3900),
    "unacked_restore_interval": env.int("CELERY_UNACKED_RESTORE_INTERVAL", default=30),
    "unacked_restore_throttle": 1,
    # A broker that vanishes must not hang a web request or a worker.
    "socket_timeout": env.float("CELERY_BROKER_SOCKET_TIMEOUT", default=5.0),
    "socket_connect_timeout": env.float("CELERY_BROKER_CONNECT_TIMEOUT", default=2.0),
    "retry_on_timeout": True,
    "health_check_interval": 25,
}
CELERY_BROKER_CONNECTION_TIMEOUT = env.float("CELERY_BROKER_CONNECT_TIMEOUT", default=2.0)
# Workers keep reconnecting to the broker for as long as it is down (the default gives up).
CELERY_BROKER_CONNECTION_MAX_RETRIES = None
# Publishing (web processes): a few quick retries, then the caller records the work as pending
# (see core.broker) instead of waiting on the broker.
CELERY_TASK_PUBLISH_RETRY = True
CELERY_TASK_PUBLISH_RETRY_POLICY = {
    "max_retries": env.int("CELERY_PUBLISH_MAX_RETRIES", default=2),
    "interval_start": 0,
    "interval_step": 0.2,
    "interval_max": 0.5,
}
CELERY_TASK_TIME_LIMIT = env.int("CELERY_TASK_TIME_LIMIT", default=600)
CELERY_TASK_SOFT_TIME_LIMIT = env.int("CELERY_TASK_SOFT_TIME_LIMIT", default=540)
CELERY_TASK_DEFAULT_QUEUE = "default"
CELERY_TASK_ROUTES = {
    "safety.*": {"queue": "scan"},
    "annotations.import.*": {"queue": "import"},
    "rewardhub.train_learned_component": {"queue": "learn"},
    "rewardhub.refresh_step_uncertainty": {"queue": "learn"},
    # Learned parts of scores left out of a response (over the synchronous budget): their own
    # queue, so they never wait behind a training run.
    "rewardhub.score_learned": {"queue": "embed"},
}
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# Workers log through LOGGING (rewardhub.settings.logging; LOG_FORMAT=json: one JSON object per
# line), like the API.
CELERY_WORKER_HIJACK_ROOT_LOGGER = False
