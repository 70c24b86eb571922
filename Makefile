# Two commands do all the set-up: `make demo` and `make test`.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: install browser demo test test-fast lint record-scenarios clean

install: $(STAMP)

# llama.cpp built for any x86-64 CPU with AVX2, whatever the build machine has: native
# detection would compile AVX-512/AMX kernels that die with SIGILL on a machine (or VM)
# that advertises them but does not allow them. The stamp's name carries the flags, so a
# change of flags rebuilds; --no-cache-dir keeps pip from reusing a wheel built otherwise.
LLAMA_VERSION := 0.3.36
LLAMA_CMAKE   := -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON \
                 -DGGML_AVX512=OFF -DGGML_AVX512_VBMI=OFF -DGGML_AVX512_VNNI=OFF -DGGML_AVX512_BF16=OFF \
                 -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF -DLLAMA_BUILD_TESTS=OFF
LLAMA_STAMP   := $(VENV)/.llama-$(LLAMA_VERSION)-$(shell echo '$(LLAMA_CMAKE)' | cksum | cut -d' ' -f1)

$(STAMP): pyproject.toml $(LLAMA_STAMP)
	$(BIN)/python -m pip install --quiet -e ".[local,dev,serve,server]"
	touch $(STAMP)

$(LLAMA_STAMP):
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	# Builds from source (several minutes on 2 cores), portable, never from pip's wheel cache.
	CMAKE_ARGS="$(LLAMA_CMAKE)" $(BIN)/python -m pip install --quiet --no-cache-dir --force-reinstall \
		--no-binary llama-cpp-python "llama-cpp-python[server]==$(LLAMA_VERSION)"
	rm -f $(VENV)/.llama-*
	touch $(LLAMA_STAMP)

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
	$(BIN)/python -m mypy
	$(BIN)/python -m pytest -q

lint: install
	$(BIN)/ruff check briefroom tests bench

test-fast: install
	$(BIN)/python -m pytest -q -m "not e2e"

# Re-record every shipped scenario with the embedded model (after a prompt change);
# the answer keys in scenario.yaml are kept. One: make record-scenarios SCENARIOS=scenarios/zh-rail-ridership
SCENARIOS ?= $(sort $(dir $(wildcard scenarios/*/scenario.yaml)))
record-scenarios: install
	set -e; for s in $(SCENARIOS); do \
		s=$${s%/}; echo "recording $$s"; \
		rm -f $$s/cassette.jsonl $$s/report.md; \
		$(BIN)/briefroom research "$$(sed -n 's/^question: //p' $$s/scenario.yaml | sed 's/^"//; s/"$$//')" \
			--corpus $$s/corpus --rounds "$$(sed -n 's/^rounds: //p' $$s/scenario.yaml)" \
			--out /tmp/briefroom-record-$$$$-$$(basename $$s) --record $$s --data-dir .briefroom-data \
			--no-memory --quiet > /dev/null; \
	done

clean:
	rm -rf $(VENV) .briefroom-data runs .pytest_cache
