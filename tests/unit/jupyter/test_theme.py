"""The views' shared CSS files: scoped to the views, disabled controls dimmed, badges by status."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from agcore_lab.jupyter.approval._html import APPROVAL_STYLE
from agcore_lab.jupyter.chunks import _html as chunks_html
from agcore_lab.jupyter.common.text import badge
from agcore_lab.jupyter.common.theme import DISABLED_OPACITY, STYLE

JUPYTER = Path(__file__).resolve().parents[3] / "agcore_lab" / "jupyter"
SHARED_CSS = ["common/theme.css", "approval/approval.css", "chunks/chunks.css"]


def _rules(css: str) -> list[tuple[str, str]]:
    css = re.sub(r"/\*.*?\*/", "", css, flags=re.S)
    return [(m[1].strip(), m[2]) for m in re.finditer(r"([^{}]+)\{([^{}]*)\}", css)]


@pytest.mark.parametrize("name", SHARED_CSS)
def test_every_rule_is_scoped_to_the_views(name: str) -> None:
    # The rules are injected with each view's HTML: they must not restyle the rest of the page.
    rules = _rules((JUPYTER / name).read_text(encoding="utf-8"))
    assert rules
    for selectors, _ in rules:
        for selector in selectors.split(","):
            assert selector.strip().startswith(".agc-view"), (name, selector)


def test_the_loaded_styles_are_the_files() -> None:
    assert STYLE == (JUPYTER / "common/theme.css").read_text(encoding="utf-8")
    approval = (JUPYTER / "approval/approval.css").read_text(encoding="utf-8")
    assert APPROVAL_STYLE == f"<style>{approval}</style>"


def test_one_rule_dims_every_disabled_control() -> None:
    disabled = [(s, body) for s, body in _rules(STYLE) if ":disabled" in s]
    assert len(disabled) == 1, disabled  # one shared rule, not one per view
    selectors, body = disabled[0]
    for kind in ("mod-primary", "mod-danger", "select", "input", "textarea"):
        assert kind in selectors, kind
    assert f"opacity: {DISABLED_OPACITY};" in body
    assert "background-color:" in body and "color:" in body  # greyed, not only faded


def test_the_chunk_palette_has_a_rule_per_colour() -> None:
    css = (JUPYTER / "chunks/chunks.css").read_text(encoding="utf-8")
    for index in range(len(chunks_html._PALETTE)):
        assert f".agc-view .agc-ck{index} {{" in css, index
    assert f".agc-ck{len(chunks_html._PALETTE)} " not in css


def test_badges_carry_their_status_as_a_class_and_as_escaped_text() -> None:
    assert badge("done") == '<span class="agc-badge agc-badge-done">done</span>'
    shown = badge('waiting for approval"<b>')
    assert 'class="agc-badge agc-badge-waiting_for_approval&quot;&lt;b&gt;"' in shown
    assert "<b>" not in shown
    for status in ("done", "running", "waiting_for_approval", "failed", "cancelled"):
        assert f".agc-badge-{status}" in STYLE, status
