#!/bin/sh
# The Python package's tests (tests/python, pytest) in the venv `make python` builds; ends with
# the RESULT line tests/run.sh adds up.
cd "$(dirname "$0")/.."
PY="${BUILD:-build}/pyenv/bin/python"
if [ ! -x "$PY" ]; then
    echo "FAIL: $PY missing: run make python (python3 with venv and pip)"; echo "RESULT 0 1 0"; exit 1
fi
MPLBACKEND=Agg exec "$PY" tests/python/run.py -q -p no:cacheprovider tests/python
