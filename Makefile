.PHONY: demo test setup

setup:
	bash scripts/setup.sh

demo: setup
	bash scripts/demo.sh

test: setup
	.venv/bin/python -m pytest -n auto
