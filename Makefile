# Every target creates or refreshes .venv on demand; a fresh machine needs only Python 3.11 and Java 17.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
export PYSPARK_PYTHON := $(CURDIR)/$(BIN)/python
export PYSPARK_DRIVER_PYTHON := $(CURDIR)/$(BIN)/python

JARS := build/jars
JAR_STAMPS := $(JARS)/kafka/.fetched $(JARS)/kafka-shell/.fetched $(JARS)/spark/.fetched
ORACLE := $(JARS)/oracle/classes/.compiled

.PHONY: run test test-long check docs lint typecheck bench clean install jars fuzz config-types config-defaults

install: $(STAMP) jars

$(STAMP): pyproject.toml Makefile
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[test]'
	command -v chromium >/dev/null || (apt-get update && apt-get install -y chromium)
	command -v mvn >/dev/null && command -v javac >/dev/null || (apt-get update && apt-get install -y maven openjdk-17-jdk-headless)
	ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || (apt-get update && apt-get install -y postgresql)
	command -v prometheus >/dev/null && command -v promtool >/dev/null || (apt-get update && apt-get install -y prometheus)
	command -v prometheus-alertmanager >/dev/null || (apt-get update && apt-get install -y prometheus-alertmanager)
	touch $(STAMP)

# Java artifacts, one folder per set (kraftlake/settings/jars.py says which is which): Maven copies each pom's
# dependencies; the Spark set then drops what pyspark's own jars already hold.
jars: $(JAR_STAMPS) $(ORACLE)

$(JARS)/%/.fetched: java/%/pom.xml | $(STAMP)
	rm -rf $(JARS)/$*
	mvn -q -B -f java/$*/pom.xml dependency:copy-dependencies -DexcludeScope=provided -DoutputDirectory=$(CURDIR)/$(JARS)/$*
	test "$*" != spark || $(BIN)/python -m kraftlake.settings.jars prune $(JARS)/spark
	touch $@

$(ORACLE): $(wildcard java/oracle/src/*.java) $(JARS)/kafka/.fetched
	rm -rf $(JARS)/oracle/classes && mkdir -p $(JARS)/oracle/classes
	test -z "$(wildcard java/oracle/src/*.java)" || javac -d $(JARS)/oracle/classes -cp '$(JARS)/kafka/*' $(wildcard java/oracle/src/*.java)
	touch $@

# Kafka's config definitions, which say which config values are secret (kraftlake/records/config_secrecy.py),
# written from Kafka's jars; tests/records/test_config_secrecy.py fails when the kept file differs from them.
config-types: $(ORACLE)
	java -cp '$(JARS)/oracle/classes:$(JARS)/kafka/*' kraftlake.oracle.KafkaConfigTypes > kraftlake/records/kafka_config_types.tsv

# Kafka's config defaults and topic configs' cluster-default synonyms (kraftlake/records/config_defaults.py);
# tests/explorer/test_config_defaults.py fails when the kept file differs from them.
config-defaults: $(ORACLE)
	java -cp '$(JARS)/oracle/classes:$(JARS)/kafka/*' kraftlake.oracle.KafkaConfigTypes --defaults > kraftlake/records/kafka_config_defaults.tsv

lint: $(STAMP)
	$(BIN)/ruff check .

typecheck: $(STAMP)
	$(BIN)/mypy

# Two pytest processes (pytest-xdist): much of the suite waits on Kafka and Spark; tests/lifetimes.py groups the
# tests that share a slow server into one process and ends each server after its last test there.
test: install typecheck docs
	$(BIN)/ruff check .
	$(BIN)/python -m pytest -q -m "not long" -n 2 --dist loadgroup

# The tests that take minutes each (marker `long`): run before a release, or after a change to what they cover.
test-long: install
	$(BIN)/python -m pytest -q -m long

# The fast lane before `make test`: lint, types and the unit tests: the packages' folders below, less any
# test that starts a JVM or a server (marker `jvm`, tests/conftest.py) and the longest property and
# simulation runs (marker `slow`). The warehouse's tests (tests/lake: real Delta tables, writers racing in
# processes), the jobs', the followers' and the fuzz smoke stay in `make test`, which CI runs.
CHECK_TESTS := tests/records tests/replay tests/image_schema tests/settings tests/inputs tests/cli tests/bench tests/brokersim \
	tests/controller tests/raft tests/docs
# The jars too: some of these tests read Kafka's own schemas out of its jar, or check the Spark class path (from
# nothing, the first `make check` fetches them once, as `make test` does).
check: $(STAMP) jars
	$(BIN)/ruff check .
	$(BIN)/mypy
	$(BIN)/python -m pytest -q -m "not jvm and not slow" --durations=10 $(CHECK_TESTS)

# The docs site (docs/, mkdocs.yml) into build/site; strict: a broken link or a missing page fails.
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --quiet

# `make bench` runs every module, `make bench fleet jobs` only those (the names after `bench` are its arguments)
BENCH_NAMES := $(if $(filter bench,$(firstword $(MAKECMDGOALS))),$(wordlist 2,$(words $(MAKECMDGOALS)),$(MAKECMDGOALS)))
bench: install
	$(BIN)/python -m bench $(BENCH_NAMES)

ifneq ($(BENCH_NAMES),)
$(BENCH_NAMES):
	@:
endif

# Coverage-guided fuzzing (README, "Fuzzing the readers"): each target FUZZ_SECONDS, its corpus kept across runs
# in build/fuzz-corpus; `make test` runs only the smoke (seeds, regressions, deterministic mutations).
FUZZ_SECONDS ?= 180
fuzz: $(STAMP)
	for target in $$($(BIN)/python -c 'from tests.fuzz.targets import TARGETS; print(*TARGETS)'); do \
	  $(BIN)/python -m tests.fuzz $$target --seconds $(FUZZ_SECONDS) --corpus build/fuzz-corpus/$$target \
	    --artifacts build/fuzz-artifacts || exit 1; \
	done

# The demo, then the history explorer over its warehouse: `kraftlake ui` prints its URL and where its metrics are
# (the demo cluster's health, as Prometheus would scrape it) and serves until Ctrl-C (`make run UI=0` stops after
# the demo's report).
UI ?= 1
run: install
	$(BIN)/kraftlake demo
	test "$(UI)" = 0 || $(BIN)/kraftlake ui --warehouse warehouse --name demo --metrics-address 0

clean:
	rm -rf warehouse run build .pytest_cache .ruff_cache .hypothesis
	find checkpoints -mindepth 1 ! -name .gitkeep -exec rm -rf {} +
	find . -name __pycache__ -not -path './.venv/*' -exec rm -rf {} +
