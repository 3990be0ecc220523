# kafka-soak: `make soak` runs a scenario on a real Apache Kafka the run starts itself, `make test` runs the tests.
# Both install what they need first (Debian packages, a virtualenv from requirements.txt, Kafka's jars from Maven
# Central into .cache/, Airflow's DB).
SHELL := /bin/bash
VENV := $(CURDIR)/.venv
PY := $(VENV)/bin/python
SCENARIO ?= soak_eos_id_assignment
CONF ?= {}
PYTEST_ARGS ?=
SIZE ?= quick
# To the recipes through the environment, never pasted into a shell line: a value with a quote stays one argument.
export SCENARIO CONF

export AIRFLOW_HOME := $(CURDIR)/.airflow
export AIRFLOW__CORE__DAGS_FOLDER := $(CURDIR)/dags
export AIRFLOW__CORE__PLUGINS_FOLDER := $(CURDIR)/plugins
export AIRFLOW__CORE__LOAD_EXAMPLES := False
export AIRFLOW_CONN_SPARK_DEFAULT := {"conn_type": "spark", "host": "local[2]"}
export PYTHONPATH := $(CURDIR)/plugins
export PATH := $(VENV)/bin:$(PATH)
export PYSPARK_PYTHON := $(PY)
export SPARK_LOCAL_IP := 127.0.0.1

.PHONY: soak test test-unit test-component test-e2e bench reproduction bugs fault-controls quota-eos workflow-rollback setup system-deps kafka-jars spark-kafka-jars streams-app test-deps lint env worker-image kafka-image streams-image

soak: setup
	@$(PY) -m kafka_soak.cli soak "$$SCENARIO" --conf "$$CONF"

# Two workers: an end-to-end run mostly waits (program steps, drain); tests that share the Docker engine stay on one.
# (Three kept the two cores 73 % busy on average, near 100 % for long stretches, and timing-bound runs slowed.)
# The 25 slowest tests are listed at the end: where the suite's time goes.
test: setup test-deps
	$(PY) -m pytest -n 2 --dist loadgroup --durations=25 $(PYTEST_ARGS)

# One layer of the suite (tests/<layer>): unit (no broker, Spark, Docker or DAG run), component (a real broker, Spark,
# Docker engine or install, no DAG run) or end-to-end (whole DAG runs, a scheduler, `make soak`).
test-unit: setup
	$(PY) -m pytest -n 2 --dist loadgroup tests/unit $(PYTEST_ARGS)

test-component test-e2e: setup test-deps
	$(PY) -m pytest -n 2 --dist loadgroup --durations=25 tests/$(@:test-%=%) $(PYTEST_ARGS)

# Benchmarks against their baselines, written to docs/benchmarks.md (SIZE=quick: minutes; SIZE=large: longer).
bench: setup
	$(PY) bench/broker_start.py --size $(SIZE)
	$(PY) bench/broker_recovery.py --size $(SIZE)
	$(PY) bench/broker_jit.py --size $(SIZE)
	$(PY) bench/toggle.py --size $(SIZE)
	$(PY) bench/generator.py --size $(SIZE)
	$(PY) bench/validation.py --size $(SIZE)
	$(PY) bench/validation_profile.py --size $(SIZE)
	$(PY) bench/checker_jit.py --size $(SIZE)
	$(PY) bench/checker_class_data.py --size $(SIZE)
	$(PY) bench/checker_scaling.py --size $(SIZE)
	$(PY) bench/checker_floors.py --size $(SIZE)
	$(PY) bench/dag_start.py --size $(SIZE)
	$(PY) bench/overhead.py --size $(SIZE)
	$(PY) bench/run_processes.py --size $(SIZE)
	$(PY) bench/report_night.py --size $(SIZE)
	$(PY) bench/sampler_cost.py --size $(SIZE)
	$(PY) bench/report.py

