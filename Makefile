# g2gsim: two commands on a fresh Debian/Ubuntu machine with Python 3.11+ and Rust (cargo):
#   make demo   installs what it needs, then simulates a generated workload under HostCopy and GPUDirect
#   make test   installs what the tests need, runs cargo test and pytest
SHELL := /bin/bash
PY ?= python3
PIP ?= $(PY) -m pip
export OMPI_ALLOW_RUN_AS_ROOT := 1
export OMPI_ALLOW_RUN_AS_ROOT_CONFIRM := 1
export PIP_DISABLE_PIP_VERSION_CHECK := 1
export PIP_ROOT_USER_ACTION := ignore

APT_PKGS_TEST := openmpi-bin libopenmpi-dev libopen-trace-format2-dev pkg-config gfortran chromium libsimgrid-dev
PY_PKGS := maturin numpy pyarrow pandas click rich tomli-w matplotlib dask distributed otf2
PY_PKGS_TEST := pytest mpi4py hypothesis
PY_PKGS_LINT := ruff mypy
STAMP := .make-stamps

.PHONY: demo test build deps deps-test cargo-test pytest bench pgo clean tracer golden-update lint deps-lint

demo: build
	g2gsim demo --workload jacobi2d --ranks 16 --machine lassen

test: build deps-test tracer cargo-test pytest

$(STAMP):
	mkdir -p $(STAMP)

deps: | $(STAMP)
	@command -v cargo >/dev/null || { echo "Rust (cargo) is required: see https://rustup.rs"; exit 1; }
	@$(PY) -c 'import sys; sys.exit(sys.version_info < (3, 11))' || { echo "Python 3.11+ is required"; exit 1; }
	@[ -f $(STAMP)/deps ] || { $(PIP) install -q $(PY_PKGS) && touch $(STAMP)/deps; }

deps-test: deps | $(STAMP)
	@[ -f $(STAMP)/apt ] || { \
	  missing=$$(for p in $(APT_PKGS_TEST); do dpkg -s $$p >/dev/null 2>&1 || echo $$p; done); \
	  if [ -n "$$missing" ]; then \
	    SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	    $$SUDO apt-get update -q && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -q $$missing; \
	  fi; touch $(STAMP)/apt; }
	@[ -f $(STAMP)/deps-test ] || { $(PIP) install -q $(PY_PKGS_TEST) && touch $(STAMP)/deps-test; }

# the compiled core, installed editable: python/g2gsim/_core*.so
build: deps
	$(PIP) install -q --no-build-isolation -e .

tracer: deps-test
	@if [ -f tracer/Makefile ]; then $(MAKE) -C tracer; fi

cargo-test:
	cargo test --release -q

pytest:
	$(PY) -m pytest -q tests

# the gates: ruff and mypy on the Python package (pyproject.toml), rustfmt (rustfmt.toml) and
# clippy (Cargo.toml [workspace.lints]) on the crates
lint: deps-lint
	$(PY) -m ruff check python/g2gsim tests/golden
	$(PY) -m mypy
	cargo fmt --all -- --check
	cargo clippy --workspace --all-targets -- -D warnings

deps-lint: | $(STAMP)
	@[ -f $(STAMP)/deps-lint ] || { $(PIP) install -q $(PY_PKGS_LINT) && touch $(STAMP)/deps-lint; }

# rewrite tests/golden/*/expected.*.json from the current build; review the diff (tests/golden/README.md)
golden-update:
	$(PY) tests/golden/golden.py --update

bench: build
	$(PY) bench/speed/run.py

# the profile-guided release build that speed figures quote: target/pgo/g2gsim-core and the Python
# module rebuilt with the profile (bench/speed/pgo.py; needs `rustup component add llvm-tools`)
pgo: build
	$(PY) bench/speed/pgo.py --python

clean:
	rm -rf target $(STAMP) python/g2gsim/_core*.so tracer/build
