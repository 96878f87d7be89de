# Cairn — the two commands are `make dev` and `make test`; everything else is a helper.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: dev test test-unprepared check invoke bench synth rds-ca lint typecheck clean

# Re-install only when the dependency list changes.
$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; assert sys.version_info >= (3, 11), "Cairn needs Python 3.11+, found " + sys.version.split()[0]'
	$(PYTHON) -m venv $(VENV)
	@# torch first, pinned, so pip takes the CPU build instead of fetching CUDA wheels
	$(PY) -m pip install --quiet --disable-pip-version-check "torch==2.13.0"
	$(PY) -m pip install --quiet --disable-pip-version-check -e ".[dev,local]"
	@touch $(STAMP)

# The local stack: embedded Postgres (data under .cairn/), migrations, API on 127.0.0.1:8283.
# The workflows' ASL is built from the CDK app first (build/local/, once per change), so
# the stack starts without the CDK's Node.js process.
dev: $(STAMP)
	$(PY) -m cairn.adapters.local.stepfunctions
	$(PY) -m cairn.local

# The console's browser tests drive Debian's Chromium through its chromedriver (a system
# package: installed here, as root or with sudo, when missing).
BROWSER := /usr/bin/chromedriver
SUDO := $(if $(filter 0,$(shell id -u)),,sudo)
$(BROWSER):
	$(SUDO) apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq chromium chromium-driver > /dev/null

# The whole suite in $(TEST_PROCESSES) processes (pytest-xdist), a test file to each, every
# process on a fresh embedded Postgres of its own (or a database of its own on $$DATABASE_URL).
# Much of a test's time is waiting (on a stack, a subprocess, the database), so two
# processes beat one on 2 cores; TEST_PROCESSES=0 runs it in this one. Exit status is pytest's.
TEST_PROCESSES ?= 2
XDIST = -n $(TEST_PROCESSES) --dist loadfile
test: $(STAMP) $(BROWSER)
	$(PY) -m pytest $(XDIST) $(PYTEST_ARGS)
	$(if $(PYTEST_ARGS),,$(MAKE) --no-print-directory test-unprepared)

# The engine's and the message routes' tests again with no statement prepared, as every
# deployed shape but `size=small` runs behind RDS Proxy: there a step's statements run as
# their PL/pgSQL functions (migrations 0048-0051). Part of `make test` (a few minutes).
UNPREPARED := $(addprefix tests/integration/test_,step_loop.py step_approvals.py \
	step_durability.py step_worker.py compaction.py context_entries.py coalescing_race.py \
	statement_functions.py pipeline_errors.py store.py kept_counts.py parsed_windows.py \
	tenancy_isolation.py) $(addprefix tests/api/test_,http_contract.py agent_messages.py \
	history.py letta_client.py limits.py usage.py api_keys.py streaming.py coalescing.py \
	concurrency.py memory_tools_run.py batches.py groups.py)
test-unprepared: $(STAMP)
	CAIRN_TEST_PREPARED=0 $(PY) -m pytest $(XDIST) $(UNPREPARED)

# The quick tier: lint, types and the tests that need no database, stack, browser or CDK
# (a few minutes on 2 cores); `make test` stays the whole suite.
QUICK := not db and not e2e and not browser and not infra
check: lint typecheck
	$(PY) -m pytest -m "$(QUICK)" $(XDIST) $(PYTEST_ARGS)

# One handler on one sample event against the local database, e.g.
#   make invoke FN=api EVENT=events/api/agents-create.json
#   AGENT_ID=agent-... make invoke FN=api EVENT=events/api/messages-send.json
invoke: $(STAMP)
	@test -n "$(FN)" -a -n "$(EVENT)" || (echo "usage: make invoke FN=<function> EVENT=<file>"; exit 2)
	$(PY) -m cairn.local.invoke $(FN) $(EVENT) $(if $(ATTR),--attribute $(ATTR),)

# Step overhead through the local stack with an instant fake LLM; figures go to README.
# BENCH=packaging (or search) runs another benchmark of bench/.
BENCH ?= step_overhead
bench: $(STAMP)
	$(PY) bench/$(BENCH).py $(BENCH_ARGS)

# The CDK CLI, pinned (its newest major cannot read aws-cdk-lib 2's cloud assembly).
CDK := node_modules/.bin/cdk
$(CDK): package.json
	npm install --no-audit --no-fund --loglevel=error
	@touch $(CDK)

# The cloud assembly in cdk.out/, offline (builds the dependency layer with pip unless
# CDK_ARGS="-c skip_bundling=true"); `cdk deploy` takes the same flags, e.g. -c dev=true.
synth: $(STAMP) $(CDK)
	JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION=20 $(CDK) synth --quiet $(CDK_ARGS)

# The RDS certificate authorities the small shape's functions check the cluster against,
# refreshed from AWS's trust store into infra/cairn_infra/rds-ca-bundle.pem (commit it);
# tests/infra/test_packaging.py fails 90 days before one of them expires.
rds-ca: $(STAMP)
	cd infra && ../$(VENV)/bin/python -m cairn_infra.packaging

lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

typecheck: $(STAMP)
	$(VENV)/bin/mypy

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache .mypy_cache node_modules cdk.out
