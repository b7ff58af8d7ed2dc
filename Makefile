# acp-relay: two commands on a fresh machine.  `make run` starts the relay, `make test` tests it.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-stamp
CONFIG ?= config.example.json

.PHONY: install run test lint peer bench bench-burst chaos clean

$(STAMP): pyproject.toml constraints.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -c constraints.txt -e '.[dev,all]'
	touch $(STAMP)

install: $(STAMP)

run: $(STAMP)
	PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/acp-relay run --config $(CONFIG)

lint: $(STAMP)
	$(BIN)/ruff check core surfaces tests bench
	$(BIN)/mypy --strict core surfaces

test: lint
	$(BIN)/pytest -q -rs
	@$(MAKE) --no-print-directory peer

# The real-agent tier: the npm agents against our loopback model API. They are installed once into
# the cache first (workers must not race npm), then run three at a time: each test has its own
# agent, mock, HOME and cwd, and an agent mostly waits (on its model calls, its own retries).
PEER_WORKERS ?= 3
peer: $(STAMP)
	@if command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1; then \
		$(BIN)/python tests/peers/install.py >/dev/null && \
		$(BIN)/pytest -q -rs -m peer -n $(PEER_WORKERS) tests/peers; \
	else \
		echo "peer tier SKIPPED: node/npm not found (CI has both; install them to run it)"; \
	fi

# Kill -9 at random moments, a 429 storm, 100 messages over 5 conversations, per surface and seed:
# prints answered once / lost / duplicated; fails unless nothing was lost or duplicated.
chaos: $(STAMP)
	$(BIN)/python -m tests.chaos --seeds 1,2,3

bench: $(STAMP)
	$(BIN)/python -m bench.bench_reader
	$(BIN)/python -m bench.bench_turns
	$(BIN)/python -m bench.bench_streamer
	$(BIN)/python -m bench.bench_huge
	$(BIN)/python -m bench.bench_relays
	$(BIN)/python -m bench.bench_engine
	$(BIN)/python -m bench.bench_telegram
	$(BIN)/python -m bench.bench_ladder
	$(BIN)/python -m bench.bench_burst $(BURST)

# A busy relay (issue 24), per surface, the whole `acp-relay run` against the platform's fake and a
# naive send-per-chunk bot in the same run. `make bench` runs bursts of 100 and 1,000 and 500 new
# conversations after 500 and 2,000 known; `make bench-burst` the issue's sizes (10,000 known, the RSS
# after them): 4.5 to 9 minutes per surface, 26 minutes for the four on two shared cores. One surface:
# `make bench-burst BURST_LONG="--surface slack --sizes 100,1000 --known 500,10000"`.
BURST      ?= --sizes 100,1000 --known 500,2000 --new 500
BURST_LONG ?= --sizes 100,1000 --known 500,10000 --new 500
bench-burst: $(STAMP)
	$(BIN)/python -m bench.bench_burst $(BURST_LONG)

clean:
	rm -rf $(VENV) .cache .mypy_cache .ruff_cache
