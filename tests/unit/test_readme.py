"""A newcomer's path through the README: set-up commands, how to open the notebooks, every
package in the table, a LICENSE to match the metadata."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())


def test_the_two_setup_commands_are_unchanged() -> None:
    assert "python -m pip install . && python -m agcore_lab demo" in README
    assert 'python -m pip install -e ".[dev]" && bash scripts/check.sh' in README


def test_the_readme_says_how_to_open_the_notebooks() -> None:
    assert 'python -m pip install ".[lab]" && jupyter lab notebooks/' in README
    lab = PYPROJECT["project"]["optional-dependencies"]["lab"]
    assert any(dep.startswith("jupyterlab") for dep in lab)
    for notebook in re.findall(r"notebooks/([\w-]+\.ipynb)", README):
        assert (ROOT / "notebooks" / notebook).is_file(), notebook


def test_every_subpackage_is_in_the_package_table() -> None:
    packages = sorted(
        p.name for p in (ROOT / "agcore_lab").iterdir() if (p / "__init__.py").is_file()
    )
    for name in packages:
        assert f"| `agcore_lab.{name}` |" in README, name


def test_the_license_file_matches_the_metadata() -> None:
    assert PYPROJECT["project"]["license"] == "Apache-2.0"
    assert PYPROJECT["project"]["license-files"] == ["LICENSE"]
    text = (ROOT / "LICENSE").read_text()
    assert "Apache License" in text and "Version 2.0, January 2004" in text
    assert "END OF TERMS AND CONDITIONS" in text
