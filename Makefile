# Two commands do all set-up on a fresh machine: `make report` and `make test`; `make lab` opens
# the notebooks.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: install report sandbox lab test notebooks lint bench clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	$(BIN)/python -m ipykernel install --sys-prefix --name python3 >/dev/null
	touch $(STAMP)

install: $(STAMP)

## The main job: a self-contained HTML delivery report (the sandbox unless SVC_BASE_URL/SVC_API_KEY are set).
report: $(STAMP)
	@$(BIN)/python -m compileall -q toolkit  # cached bytecode, also where PYTHONDONTWRITEBYTECODE is set
	$(BIN)/python -m toolkit report --since 7d --out delivery-report.html

## Serve the sandbox on http://127.0.0.1:8642 and print its API keys.
sandbox: $(STAMP)
	$(BIN)/python -m toolkit sandbox

## Open the tutorial notebooks in JupyterLab (LAB_ARGS: more options, e.g. --no-browser --port 8889).
lab: $(STAMP)
	$(BIN)/jupyter lab --ServerApp.root_dir=notebooks $(if $(filter 0,$(shell id -u)),--allow-root) $(LAB_ARGS)

## Every test, notebooks included.
test: $(STAMP)
	$(BIN)/python -m pytest --nbval-lax tests notebooks

## Re-execute the notebooks in place (after changing what they show), then check them.
notebooks: $(STAMP)
	$(BIN)/python tools/execute_notebooks.py notebooks/[0-9]*.ipynb
	$(BIN)/python -m pytest --nbval-lax notebooks

lint: $(STAMP)
	$(BIN)/ruff check toolkit tests benchmarks tools
	$(BIN)/ruff format --check toolkit tests benchmarks tools

bench: $(STAMP)
	for script in benchmarks/bench_*.py; do $(BIN)/python $$script || exit 1; done

clean:
	rm -rf $(VENV) *.egg-info delivery-report.html
