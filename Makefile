# Every target creates or refreshes .venv on demand; a fresh machine needs only Python 3.11 and Java 17.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
export PYSPARK_PYTHON := $(CURDIR)/$(BIN)/python
export PYSPARK_DRIVER_PYTHON := $(CURDIR)/$(BIN)/python

.PHONY: run test lint typecheck bench clean install

install: $(STAMP)

# delta-spark pins pyspark<=4.2 while this project needs pyspark 4.3 (Python streaming data sources);
# its Python API is only a thin wrapper over jars we never load here, so it goes in without its pins.
$(STAMP): pyproject.toml Makefile
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[test]'
	$(BIN)/python -m pip install -q --no-deps delta-spark==4.4.1
	touch $(STAMP)

lint: $(STAMP)
	$(BIN)/ruff check .

typecheck: $(STAMP)
	$(BIN)/mypy

test: $(STAMP) typecheck
	$(BIN)/ruff check .
	$(BIN)/python -m pytest -q

bench: $(STAMP)
	$(BIN)/python -m bench

run: $(STAMP)
	$(BIN)/kraftlake demo

clean:
	rm -rf warehouse run build .pytest_cache .ruff_cache .hypothesis
	find checkpoints -mindepth 1 ! -name .gitkeep -exec rm -rf {} +
	find . -name __pycache__ -not -path './.venv/*' -exec rm -rf {} +
