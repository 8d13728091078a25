.PHONY: demo test test-fast setup mutate

setup:
	bash scripts/setup.sh

demo: setup
	bash scripts/demo.sh

# mypy first: a bare `mypy` checks the product code ([tool.mypy] in pyproject.toml).
test: setup
	.venv/bin/mypy
	.venv/bin/python -m pytest -n auto

# The suite without the slow end-to-end tests (about a minute or two on 2 cores).
test-fast: setup
	.venv/bin/python -m pytest -n auto -m "not slow"

# Mutation testing of checkers/ and the raft core against the fast tests (not
# part of CI; part of finishing a change to a checker). All of it takes over an
# hour on 2 cores; MUTANTS narrows it, e.g. MUTANTS='checkers.divergence.*'.
# Results are kept in mutants/ between runs; after adding tests, run
# `.venv/bin/python scripts/mutation_report.py --forget-survivors` first so the
# survivors are tried again. Writes docs/mutation.md.
mutate: setup
	.venv/bin/pip install -q --disable-pip-version-check -e '.[test,mutation]'
	.venv/bin/mutmut run --max-children $${MUTATE_JOBS:-2} $(MUTANTS) || true
	.venv/bin/python scripts/mutation_report.py > docs/mutation.md
	@head -n 20 docs/mutation.md
