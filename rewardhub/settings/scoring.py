"""Scoring: the score API's batches, scoring records, and the learned process reward."""

from __future__ import annotations

import re

from django.core.exceptions import ImproperlyConfigured

from rewardhub.settings.environment import env

SCORING = {
    "MAX_BATCH": env.int("RH_SCORE_MAX_BATCH", default=256),
    # The text endpoint (C3): OpenRLHF 0.8 and 0.9 send a whole rollout batch (rollout batch
    # size x samples per prompt) in one request; the body limit (RH_MAX_REQUEST_BYTES) still holds.
    "TEXT_MAX_BATCH": env.int("RH_TEXT_MAX_BATCH", default=4096),
    # The OpenRLHF version every text request is answered for when its URL names none
    # (``?openrlhf=``): 0.8 leaves ``extra_logs`` out, which OpenRLHF 0.8.x cannot read.
    # Empty: a current OpenRLHF (0.9 and later).
    "OPENRLHF_COMPAT": env.str("RH_OPENRLHF_COMPAT", default=""),
    # Scoring records are written in bulk by a background thread, off the request path.
    "RECORD_IN_BACKGROUND": env.bool("RH_SCORE_RECORD_IN_BACKGROUND", default=True),
    "RECORD_FLUSH_SECONDS": env.float("RH_SCORE_RECORD_FLUSH_SECONDS", default=1.0),
    "RECORD_BATCH": env.int("RH_SCORE_RECORD_BATCH", default=500),
    # Records waiting for the database, each holding its trajectory (~60 KB for 30 steps): the
    # reserve for a database outage; when full, the oldest are dropped (and logged).
    "RECORD_QUEUE_MAX": env.int("RH_SCORE_RECORD_QUEUE_MAX", default=10_000),
    # Share of unflagged scored rollouts imported for expert review (flagged ones always are).
    "REVIEW_SAMPLE_RATE": env.float("RH_SCORE_REVIEW_SAMPLE_RATE", default=0.01),
}

# --- Learned process reward -----------------------------------------------------------------
# Where trained artifacts are stored (default var/learned); shared storage when workers and API
# processes run on several machines.
LEARNED_ARTIFACT_ROOT = env.str("RH_LEARNED_ARTIFACT_ROOT", default="") or None
LEARNED = {
    # Score API: at most this many steps per trajectory that no embedding cache holds are
    # encoded in the request (~8 ms each on one CPU thread with MiniLM int8). Over it, the
    # learned part is left out of the response ("learned_status": "pending") and a Celery task
    # (queue `embed`) scores it, warms the shared embedding cache and rewrites the scoring
    # record with the final reward. -1: no limit (always synchronous).
    "SYNC_MAX_UNCACHED_STEPS": env.int("RH_LEARNED_SYNC_MAX_UNCACHED_STEPS", default=4),
    # Encoder used for training (JSON of rewards.learned.EncoderConfig; {}: MiniLM int8).
    "ENCODER": env.json("RH_LEARNED_ENCODER", default={}),
}

# A misspelt compatibility version would answer every text request 400: refuse it at start-up.
if not re.fullmatch(r"(\d{1,4}\.\d{1,4}(\.(\d{1,4}|x))?)?", SCORING["OPENRLHF_COMPAT"].strip()):
    raise ImproperlyConfigured(
        f"RH_OPENRLHF_COMPAT={SCORING['OPENRLHF_COMPAT']!r}: "
        "an OpenRLHF version such as 0.8, or empty"
    )
