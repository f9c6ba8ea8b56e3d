"""ASGI entry point."""

import os

from django.core.asgi import get_asgi_application

from rewardhub.checks import refuse_repository_secret_key

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "rewardhub.settings")
application = get_asgi_application()

refuse_repository_secret_key()  # outside DEBUG, a key from the repository stops us here
