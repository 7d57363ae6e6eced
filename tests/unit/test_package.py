"""The package surface: what `import agcore_lab` loads, how fast, and what it exports."""

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


def test_import_is_fast() -> None:
    # Best of three fresh interpreters; the target is "well under a second".
    times = [
        float(
            _run(
                "import time; t = time.perf_counter(); import agcore_lab; "
                "print(time.perf_counter() - t)"
            )
        )
        for _ in range(3)
    ]
    assert min(times) < 1.0, times


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
