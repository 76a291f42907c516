# Two entry points (see README): `make demo` trains the main experiment on built-in data,
# `make test` runs the test suite. Both create .venv with Python 3.11 and install what they need.
PYTHON ?= python3.11
VENV := .venv
STAMP := $(VENV)/.installed

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --upgrade pip
	$(VENV)/bin/pip install --quiet -e ".[dev]"
	touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	TF_CPP_MIN_LOG_LEVEL=2 $(VENV)/bin/python train.py --experiment=shapes3d_demo --output_dir=runs/demo

test: $(STAMP)
	TF_CPP_MIN_LOG_LEVEL=2 $(VENV)/bin/python -m pytest tests

.PHONY: install demo test
