"""Benchmark: how long ``import agcore_lab`` takes in a fresh interpreter, and what it loads.

For each of ``--runs`` fresh processes it reads Python's own ``-X importtime`` report (the
cumulative microseconds of the ``agcore_lab`` line, which excludes interpreter start-up) and
keeps the best run (other processes' noise on a small machine only ever adds time). As a
baseline in the same conditions it times ``import json`` (stdlib only) and ``import pydantic``
(the one heavy dependency the package needs at import), and prints what ``agcore_lab`` costs
beyond pydantic.

Targets: ``import agcore_lab`` < 0.3 s; none of IPython, ipywidgets, traitlets, pyvis,
pandas, scikit-learn, networkx or httpx loaded by it.

Run: python bench/import_time.py [--runs 7]
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys

TARGET_S = 0.3
HEAVY = ("IPython", "ipywidgets", "traitlets", "pyvis", "pandas", "sklearn", "networkx", "httpx")


def _import_seconds(module: str) -> float:
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", f"import {module}"],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
    )
    for line in done.stderr.splitlines():
        match = re.match(r"import time:\s+\d+\s+\|\s+(\d+)\s+\|\s(\S+)$", line.rstrip())
        if match and match.group(2) == module:
            return int(match.group(1)) / 1e6
    raise RuntimeError(f"no import-time line for {module!r}")


def _loaded() -> list[str]:
    code = (
        "import sys, agcore_lab\n"
        "print(' '.join(sorted({m.split('.')[0] for m in sys.modules} - "
        "set(sys.stdlib_module_names))))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return done.stdout.split()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    best = {m: min(_import_seconds(m) for _ in range(args.runs)) for m in ("json", "pydantic")}
    package = min(_import_seconds("agcore_lab") for _ in range(args.runs))
    third_party = _loaded()
    heavy = [m for m in HEAVY if m in third_party]
    ok_time, ok_heavy = package < TARGET_S, not heavy
    print(f"import json (baseline):      {best['json'] * 1000:7.1f} ms")
    print(f"import pydantic (baseline):  {best['pydantic'] * 1000:7.1f} ms")
    print(
        f"import agcore_lab:           {package * 1000:7.1f} ms  "
        f"({package / best['pydantic']:.1f}x pydantic; target < {TARGET_S * 1000:.0f} ms) "
        f"{'PASS' if ok_time else 'MISS'}"
    )
    print(f"third-party top-level modules loaded: {', '.join(third_party)}")
    print(f"heavy libraries loaded: {', '.join(heavy) or 'none'} {'PASS' if ok_heavy else 'MISS'}")
    passed = ok_time and ok_heavy
    print(f"all targets {'PASS' if passed else 'MISS'}")
    return 0 if passed else 1


if __name__ == "__main__":
    raise SystemExit(main())
