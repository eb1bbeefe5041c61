# g2gsim: two commands on a fresh Debian/Ubuntu machine with Python 3.11+ and Rust (cargo):
#   make demo   installs what it needs, then simulates a generated workload under HostCopy and GPUDirect
#   make test   installs what the tests need, runs cargo test and pytest
#
# Which Python environment make installs into and runs (see README "Which Python"):
#   - by default the project's own virtual environment .venv, created on first use with
#     --system-site-packages (packages already installed system-wide are reused, not downloaded);
#     this works where the system Python refuses installs (PEP 668) and never touches that Python;
#   - an activated virtual environment ($$VIRTUAL_ENV) instead, when there is one;
#   - make VENV=system ...   or   make PY=/path/to/python ...   uses that interpreter as is
#     (the behaviour before .venv: pip installs into it).
SHELL := /bin/bash
BASE_PY ?= python3
VENV ?= .venv
ifeq ($(origin PY),undefined)
  ifneq ($(VIRTUAL_ENV),)
    PY := $(VIRTUAL_ENV)/bin/python
  else ifeq ($(VENV),system)
    PY := $(BASE_PY)
  else
    PY := $(VENV)/bin/python
    OWN_VENV := 1
  endif
endif
PIP = $(PY) -m pip
export OMPI_ALLOW_RUN_AS_ROOT := 1
export OMPI_ALLOW_RUN_AS_ROOT_CONFIRM := 1
export PIP_DISABLE_PIP_VERSION_CHECK := 1
export PIP_ROOT_USER_ACTION := ignore
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

APT_PKGS_TEST := openmpi-bin libopenmpi-dev libopen-trace-format2-dev pkg-config gfortran chromium libsimgrid-dev
PY_PKGS := maturin numpy pyarrow pandas click rich tomli-w matplotlib dask distributed otf2
PY_PKGS_TEST := pytest mpi4py jsonschema hypothesis
# the gates' versions are pinned: a new ruff or mypy release brings new rules and must not fail CI
# unasked (raise the pins on purpose, with the fixes they call for)
PY_PKGS_LINT := ruff==0.17.6 mypy==2.4.1
# install stamps live with the environment they describe
STAMP := $(if $(OWN_VENV),$(VENV)/.make-stamps,.make-stamps)

.PHONY: demo test build venv deps deps-test cargo-test pytest bench pgo clean tracer api-docs wheel sdist wheel-check package-tracer golden-update lint deps-lint

demo: build
	$(PY) -m g2gsim demo --workload jacobi2d --ranks 16 --machine lassen

test: build deps-test tracer cargo-test pytest

$(STAMP): | venv
	mkdir -p $(STAMP)

# the project virtual environment (only when make uses its own, see the top of this file); Debian and
# Ubuntu ship `python3 -m venv` in a separate package (python3.X-venv), installed here when missing
venv:
ifdef OWN_VENV
	@[ -x $(VENV)/bin/python ] || { \
	  command -v $(BASE_PY) >/dev/null || { echo "Python 3.11+ is required ($(BASE_PY) not found)"; exit 1; }; \
	  $(BASE_PY) -c 'import sys; sys.exit(sys.version_info < (3, 11))' || { echo "Python 3.11+ is required ($(BASE_PY) is $$($(BASE_PY) -V 2>&1))"; exit 1; }; \
	  echo "creating the project virtual environment $(VENV) (make VENV=system to use $(BASE_PY) itself)"; \
	  if ! $(BASE_PY) -m venv --system-site-packages $(VENV) >/dev/null 2>&1; then \
	    rm -rf $(VENV); \
	    pkg=python$$($(BASE_PY) -c 'import sys; print("%d.%d" % sys.version_info[:2])')-venv; \
	    echo "$(BASE_PY) -m venv needs the Debian/Ubuntu package $$pkg: installing it"; \
	    $(SUDO) apt-get update -q && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -q $$pkg && \
	    $(BASE_PY) -m venv --system-site-packages $(VENV) || { rm -rf $(VENV); exit 1; }; \
	  fi; }
endif

deps: | $(STAMP)
	@command -v cargo >/dev/null || { echo "Rust (cargo) is required: see https://rustup.rs"; exit 1; }
	@$(PY) -c 'import sys; sys.exit(sys.version_info < (3, 11))' || { echo "Python 3.11+ is required ($(PY) is $$($(PY) -V 2>&1))"; exit 1; }
	@[ -f $(STAMP)/deps ] || { $(PIP) install -q $(PY_PKGS) && touch $(STAMP)/deps; }

