# The two commands: `make demo` and `make test`. Each creates .venv if missing and installs what it
# needs; re-runs only reinstall when pyproject.toml changed (stamp files).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
DEMO_EXTRAS := llamacpp,search
TEST_EXTRAS := llamacpp,search,serve,web,dense,hf,graph,report,train,synth,ray,dev
# A portable llama.cpp build (AVX2 baseline): native builds pick up AMX/AVX-512 kernels that crash
# with "Illegal instruction" on VMs which advertise but do not enable them.
export CMAKE_ARGS ?= -DGGML_NATIVE=OFF
INDEX := $(HOME)/.cache/agentic-infer/indexes/wiki-vital-bm25

.PHONY: demo test test-all test-verl lint bench clean-venv distill distill-eval rl rl-eval slurm-up slurm-down

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(VENV)/.demo-installed: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e ".[$(DEMO_EXTRAS)]"
	touch $@

$(VENV)/.test-installed: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e ".[$(TEST_EXTRAS)]"
	touch $@ $(VENV)/.demo-installed

MODEL ?=
DISTILL_ARGS ?=
DISTILL_EVAL_ARGS ?=

demo: $(VENV)/.demo-installed
	$(BIN)/python -m agentic_infer.demo $(if $(MODEL),--model $(MODEL))

# The whole loop on CPU (2 cores: 39-51 min measured with native bf16, ~2 h at fp32 on AVX2; resumable by stage): runs/distill/policy.gguf + report.md.
distill: $(VENV)/.test-installed
	$(BIN)/python -m agentic_infer train distill $(DISTILL_ARGS)

# Base vs SFT vs SFT+GRPO vs expert on the 450 dev questions: train writes the spec, eval compares (80 min measured
# with bf16 cores, ~5 h on AVX2; resumable); e.g. DISTILL_EVAL_ARGS="--limit 10", "--policy base",
# or "--policy expert --base sft" (the expert-iteration policy paired with the SFT-only one).
distill-eval: $(VENV)/.test-installed
	spec=$$($(BIN)/python -m agentic_infer train distill-spec $(DISTILL_ARGS)) && $(BIN)/python -m agentic_infer eval compare "$$spec" $(DISTILL_EVAL_ARGS)

# RL that learns on CPU: solver demos -> SFT -> GRPO and GiGPO from the same SFT weights -> runs/rl/report.md
# (resumable by stage); GAME=frozenlake | sokoban, e.g. RL_ARGS="--set rl_steps=30".
GAME ?= frozenlake
RL_ARGS ?=
rl: $(VENV)/.test-installed
	$(BIN)/python -m agentic_infer train rl --game $(GAME) $(RL_ARGS)

# The three policies of `make rl` on 100 held-out seeds (900000..900099), paired; then the report again.
rl-eval: $(VENV)/.test-installed
	$(BIN)/python bench/rl_heldout.py --game $(GAME) && $(BIN)/python -m agentic_infer train rl --game $(GAME) $(RL_ARGS)

# A one-node Slurm cluster on loopback for `--executor slurm` (installs Debian's slurm-wlm + munge as root; idempotent).
slurm-up:
	$(PYTHON) -m agentic_infer.slurm_local up
slurm-down:
	$(PYTHON) -m agentic_infer.slurm_local down

test: $(VENV)/.test-installed
	$(BIN)/python -m pytest -q

test-all: $(VENV)/.test-installed
	$(BIN)/python -m pytest -q -m "not gpu and not network"

# verl 0.9.1 pins transformers<5.11, so the verl path is tested in its own venv (.venv-verl): verl with its
# declared dependencies, the CPU torch, our package (editable) and gguf for the tests' tokenizer.
VERL_VENV := .venv-verl

$(VERL_VENV)/bin/python:
	$(PYTHON) -m venv $(VERL_VENV)
	$(VERL_VENV)/bin/python -m pip install --quiet --upgrade pip

$(VERL_VENV)/.verl-installed: pyproject.toml | $(VERL_VENV)/bin/python
	$(VERL_VENV)/bin/python -m pip install --quiet -e ".[verl,dev]" "gguf>=0.10"
	touch $@

test-verl: $(VERL_VENV)/.verl-installed
	$(VERL_VENV)/bin/python -m pytest -q -m verl tests/train/verl

lint: $(VENV)/.test-installed
	$(BIN)/ruff check .

clean-venv:
	rm -rf $(VENV)
