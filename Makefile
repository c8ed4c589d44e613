# `make demo`: build and install tailcut into .venv, run the quickstart experiment, print the report path.
# `make test`: everything CI checks: Rust format, lints and tests, then the Python lints and tests.
# `make reproduce`: every paper's experiments over 5 seeds (resumable; about 1.5 h on this shared 2-core machine), their
# pages and the headline table copied into docs/reproduced/ and pasted into README.md and docs/results.md,
# the figures redrawn from them.
VENV ?= .venv
BIN := $(VENV)/bin

.PHONY: demo reproduce test venv

venv: $(BIN)/python

$(BIN)/python:
	python3 -m venv $(VENV)

demo: venv
	$(BIN)/pip install '.[plot]'
	$(BIN)/tailcut run experiments/quickstart.toml --out results/quickstart --overwrite
	@echo "Open the report: results/quickstart/report.html"

SEEDS ?= 5
JOBS ?= 2
reproduce: venv
	$(BIN)/pip install '.[plot]'
	$(BIN)/tailcut reproduce all --seeds $(SEEDS) --jobs $(JOBS) --out results/reproduce
	cp results/reproduce/*.md docs/reproduced/
	$(BIN)/python -m tailcut.reproduce.headlines results/reproduce README.md docs/results.md
	$(BIN)/python docs/figures/make_figures.py --from results/reproduce

# The tests build the wheel (dist/) with the `release` profile that `cargo test --release` builds too, so
# the workspace compiles once (users get `perf`, fat LTO, from `pip install .`), and install that file,
# as a user's `pip install` would; test_wheel.py puts the same file into a fresh virtualenv.
test: venv
	rm -rf dist
	MATURIN_PEP517_ARGS="--profile release" $(BIN)/pip wheel -q --no-deps -w dist .
	$(BIN)/pip install -q --force-reinstall --no-deps dist/tailcut-*.whl
	$(BIN)/pip install -q "$$(ls dist/tailcut-*.whl)[test,plot,ray]"
	cargo fmt --all -- --check
	cargo clippy --workspace --all-targets -- -D warnings
	cargo test --workspace --release
	# The fuzz targets live outside the workspace (libFuzzer needs nightly to run); checking them on stable
	# keeps them compiling when an engine's API changes.
	cargo check --manifest-path crates/tailcut-proto/fuzz/Cargo.toml --target-dir target/fuzz-check
	cargo check --manifest-path crates/tailcut-testbed/fuzz/Cargo.toml --target-dir target/fuzz-check
	cargo check --manifest-path crates/tailcut-tracksd/fuzz/Cargo.toml --target-dir target/fuzz-check
	$(BIN)/ruff check python tests experiments docs/figures
	$(BIN)/ruff format --check python tests experiments docs/figures
	$(BIN)/pytest -q tests/python
