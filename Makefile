# RewardHub: `make run` serves the demo, `make test` runs the whole suite on PostgreSQL.
SHELL := /bin/bash
PYTHON ?= python3.11
VENV := .venv
PY := $(VENV)/bin/python
# Two installs: the runtime requirements alone (what `make serve` needs), and those plus the
# development tools (tests, linters, type checker) for everything else.
RUNTIME_STAMP := $(VENV)/.installed-runtime
STAMP := $(VENV)/.installed
TEST_DATABASE_URL ?= postgres://postgres@127.0.0.1:5432/rewardhub
TEST_REDIS_URL ?= redis://127.0.0.1:6379/15
# The pure cores (no Django, no I/O) that `make check` type-checks with mypy --strict; the
# configuration is [tool.mypy] in pyproject.toml.
MYPY_STRICT_PATHS := core/actions.py core/bidi.py core/canonical.py core/outcomes.py core/jsonlimits.py core/text_actions.py safety/analyzer safety/effects rewards/scoring rewards/evaluation trainer_bridge/losses.py

.PHONY: install run test test-fast test-frameworks lint format check bench bench-http bench-burst services clean demo-train serve loadtest soak fuzz schemathesis

$(RUNTIME_STAMP): requirements.txt
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements.txt
	@touch $(RUNTIME_STAMP)

# requirements-dev.txt includes requirements.txt, so this install is the runtime one too.
$(STAMP): requirements.txt requirements-dev.txt
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements-dev.txt
	@touch $(STAMP) $(RUNTIME_STAMP)

install: $(STAMP)

run: $(STAMP)
	@mkdir -p var
	$(PY) manage.py migrate --noinput
	$(PY) manage.py seed_demo
	@echo "RewardHub at http://127.0.0.1:$${PORT:-8000} (demo logins above and on the sign-in page; password from RH_DEMO_PASSWORD, default rewardhub-demo)"
	DJANGO_DEBUG=$${DJANGO_DEBUG:-true} $(PY) manage.py runserver 127.0.0.1:$${PORT:-8000}

services:
	@scripts/ensure_services.sh
	@scripts/ensure_chromium.sh

# The pool is off in tests: pooled connections of the live-server thread would keep the test
# database open when pytest-django drops it (its configuration is tested on its own). Scoring
# records are flushed by the tests themselves (one test runs the background thread).
TEST_ENV = DATABASE_URL=$(TEST_DATABASE_URL) DATABASE_POOL=false RH_SCORE_RECORD_IN_BACKGROUND=false RH_TEST_REDIS_URL=$(TEST_REDIS_URL)
test: $(STAMP) services
	$(TEST_ENV) $(PY) -m pytest -q
	$(MAKE) --no-print-directory check

# The inner loop: the same suite and environment without the tests that drive a browser, start
# real Celery workers or kill servers (markers browser, integration, fault), and without `check`
# (nor Chromium: only PostgreSQL and Redis are started if down).
test-fast: $(STAMP)
	@scripts/ensure_services.sh
	$(TEST_ENV) $(PY) -m pytest -q -m "not browser and not integration and not fault"

check: $(STAMP)
	@mkdir -p var
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy --strict $(MYPY_STRICT_PATHS)
	$(PY) manage.py makemigrations --check --dry-run
	DJANGO_SETTINGS_MODULE=rewardhub.settings.production DJANGO_SECRET_KEY=check-deploy-$$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n') \
	  DJANGO_ALLOWED_HOSTS=rewardhub.example.com $(PY) manage.py check --deploy --fail-level WARNING

lint: check

format: $(STAMP)
	$(VENV)/bin/ruff format .
	$(VENV)/bin/ruff check --fix .

# Production run mode: gunicorn + one Celery worker per queue, configured from the environment.
# Runtime requirements only: no test or development tools on a serving machine.
serve: $(RUNTIME_STAMP)
	scripts/serve.sh

# Benchmarks (never part of `make test`): wrk is installed on demand, PostgreSQL must answer.
bench: $(STAMP)
	@scripts/ensure_bench_tools.sh
	@scripts/ensure_services.sh
	$(PY) bench/bench_analyzer.py
	$(PY) bench/bench_scorer.py
	$(PY) bench/bench_score_http.py $(BENCH_HTTP_ARGS)
	$(PY) bench/bench_prefix_merge.py
	$(PY) bench/bench_review_viewer.py
	$(PY) bench/bench_evaluation.py