deps-test: deps | $(STAMP)
	@[ -f $(STAMP)/apt ] || { \
	  missing=$$(for p in $(APT_PKGS_TEST); do dpkg -s $$p >/dev/null 2>&1 || echo $$p; done); \
	  if [ -n "$$missing" ]; then \
	    $(SUDO) apt-get update -q && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -q $$missing; \
	  fi; touch $(STAMP)/apt; }
	@[ -f $(STAMP)/deps-test ] || { $(PIP) install -q $(PY_PKGS_TEST) && touch $(STAMP)/deps-test; }

# the compiled core, installed editable: python/g2gsim/_core*.so
# (the environment's bin first on PATH: pip runs the build backend's `maturin` by name, and on a
# fresh machine it is only in the environment)
build: deps
	bin=$$(dirname "$$($(PY) -c 'import sys; print(sys.executable)')"); PATH="$$bin:$$PATH" $(PIP) install -q --no-build-isolation -e .

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

# the stamp holds the pins it installed: new pins install again
deps-lint: | $(STAMP)
	@[ "$$(cat $(STAMP)/deps-lint 2>/dev/null)" = "$(PY_PKGS_LINT)" ] || \
	  { $(PIP) install -q $(PY_PKGS_LINT) && echo "$(PY_PKGS_LINT)" > $(STAMP)/deps-lint; }

# rewrite tests/golden/*/expected.*.json from the current build; review the diff (tests/golden/README.md)
golden-update: build
	$(PY) tests/golden/golden.py --update

bench: build
	$(PY) bench/speed/run.py

# the profile-guided release build that speed figures quote: target/pgo/g2gsim-core and the Python
# module rebuilt with the profile (bench/speed/pgo.py; needs `rustup component add llvm-tools`)
pgo: build
	$(PY) bench/speed/pgo.py --python

# Wheels users install without Rust: manylinux (glibc 2.17) abi3 wheel of the stripped `dist` profile,
# built with zig as the linker (no container), and the sdist; both in dist/. `auditwheel show` checks
# the platform tag; the _core module must stay under 15 MB.
WHEEL_COMPAT ?= manylinux2014
CORE_MAX_BYTES := 15000000
wheel: deps package-tracer | $(STAMP)
	@[ -f $(STAMP)/wheel ] || { $(PIP) install -q ziglang auditwheel && touch $(STAMP)/wheel; }
	rm -f dist/g2gsim-*.whl
	# zig from the ziglang package and the environment's maturin first on PATH
	bin=$$(dirname "$$($(PY) -c 'import sys; print(sys.executable)')"); \
	  zig=$$($(PY) -c 'import os, ziglang; print(os.path.dirname(ziglang.__file__))'); \
	  PATH="$$zig:$$bin:$$PATH" maturin build --profile dist --zig --compatibility $(WHEEL_COMPAT) --out dist
	$(PY) -m auditwheel show dist/g2gsim-*.whl
	@$(PY) -c 'import sys, zipfile, glob, os; w = glob.glob("dist/g2gsim-*.whl")[0]; \
	  n = sum(i.file_size for i in zipfile.ZipFile(w).infolist() if "/_core." in i.filename and i.filename.endswith(".so")); \
	  print(w, ": _core", round(n / 1e6, 2), "MB, wheel", round(os.path.getsize(w) / 1e6, 2), "MB"); \
	  sys.exit("_core is over $(CORE_MAX_BYTES) bytes" if n > $(CORE_MAX_BYTES) else 0)'

sdist: deps package-tracer
	rm -f dist/g2gsim-*.tar.gz
	bin=$$(dirname "$$($(PY) -c 'import sys; print(sys.executable)')"); PATH="$$bin:$$PATH" maturin sdist --out dist

# the tracer's C sources as package data (python/g2gsim/_tracer, ignored by git)
package-tracer:
	rm -rf python/g2gsim/_tracer && mkdir -p python/g2gsim/_tracer
	cp -r tracer/Makefile tracer/README.md tracer/src python/g2gsim/_tracer/

# the CI check of the wheel: a new venv outside the tree, then the README commands (.ci/wheel-check)
wheel-check: wheel
	.ci/wheel-check dist/g2gsim-*.whl

# docs/api.md from the docstrings of the public API (docs/gen_api.py; tests/test_api_docs.py checks it)
api-docs: build
	$(PY) docs/gen_api.py

clean:
	rm -rf target .make-stamps $(VENV)/.make-stamps python/g2gsim/_core*.so tracer/build
