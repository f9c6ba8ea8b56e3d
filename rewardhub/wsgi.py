"""WSGI entry point (gunicorn rewardhub.wsgi).

Wrapped in load shedding (``rewardhub.load_shedding``), which acts only under the gunicorn
worker class that measures queue waits (``rewardhub.gunicorn_workers.SheddingThreadWorker``).
"""

import gc
import os

from django.conf import settings
from django.core.wsgi import get_wsgi_application
from django.urls import get_resolver

from rewardhub.checks import refuse_repository_secret_key
from rewardhub.load_shedding import LoadShedding

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "rewardhub.settings")
_django = get_wsgi_application()
refuse_repository_secret_key()  # outside DEBUG, a key from the repository stops us here
# Import every view now (Django loads the URLconf lazily, on the first request), then move all
# these start-up objects out of the collector's reach: a full collection over them took about
# 110 ms here, a stall that landed in the score API's p99.
get_resolver().url_patterns  # noqa: B018
gc.collect()
gc.freeze()
gc.set_threshold(*settings.GC_THRESHOLDS)
application = LoadShedding(
    _django,
    max_wait=settings.RESILIENCE["SHED_QUEUE_SECONDS"],
    max_queue=settings.RESILIENCE["SHED_MAX_QUEUE"],
    retry_after=settings.RESILIENCE["SHED_RETRY_AFTER"],
    exempt=settings.RESILIENCE["SHED_EXEMPT_PATHS"],
    close_after_seconds=settings.RESILIENCE["CLOSE_AFTER_SECONDS"],
)
