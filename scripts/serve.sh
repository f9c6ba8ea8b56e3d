#!/usr/bin/env bash
# Production run mode: gunicorn for the API plus one Celery worker per queue, all configured from
# the environment (DATABASE_URL, CELERY_BROKER_URL, DJANGO_SECRET_KEY, DJANGO_ALLOWED_HOSTS ...).
# Scale out by running more of either on more machines against the same database and broker.
set -euo pipefail
cd "$(dirname "$0")/.."
: "${DATABASE_URL:?set DATABASE_URL (PostgreSQL)}"
: "${CELERY_BROKER_URL:?set CELERY_BROKER_URL (Redis)}"
export DJANGO_SETTINGS_MODULE="${DJANGO_SETTINGS_MODULE:-rewardhub.settings.production}"
# Fewer glibc malloc arenas: threaded workers otherwise keep growing RSS from fragmentation.
export MALLOC_ARENA_MAX="${MALLOC_ARENA_MAX:-2}"
PY=.venv/bin/python
BIND="${RH_BIND:-127.0.0.1:8000}"
WORKERS="${RH_WEB_WORKERS:-2}"
THREADS="${RH_WEB_THREADS:-4}"

$PY manage.py migrate --noinput
$PY manage.py collectstatic --noinput >/dev/null

pids=()
cleanup() { kill "${pids[@]}" 2>/dev/null || true; wait || true; }
trap cleanup EXIT INT TERM
for queue in default scan import learn embed; do
  .venv/bin/celery -A rewardhub worker -Q "$queue" -n "$queue@%h" --concurrency 1 -l info &
  pids+=($!)
done
# gthread workers with a bounded queue: overload is shed with a quick 503 + Retry-After
# (RH_SHED_MAX_QUEUE, RH_SHED_QUEUE_SECONDS) instead of an ever longer queue.
.venv/bin/gunicorn rewardhub.wsgi --bind "$BIND" --workers "$WORKERS" --threads "$THREADS" \
  --worker-class rewardhub.gunicorn_workers.SheddingThreadWorker --access-logfile - &
pids+=($!)
wait -n "${pids[@]}"
