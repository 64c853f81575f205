# kgrag: the two commands a new user needs are `make demo` and `make test`.
SHELL := /bin/bash
PY ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
TEST_MODEL ?= qwen2.5-coder-0.5b
DEMO_APP ?= 1
FULL ?= 0
E2E_CHROMIUM ?= /usr/bin/chromium
E2E_STAMP := app/e2e/node_modules/.installed

.PHONY: install llama-rebuild llama-check e2e-deps demo test test-unit lint neo4j-start neo4j-stop bench clean

$(BIN)/python:
	@command -v $(PY) >/dev/null || { echo "Python 3.11 is required ($(PY) not found)"; exit 1; }
	$(PY) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

# llama.cpp is compiled for this CPU (-march=native) but without Intel AMX: on VMs whose
# CPU flags list AMX but whose hypervisor does not run it (a Firecracker guest here), the
# first tile instruction (ldtilecfg in ggml_backend_amx_mul_mat) faults and every model
# call dies with a segfault. AMX only speeds up prompt processing of some quant types.
# `make install LLAMA_CMAKE_ARGS=` keeps it; CMAKE_ARGS from the environment (CUDA, ...)
# is passed on after these.
ifeq ($(shell uname -m),x86_64)
LLAMA_CMAKE_ARGS ?= -DCMAKE_C_FLAGS='-mno-amx-tile -mno-amx-int8 -mno-amx-bf16' \
  -DCMAKE_CXX_FLAGS='-mno-amx-tile -mno-amx-int8 -mno-amx-bf16'
endif

LLAMA_VERSION := $(shell sed -n 's/.*"llama-cpp-python==\([^"]*\)".*/\1/p' pyproject.toml)

# llama-cpp-python compiles llama.cpp (5–6 min on 2 cores); torch is ~3 GB. Once per venv.
# llama.cpp is built first and without pip's wheel cache: pip keys a cached wheel by the
# sdist alone, so a wheel built earlier with other CMAKE_ARGS (with AMX) would be reused.
$(STAMP): pyproject.toml | $(BIN)/python
	CMAKE_ARGS="$(LLAMA_CMAKE_ARGS) $$CMAKE_ARGS" $(BIN)/python -m pip install \
	  --progress-bar off --no-cache-dir "llama-cpp-python==$(LLAMA_VERSION)"
	$(BIN)/python -m pip install --progress-bar off -e ".[app,eval,langchain,dev,server]"
	@$(MAKE) --no-print-directory llama-check
	@touch $(STAMP)

# Recompile llama.cpp in an existing venv, e.g. after `kgrag ask` died with a segfault in
# libggml-cpu.so. ~6 min on 2 cores.
llama-rebuild: | $(BIN)/python
	CMAKE_ARGS="$(LLAMA_CMAKE_ARGS) $$CMAKE_ARGS" $(BIN)/python -m pip install \
	  --progress-bar off --no-cache-dir --force-reinstall --no-deps \
	  "llama-cpp-python==$(LLAMA_VERSION)"
	@$(MAKE) --no-print-directory llama-check

# Fails when AMX was to be left out but the installed libggml-cpu.so has tile instructions
# (needs objdump from binutils; skipped without it).
llama-check: | $(BIN)/python
	@lib=$$(ls $(VENV)/lib/python3*/site-packages/llama_cpp/lib/libggml-cpu.so 2>/dev/null); \
	if [ -z "$$lib" ]; then echo "llama-cpp-python is not installed in $(VENV)"; exit 1; fi; \
	if ! command -v objdump >/dev/null; then echo "objdump missing: AMX check skipped"; \
	elif [[ "$(LLAMA_CMAKE_ARGS)" == *no-amx-tile* ]]; then \
	  n=$$(objdump -d "$$lib" | grep -c ldtilecfg || true); \
	  if [ "$$n" != 0 ]; then echo "$$lib has $$n AMX tile instructions although it was" \
	    "to be built without AMX: run 'make llama-rebuild'"; exit 1; fi; \
	  echo "llama.cpp: built without AMX ($$lib)"; fi

install: $(STAMP)

# The browser test (tests/e2e, marked slow) drives Debian's chromium with playwright-core
# from app/e2e (`npx playwright install` cannot download browsers here). ~1-2 min once.
e2e-deps: $(E2E_STAMP)
	@if [ -x $(E2E_CHROMIUM) ]; then $(E2E_CHROMIUM) --version; \
	elif [ "$$(id -u)" = 0 ]; then \
	  echo "installing Debian chromium for the browser test"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; \
	  $(E2E_CHROMIUM) --version; \
	else echo "$(E2E_CHROMIUM) is missing (sudo apt-get install -y chromium): the browser test" \
	  "will skip, or fail under CI=true"; fi

$(E2E_STAMP): app/e2e/package.json app/e2e/package-lock.json
	@command -v npm >/dev/null || { echo "Node.js 20+ and npm are needed for the browser test"; exit 1; }
	npm ci --prefix app/e2e --no-audit --no-fund
	@touch $@

# FULL=1: also build the built-in domains whose committed export is not a full fast build
# (medical, wikipedia, commonsense's CommonsenseQA part; ~1.5 h, resumable).
demo: install
	@if [ "$(DEMO_APP)" = "0" ]; then app=--no-app; else app=--app; fi; \
	if [ "$(FULL)" = "1" ]; then full=--full; else full=; fi; \
	$(BIN)/kgrag demo $$app $$full

# Unit tests, then the tests that read the committed runs in docs/results, then integration
# tests against the real Neo4j (started by the launcher unless NEO4J_URI is set), then slow
# tests with a real GGUF model (a llama.cpp server and the browser test too).
test: install e2e-deps
	@$(MAKE) --no-print-directory llama-check
	@command -v mvn >/dev/null || { echo "Maven is needed to fetch Neo4j (apt-get install maven)"; exit 1; }
	$(BIN)/kgrag models fetch $(TEST_MODEL)
	@if [ -z "$$NEO4J_URI" ]; then $(BIN)/kgrag neo4j start; fi
	KGRAG_TEST_MODEL=$(TEST_MODEL) $(BIN)/python -m pytest -m "not slow and not integration and not results" -q
	$(BIN)/python -m pytest -m "results and not slow and not integration" -q
	$(BIN)/python -m pytest -m "integration and not slow" -q
	KGRAG_TEST_MODEL=$(TEST_MODEL) $(BIN)/python -m pytest -m "slow" -q

test-unit: install
	$(BIN)/python -m pytest -m "not slow and not integration and not results" -q

lint: install
	$(BIN)/ruff check kgrag kg_builder metakg textrag eval app cypher tests scripts research
	$(BIN)/mypy kgrag kg_builder metakg textrag eval app

neo4j-start: install
	$(BIN)/kgrag neo4j start

neo4j-stop: install
	$(BIN)/kgrag neo4j stop

bench: install
	$(BIN)/kgrag bench neo4j
	$(BIN)/kgrag bench model

clean:
	rm -rf $(VENV) .pytest_cache test-output app/e2e/node_modules
