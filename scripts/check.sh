#!/usr/bin/env bash
# Every check, in order: format, lint, types, then one pytest run over the tests (unit,
# integration, browser) and the notebooks (nbval). Run from anywhere; exits non-zero on the
# first failure.
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== ruff format --check"
ruff format --check .
echo "== ruff check"
ruff check .
echo "== mypy"
mypy
echo "== pytest: tests/, notebooks/ (nbval) and docstring examples"
python -m pytest tests notebooks agcore_lab --doctest-modules --ignore=agcore_lab/__main__.py \
  --nbval-lax --nbval-current-env --nbval-sanitize-with notebooks/nbval_sanitize.cfg \
  -p no:cacheprovider "$@"
