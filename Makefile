# StateGuard — the front door. `make help` lists every target.
# `make eval` and `make test` set up the virtual environment themselves (no prior `make setup`).
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
# The stamp is keyed on the content of the dependency files: edit them and the venv refreshes.
DEPS_HASH := $(shell cat pyproject.toml | sha256sum | cut -c1-16)
STAMP := $(VENV)/.stamp-$(DEPS_HASH)
EXTRAS ?= dev
export OMP_NUM_THREADS ?= 1
RUN ?= runs/latest

.DEFAULT_GOAL := help
.PHONY: help setup test check eval demo bench synth sft rl serve view tables data clean

help: ## List targets with one line each
	@grep -hE '^[a-z -]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-8s %s\n", $$1, $$2}'

$(STAMP): pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e ".[$(EXTRAS)]"
	@rm -f $(VENV)/.stamp-*; touch $(STAMP)

setup: $(STAMP) ## Create/refresh .venv with the runtime and dev tools

test: $(STAMP) ## Run the test suite (CPU only)
	$(PY) -m pytest -q

check: $(STAMP) ## Lint (ruff) and type-check (mypy) the runtime library
	$(VENV)/bin/ruff check stateguard tests eval scripts
	$(VENV)/bin/mypy stateguard

eval: $(STAMP) ## Main job. For now: the built-in runtime demo (stale artifact caught after a revision)
	$(PY) -m eval.demo run_dir=$(RUN)

bench: $(STAMP) ## Runtime micro-benchmarks (commit, hint packing, invalidation) as a table
	$(PY) -m eval.bench.runtime

synth sft rl serve view tables data: ## Later issues (synthesis, training, serving, viewer, tables, data)
	@echo "make $@: not implemented yet — see the open issues"; exit 2

clean: ## Remove the venv and run outputs
	rm -rf $(VENV) runs .pytest_cache .mypy_cache .ruff_cache
