"""The layering drawn in docs/index.md and docs/design.md is the real one, and the docs the
code cites are in the repository."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "agcore_lab"

# Lower number = lower layer; a module may import its own layer's package and lower ones.
RANK = {
    "errors": -1,
    "ids": 0,
    "aio": 0,
    "_aio_bridge": -1,  # the machinery under aio; imports nothing of ours
    "checks": 0,
    "llm": 1,
    "store": 2,
    "agent": 3,
    "rag": 3,
    "engine": 4,
    "kg": 4,
    "otel": 5,
    "serve": 5,
    "jupyter": 6,
}
IMPORT = re.compile(r"^\s*(?:from|import) agcore_lab\.(\w+)", re.M)


def _package_of(path: Path) -> str:
    parts = path.relative_to(PACKAGE).parts
    return parts[0] if len(parts) > 1 else parts[0].removesuffix(".py")


def test_every_package_imports_only_the_layers_below_it() -> None:
    wrong = []
    for path in PACKAGE.rglob("*.py"):
        own = _package_of(path)
        if own not in RANK:  # __init__, demo, cli, testing sit on top of everything
            continue
        for used in set(IMPORT.findall(path.read_text())) - {own}:
            if used not in RANK or RANK[used] >= RANK[own]:
                wrong.append(f"{path.relative_to(ROOT)} imports agcore_lab.{used}")
    assert not wrong, wrong


def test_engine_does_not_import_retrieval() -> None:
    for path in (PACKAGE / "engine").rglob("*.py"):
        assert not {"rag", "kg"} & set(IMPORT.findall(path.read_text())), path


def test_the_docs_the_code_cites_are_in_the_repository() -> None:
    sources = [*PACKAGE.rglob("*.py"), *(ROOT / "docs").glob("*.md"), ROOT / "README.md"]
    for path in sources:
        text = path.read_text()
        for name in ("DESIGN.md", "JUPYTER.md", "STYLE.md"):
            assert name not in text, f"{path.relative_to(ROOT)} cites {name}"
        for cited in re.findall(r"docs/([\w-]+\.md)", text):
            assert (ROOT / "docs" / cited).is_file(), f"{path} cites docs/{cited}"
