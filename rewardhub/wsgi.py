"""WSGI entry point (gunicorn rewardhub.wsgi).

Wrapped in load shedding (``rewardhub.load_shedding``), which acts only under the gunicorn
worker class that measures queue waits (``rewardhub.gunicorn_workers.SheddingThreadWorker``).
"""

import os

from django.conf import settings
from django.core.wsgi import get_wsgi_application

from rewardhub.load_shedding import LoadShedding

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "rewardhub.settings")
application = LoadShedding(
    get_wsgi_application(),
    max_wait=settings.RESILIENCE["SHED_QUEUE_SECONDS"],
    max_queue=settings.RESILIENCE["SHED_MAX_QUEUE"],
    retry_after=settings.RESILIENCE["SHED_RETRY_AFTER"],
    exempt=settings.RESILIENCE["SHED_EXEMPT_PATHS"],
)
