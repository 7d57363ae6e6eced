"""The package surface: what `import agcore_lab` loads and what it exports."""

from __future__ import annotations

import subprocess
import sys

import agcore_lab

JUPYTER_MODULES = ("IPython", "ipywidgets", "traitlets", "pyvis")


def _run(code: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    return done.stdout.strip()


def test_import_does_not_load_jupyter_libraries() -> None:
    loaded = _run(
        "import sys, agcore_lab\n"
        f"print(','.join(m for m in {JUPYTER_MODULES!r} if m in sys.modules))"
    )
    assert loaded == ""


def test_import_does_not_load_heavy_optional_libraries() -> None:
    loaded = _run(
        "import sys, agcore_lab\n"
        "print(','.join(m for m in ('httpx', 'pandas', 'sklearn', 'networkx') if m in sys.modules))"
    )
    assert loaded == ""


# What `import agcore_lab` may load besides the standard library: pydantic (and its own
# dependencies) and numpy (the vector schema module). Anything else is a new import-time cost:
# load it lazily, at first use. (The time itself is measured by bench/import_time.py, not
# here: a timed assertion is flaky on a loaded machine.)
ALLOWED_AT_IMPORT = {
    "agcore_lab",
    "annotated_types",
    "numpy",
    "pydantic",
    "pydantic_core",
    "typing_extensions",
    "typing_inspection",
}


def test_import_loads_only_what_it_needs() -> None:
    loaded = _run(
        "import sys\n"
        "before = set(sys.modules)\n"
        "import agcore_lab\n"
        "new = {m.split('.')[0] for m in set(sys.modules) - before}\n"
        "print(' '.join(sorted(m for m in new - set(sys.stdlib_module_names) if m[0] != '_')))"
    ).split()
    assert set(loaded) <= ALLOWED_AT_IMPORT, set(loaded) - ALLOWED_AT_IMPORT
    assert {"agcore_lab", "pydantic"} <= set(loaded)


def test_import_loads_no_engine_extra() -> None:
    loaded = _run(
        "import sys, agcore_lab\n"
        "print(' '.join(sorted(m for m in sys.modules if m.startswith('agcore_lab.'))))"
    ).split()
    for lazy in ("agcore_lab.rag", "agcore_lab.kg", "agcore_lab.jupyter", "agcore_lab.llm.openai"):
        assert lazy not in loaded, lazy


def test_all_is_sorted_and_complete() -> None:
    names = agcore_lab.__all__
    assert names == sorted(names)
    for name in names:
        assert getattr(agcore_lab, name) is not None, name
    public = {
        n
        for n, v in vars(agcore_lab).items()
        if not n.startswith("_")
        and not isinstance(v, type(sys))
        and n not in {"TYPE_CHECKING", "Any"}
    }
    assert public <= set(names), public - set(names)


def test_lazy_openai_model_is_exported() -> None:
    from agcore_lab.llm.openai import OpenAIChatModel

    assert agcore_lab.OpenAIChatModel is OpenAIChatModel


def test_unknown_attribute_is_a_clear_error() -> None:
    try:
        agcore_lab.NoSuchThing  # noqa: B018
    except AttributeError as exc:
        assert "NoSuchThing" in str(exc)
    else:
        raise AssertionError("expected AttributeError")