# HTTP scoring under gunicorn driven by wrk (own database rewardhub_bench; about 3 minutes):
# the shipped run mode against plain sync workers, with the ratio; BENCH_HTTP_ARGS adds classes.
bench-http: $(STAMP)
	@scripts/ensure_bench_tools.sh
	@scripts/ensure_services.sh
	$(PY) bench/bench_score_http.py $(BENCH_HTTP_ARGS)

# Load shedding: the score API at its sustainable rate, at 10x and after (own database
# rewardhub_loadtest; about 1 minute); exits non-zero on any 5xx other than 503.
loadtest: $(STAMP)
	@scripts/ensure_bench_tools.sh
	@scripts/ensure_services.sh
	$(PY) bench/loadtest.py $(LOADTEST_ARGS)

# Memory over a long run of distinct trajectories (own database rewardhub_soak); RSS of every
# gunicorn worker sampled; SOAK_SECONDS (default 600) sets the length.
SOAK_SECONDS ?= 600
soak: $(STAMP)
	@scripts/ensure_bench_tools.sh
	@scripts/ensure_services.sh
	$(PY) bench/soak.py --seconds $(SOAK_SECONDS) $(SOAK_ARGS)

# A burst of single-sample OpenRLHF requests (1,024 by default, BURST_ARGS) against the shipped
# gunicorn configuration, with OpenRLHF 0.11's retry rule; exits 1 if a reward was lost.
bench-burst: $(STAMP)
	@scripts/ensure_services.sh
	$(PY) bench/bench_burst.py $(BURST_ARGS)

# The RL frameworks' own code against the live service (never part of `make test`): TRL,
# verl and OpenRLHF in their own virtualenv (requirements-frameworks.txt; verl and OpenRLHF
# without their GPU dependencies; older verl and OpenRLHF beside it), trainer_bridge installed
# there as a package. About 10 minutes on 2 cores; see README "Trainer bridge".
FW_VENV := var/frameworks-venv
FW_PIP := $(FW_VENV)/bin/pip install --quiet --disable-pip-version-check
FW_STAMP := $(FW_VENV)/.installed
$(FW_STAMP): requirements-frameworks.txt
	@test -x $(FW_VENV)/bin/python || $(PYTHON) -m venv $(FW_VENV)
	$(FW_PIP) -r requirements-frameworks.txt
	$(FW_PIP) --no-deps verl==0.9.1 openrlhf==0.11.2
	rm -rf var/frameworks && mkdir -p var/frameworks
	$(FW_PIP) --no-deps --target var/frameworks/verl-0.6.1 verl==0.6.1
	$(FW_PIP) --no-deps --target var/frameworks/openrlhf-0.8.11 openrlhf==0.8.11
	$(FW_PIP) --no-deps --target var/frameworks/openrlhf-0.9.0 openrlhf==0.9.0
	@touch $(FW_STAMP)

test-frameworks: $(STAMP) $(FW_STAMP)
	@scripts/ensure_services.sh
	$(FW_PIP) --no-deps --force-reinstall ./trainer_bridge
	@rm -rf trainer_bridge/build trainer_bridge/*.egg-info
	$(PY) scripts/frameworks_check.py $(FRAMEWORKS_ARGS)

# Closed loop on this CPU: the embedded service (throwaway SQLite) scores a tiny policy that
# CISPO trains away from unsafe shell actions; prints one summary line and saves a plot.
demo-train: $(STAMP)
	@mkdir -p var/demo-train
	rm -f var/demo-train/db.sqlite3
	SQLITE_PATH=$(CURDIR)/var/demo-train/db.sqlite3 $(PY) -m trainer_bridge.demo --start-service --out-dir var/demo-train

# Bad input (never part of `make test`). A 1,000,000-input analyzer fuzz run on 2 processes
# (FUZZ_INPUTS, FUZZ_WORKERS, FUZZ_SEED); prints counts and the time per input.
fuzz: $(STAMP)
	$(PY) scripts/fuzz_analyzer.py --inputs $${FUZZ_INPUTS:-1000000} --workers $${FUZZ_WORKERS:-2} --seed $${FUZZ_SEED:-0}

# The large schemathesis campaign: every operation x every role against gunicorn on loopback,
# with its own throwaway database (CAMPAIGN_DATABASE_URL); SCHEMATHESIS_EXAMPLES per operation.
schemathesis: $(STAMP)
	@scripts/ensure_services.sh
	$(PY) scripts/schemathesis_campaign.py --max-examples $${SCHEMATHESIS_EXAMPLES:-100}

clean:
	rm -rf $(VENV) var .hypothesis