# How often the seed scenarios catch Kafka Streams 3.4.0 and pass the newest release (quick: 5 matrix runs per
# scenario, about 30 minutes; SIZE=large: 10, about 55 minutes). Written to docs/benchmarks.md and quoted in docs/scenarios.md.
reproduction: setup
	$(PY) bench/reproduction.py --size $(SIZE)
	$(PY) bench/report.py

# How often each known-bug scenario (dags/scenarios/bug_kafka_<n>.yaml, bug_librdkafka_<n>.yaml) catches its bug on the
# affected Kafka Streams or confluent-kafka release and passes the fixed one (quick: 5 runs per scenario, about 90
# minutes; SIZE=large: 10). Into docs/benchmarks.md and quoted in docs/bugs.md. BUGS="bug_kafka_<n> ..." measures only
# those again.
bugs: setup
	$(PY) bench/bugs.py --size $(SIZE)
	$(PY) bench/report.py

# No false alarm from a fault: the reference worker and the Kafka Streams app through each fault kind beyond a process
# at a dose a correct app survives (quick: 5 runs per control and app, about 3 minutes each; SIZE=large: 10). Into
# docs/benchmarks.md and quoted in docs/scenarios.md. CONTROLS="stall ..." measures only those again.
fault-controls: setup
	$(PY) bench/fault_controls.py --size $(SIZE)
	$(PY) bench/report.py

# What soak_quota_eos shows on Kafka Streams 3.8.1 and the newest release over a 35 KB/s producer quota (quick: 3 runs
# of 4 minutes of load, about 20 minutes; SIZE=large: 5 runs of the scenario's 10 minutes). Into docs/benchmarks.md.
quota-eos: setup
	$(PY) bench/quota_eos.py --size $(SIZE)
	$(PY) bench/report.py

# How often soak_workflow_rollback catches the original's KTable self-join and passes the single writer (quick: 3 runs
# of a 60 s program and the sequential control, about 12 minutes; SIZE=large: 5 runs of its defaults). Into
# docs/benchmarks.md and quoted in docs/scenarios.md.
workflow-rollback: setup
	$(PY) bench/workflow_rollback.py --size $(SIZE)
	$(PY) bench/report.py

# Apache Kafka from the project's jars as an image for backend=docker (BASE_IMAGE: see docker/kafka.Dockerfile).
KAFKA_VERSION ?= $(shell $(PY) -c "from kafka_soak.params import KAFKA_VERSION as v; print(v)" 2>/dev/null)
kafka-image: setup
	$(PY) -m kafka_soak.cli kafka-jars $(KAFKA_VERSION) >/dev/null
	docker build -f docker/kafka.Dockerfile --build-arg KAFKA_VERSION=$(KAFKA_VERSION) \
		-t kafka-soak-kafka:$(KAFKA_VERSION) .

# The Kafka Streams app built against STREAMS_VERSION as an image for runtime=docker (docker/streams.Dockerfile).
STREAMS_VERSION ?= $(shell $(PY) -c "from kafka_soak.params import STREAMS_VERSION as v; print(v)" 2>/dev/null)
streams-image: setup
	docker build -f docker/streams.Dockerfile -t kafka-soak-streams:$(STREAMS_VERSION) \
		--build-arg APP_DIR=$$($(PY) -m kafka_soak.cli streams-app $(STREAMS_VERSION) | cut -d' ' -f1 | \
		sed 's|^$(CURDIR)/||') .

# The reference worker as an image for runtime=docker (BASE_IMAGE/PIP_ARGS: see docker/worker.Dockerfile).
worker-image:
	docker build -f docker/worker.Dockerfile -t kafka-soak-worker:latest .

lint: setup
	$(VENV)/bin/ruff check dags plugins spark_jobs tests bench

# Print the environment for running airflow by hand: source <(make -s env)
env:
	@for v in AIRFLOW_HOME AIRFLOW__CORE__DAGS_FOLDER AIRFLOW__CORE__PLUGINS_FOLDER AIRFLOW__CORE__LOAD_EXAMPLES \
		PYTHONPATH PATH PYSPARK_PYTHON SPARK_LOCAL_IP; do printf "export %s=%q\n" $$v "$${!v}"; done
	@printf "export AIRFLOW_CONN_SPARK_DEFAULT=%q\n" '$(AIRFLOW_CONN_SPARK_DEFAULT)'

