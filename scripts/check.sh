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
# The browser tests want Debian's Chromium: install it where it is missing and we can (as
# root with apt); otherwise the fixture falls back to Playwright's own browser, or skips.
if ! command -v chromium >/dev/null 2>&1 && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "== installing Debian's chromium for the browser tests"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq && apt-get install -y -qq chromium >/dev/null
fi

# The PostgreSQL tests start a throwaway server from Debian's server binaries (as the
# postgres user when we are root): install them where they are missing and we can.
if ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 && [ -z "${AGCORE_TEST_POSTGRES_URL:-}" ] \
    && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "== installing Debian's PostgreSQL server for the PostgreSQL tests"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq && apt-get install -y -qq postgresql >/dev/null
fi

echo "== pytest: tests/, notebooks/ (nbval) and docstring examples"
python -m pytest tests notebooks agcore_lab --doctest-modules --ignore=agcore_lab/__main__.py \
  --nbval --nbval-current-env --nbval-sanitize-with notebooks/nbval_sanitize.cfg \
  -p no:cacheprovider "$@"