setup: system-deps $(VENV)/.installed $(AIRFLOW_HOME)/airflow.db kafka-jars spark-kafka-jars streams-app

# Kafka and Spark need Java 17; Maven fetches Kafka's jars; a program that cuts links needs iproute2 and nftables;
# everything else comes from PyPI.
system-deps:
	@command -v java >/dev/null && command -v mvn >/dev/null && command -v ip >/dev/null && command -v nft >/dev/null || \
		{ apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
		openjdk-17-jre-headless maven iproute2 nftables; }

# Apache Kafka's jars of the default version (backends/kafka/pom.xml), cached in .cache/kafka/<version>/; another
# kafka_version is fetched by the run that asks for it.
kafka-jars: $(VENV)/.installed
	@$(PY) -m kafka_soak.cli kafka-jars >/dev/null

# Spark's own Kafka source for the checker (spark_jobs/pom.xml), cached in .cache/spark-kafka/<spark version>/.
spark-kafka-jars: $(VENV)/.installed
	@$(PY) -m kafka_soak.cli spark-kafka-jars >/dev/null

# The Kafka Streams reference app (apps/streams) built against the default Kafka Streams version, cached in
# .cache/apps/streams/<version>-<source hash>/; another streams_version is built by the run that asks for it.
streams-app: $(VENV)/.installed
	@$(PY) -m kafka_soak.cli streams-app

# The Docker runtime's tests run a real engine (started by the tests when none runs) and build a base image
# with debootstrap, as no image can be pulled on machines without a registry. The report is looked at in
# headless Chromium.
test-deps:
	@command -v dockerd >/dev/null && command -v debootstrap >/dev/null && command -v chromium >/dev/null && \
		command -v chromedriver >/dev/null || { apt-get update && \
		DEBIAN_FRONTEND=noninteractive apt-get install -y docker.io debootstrap chromium chromium-driver; }

# uv resolves requirements.txt to the same versions pip does, and downloads and installs them in parallel (a fresh
# virtualenv in 20 s against pip's 50 s with both caches warm; pip's took up to 7 minutes when it had to download).
# It trusts the system's certificates and pip's find-links as pip does here; where it cannot install, pip does.
# Both write each module's bytecode at install, as pip does by default and uv only when asked: a process started
# with PYTHONDONTWRITEBYTECODE (set on some machines) would otherwise compile Airflow, Spark's and GX's Python
# at every start (2.1 s of each `airflow dags test`'s 7.9 s).
# Then uv's cache keeps only what the install used: where the index answers each revalidation with a new response, uv
# keeps another copy of every source distribution it built (pyspark's: 1.4 GiB) at each install, and the installs of
# fresh clones filled the disk (56 of them, 49 GiB, in a day).
$(VENV)/.installed: requirements.txt
	python3 -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --disable-pip-version-check uv==0.13.9
	$(VENV)/bin/uv pip install --quiet --native-tls --compile-bytecode --python $(VENV)/bin/python \
		$${PIP_FIND_LINKS:+--find-links "$$PIP_FIND_LINKS"} -r requirements.txt || \
		{ echo "uv could not install requirements.txt; installing with pip"; \
		$(VENV)/bin/pip install --quiet --disable-pip-version-check -r requirements.txt; }
	$(VENV)/bin/uv cache prune --quiet || echo "uv could not prune its cache (see: uv cache dir)"
	touch $@

$(AIRFLOW_HOME)/airflow.db: $(VENV)/.installed
	mkdir -p $(AIRFLOW_HOME)
	$(VENV)/bin/airflow db migrate > $(AIRFLOW_HOME)/db-migrate.log 2>&1 || { cat $(AIRFLOW_HOME)/db-migrate.log; exit 1; }
