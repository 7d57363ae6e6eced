"""GraphExplorer in plain Python: offline page, sandbox, escaping, size cap, controls, magic."""

from __future__ import annotations

import html
import re
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from agcore_lab.errors import InvalidInputError
from agcore_lab.jupyter import GraphExplorer
from agcore_lab.jupyter._graph_magics import graph_command
from agcore_lab.jupyter._magic_args import CommandError
from agcore_lab.jupyter.graph import frame as frame_module
from agcore_lab.jupyter.graph.export import graph_to_pyvis
from agcore_lab.jupyter.graph.page import vis_network_js
from agcore_lab.jupyter.magics import AgcoreMagics
from agcore_lab.kg import GraphEntity, GraphRelation, InMemoryGraph, RelationDirection, SqliteGraph
from agcore_lab.store.sqlite import SqliteStore

XSS = "<img src=x onerror=alert(1)> href"


def _fill(graph: Any) -> Any:
    for eid, etype in [("ada", "person"), ("engine", "machine"), ("notes", "paper")]:
        graph.add_entity_sync(GraphEntity(id=eid, entity_type=etype, description=f"about {eid}"))
    graph.add_entity_sync(GraphEntity(id="evil", name=XSS, entity_type="person", description=XSS))
    graph.add_relation_sync(GraphRelation(source="ada", target="engine", relation_type="built"))
    graph.add_relation_sync(
        GraphRelation(source="engine", target="notes", relation_type="in", weight=0.5)
    )
    graph.add_relation_sync(GraphRelation(source="evil", target="ada", relation_type="knows"))
    return graph


@pytest.fixture
def graph() -> InMemoryGraph:
    return _fill(InMemoryGraph())  # type: ignore[no-any-return]


def _text(value: str) -> str:
    return html.unescape(re.sub(r"<[^>]+>", "", value))


def test_page_is_offline_and_embeds_vis_network(graph: InMemoryGraph) -> None:
    explorer = GraphExplorer(graph)
    page = explorer.page
    assert vis_network_js()[:2000] in page
    assert "vis.Network" in page and "window.network" in page
    assert not re.search(r"<script[^>]*\bsrc\s*=", page, re.I)
    assert not re.search(r"<link\b", page, re.I)
    assert not re.search(r"""(src|href)\s*=\s*["']?https?:""", page, re.I)
    assert "bootstrap" not in page.lower()
    assert "innerHTML" not in page.split("<script>")[-1]  # our own script: textContent only
    assert explorer.node_ids == ["ada", "engine", "notes", "evil"]


def test_iframe_is_sandboxed_and_carries_only_ids_and_the_theme(graph: InMemoryGraph) -> None:
    explorer = GraphExplorer(graph)
    assert explorer.frame.page == explorer.page  # the page goes into the frame's srcdoc
    host = (Path(frame_module.__file__).with_name("frame.js")).read_text()
    assert host.count('setAttribute("sandbox", "allow-scripts")') == 1
    assert "allow-same-origin" not in host and "innerHTML" not in host
    assert 'frame.srcdoc = model.get("page")' in host
    # Out of the frame: only a node id (a string); into it: the theme, colours checked.
    assert 'message.agc === "node" && typeof message.id === "string"' in host
    assert "event.source !== frame.contentWindow" in host
    assert "SAFE_COLOUR.test(value)" in host


def test_injection_name_only_escaped(graph: InMemoryGraph) -> None:
    explorer = GraphExplorer(graph, center="evil")
    assert explorer.related[0].entity.id == "ada"
    for value in (explorer.page, explorer.frame.page, explorer.table_html.value):
        assert "<img" not in value
    assert "\\u003cimg src=x onerror=alert(1)\\u003e href" in explorer.page
    explorer.show("ada", direction="incoming").wait(10)
    assert explorer.table_html.value.count(html.escape(XSS)) == 1
    assert XSS in _text(explorer.table_html.value)


def test_size_cap_shows_neighbourhood_only(graph: InMemoryGraph) -> None:
    explorer = GraphExplorer(graph, max_nodes=2)
    assert explorer.too_big
    assert explorer.node_ids == []
    assert "more than max_nodes=2" in explorer.message
    assert "Search for an entity" in _text(explorer.status_html.value)
    assert "more than max_nodes=2" in html.unescape(explorer.page.replace("\\u003c", "<"))
    explorer.show("ada", depth=2).wait(10)
    assert explorer.node_ids == ["ada", "engine"]  # cut to max_nodes
    assert "Showing the 1 best of 2 related entities" in explorer.message
    explorer.show_whole().wait(10)
    assert explorer.node_ids == [] and explorer.center is None


def test_search_depth_and_direction_update_the_table(graph: InMemoryGraph) -> None:
    explorer = GraphExplorer(graph)
    assert "Search for an entity" in explorer.table_html.value
    explorer.search_text.value = "engine"
    explorer.search_button.click()
    explorer.wait(10)
    assert explorer.center == "engine"
    assert explorer.results_dropdown.value == "engine"
    assert [r.entity.id for r in explorer.related] == ["notes"]
    assert "engine → notes" in explorer.table_html.value
    assert "<td>0.5</td>" in explorer.table_html.value

    explorer.direction_buttons.value = RelationDirection.Incoming
    explorer.wait(10)
    assert [r.entity.id for r in explorer.related] == ["ada"]
    explorer.depth_slider.value = 2
    explorer.wait(10)
    assert [r.entity.id for r in explorer.related] == ["ada", "evil"]
    assert "engine → ada → evil" in explorer.table_html.value
    explorer.direction_buttons.value = RelationDirection.Both
    explorer.wait(10)
    assert {r.entity.id for r in explorer.related} == {"ada", "notes", "evil"}
    assert sorted(explorer.node_ids) == ["ada", "engine", "evil", "notes"]

    explorer.search("zzzqqq").wait(10)
    assert "No entity matches" in explorer.status_html.value
    explorer.show("missing").wait(10)
    assert "missing" in explorer.error_html.value


def test_colours_by_type_and_theme(graph: InMemoryGraph) -> None:
    auto, dark = GraphExplorer(graph), GraphExplorer(graph, theme="dark")
    assert auto.theme == "auto" and '"theme": "auto"' in auto.page
    assert len({c["light"] for c in auto._colours.values()}) == 3
    assert len({c["dark"] for c in auto._colours.values()}) == 3
    assert auto.legend == {t: c["light"] for t, c in auto._colours.items()}
    assert dark.legend == {t: c["dark"] for t, c in dark._colours.items()}
    assert sorted(auto.legend) == ["machine", "paper", "person"]
    assert '"background": "#111111"' in dark.page and '"theme": "dark"' in dark.page
    with pytest.raises(InvalidInputError):
        GraphExplorer(graph, theme="blue")


def test_sqlite_graph(tmp_path: Path) -> None:
    graph = _fill(SqliteGraph(SqliteStore(tmp_path / "g.db"), "kg"))
    explorer = GraphExplorer(graph, center="ada", depth=2)
    assert [r.entity.id for r in explorer.related] == ["engine", "notes"]
    assert explorer.last_error is None


def test_magic(graph: InMemoryGraph, capsys: pytest.CaptureFixture[str]) -> None:
    # A stand-in shell: starting IPython's global test shell here would break test_magics.py.
    shell = SimpleNamespace(user_ns={"kg": graph, "_hidden": InMemoryGraph()}, configurables=[])
    explorer = graph_command(shell, "kg ada --depth 2")
    assert explorer.center == "ada" and explorer.depth == 2
    assert [r.entity.id for r in explorer.related] == ["engine", "notes"]
    assert graph_command(shell, "").center is None
    assert graph_command(shell, "engine --direction incoming").related[0].entity.id == "ada"
    assert graph_command(shell, "kg --dark").theme == "dark"
    with pytest.raises(CommandError, match="no variable 'nope'"):
        graph_command(shell, "nope ada")
    with pytest.raises(CommandError, match="--depth"):
        graph_command(shell, "kg --depth 9")
    magics = AgcoreMagics(shell)
    assert magics.agcore("graph kg evil") is None
    assert "GraphExplorer(4 entities, center='evil'" in capsys.readouterr().out
    shell.user_ns["kg2"] = InMemoryGraph()
    assert magics.agcore("graph") is None
    assert "agcore: 2 knowledge graphs in the notebook" in capsys.readouterr().err
    shell.user_ns["text"] = "not a graph"
    magics.agcore("graph text ada")
    assert "holds a str, not a graph" in capsys.readouterr().err
    magics.agcore("help")
    assert "%agcore graph [VAR] [ENTITY]" in capsys.readouterr().out


def test_wait_covers_the_walk_a_search_starts() -> None:
    small = InMemoryGraph()
    for entity_id in "abc":
        small.add_entity_sync(GraphEntity(id=entity_id, name=f"node {entity_id}", entity_type="t"))
    small.add_relation_sync(GraphRelation(source="a", target="b"))
    small.add_relation_sync(GraphRelation(source="b", target="c"))
    explorer = GraphExplorer(small)
    assert explorer.wait()
    explorer.search("node a")
    assert explorer.wait()  # no sleeping: the follow-up walk is covered too
    assert explorer.center == "a"
    assert [item.entity.id for item in explorer.related] == ["b"]


def test_stale_no_match_clears_the_old_neighbourhood_and_table(graph: InMemoryGraph) -> None:
    # The stale case of the issue: after "No entity matches." the explorer kept the old
    # neighbourhood and table, as if they belonged to the new search.
    explorer = GraphExplorer(graph, center="ada")
    assert explorer.wait(10)
    assert explorer.center == "ada" and explorer.related
    assert "related to <b>ada</b>" in explorer.table_html.value
    assert explorer.search("zzz-nothing-like-this").wait(10) and explorer.wait(10)
    assert "No entity matches." in explorer.status_html.value
    assert explorer.center is None and explorer.related == [] and explorer.node_ids == []
    assert "related to" not in explorer.table_html.value
    assert "No entity matches this search" in explorer.page
    assert explorer.results_dropdown.options == ()


def test_a_click_on_a_node_recentres_and_calls_back(graph: InMemoryGraph) -> None:
    explorer = GraphExplorer(graph)
    seen: list[str] = []
    explorer.on_node_click(seen.append)
    # What frame.js does when a node is clicked in the frame:
    explorer.frame.clicked = "engine"
    explorer.frame.clicks += 1
    assert explorer.wait(10)
    assert seen == ["engine"] and explorer.center == "engine"
    assert [r.entity.id for r in explorer.related] == ["notes"]
    explorer.frame.clicks += 1  # the same node again still counts
    assert explorer.wait(10) and seen == ["engine", "engine"]
    assert explorer.click("nowhere") is None and "not drawn" in explorer.error_html.value
    assert seen == ["engine", "engine"]


def test_a_failing_click_callback_is_shown_and_the_view_still_recentres(
    graph: InMemoryGraph,
) -> None:
    explorer = GraphExplorer(graph)

    def broken(_entity: str) -> None:
        raise RuntimeError("my callback broke")

    explorer.on_node_click(broken)
    task = explorer.click("ada")
    assert task is not None and task.wait(10)
    assert explorer.center == "ada"
    assert isinstance(explorer.callback_error, RuntimeError)
    assert str(explorer.callback_error) == "my callback broke"


def test_page_has_a_legend_a_seeded_layout_and_posts_clicks(graph: InMemoryGraph) -> None:
    page = GraphExplorer(graph).page
    assert 'id="agc-legend"' in page and "drawLegend" in page
    assert "randomSeed: 7" in page
    assert 'postMessage({agc: "node", id: String(params.nodes[0])}, "*")' in page
    assert '"types": [{"type": "machine"' in page


def test_to_pyvis_is_a_real_network_of_the_view_with_escaped_labels(
    graph: InMemoryGraph, tmp_path: Path
) -> None:
    from pyvis.network import Network

    explorer = GraphExplorer(graph, center="evil", direction="both")
    assert explorer.wait(10)
    net = explorer.to_pyvis()
    assert isinstance(net, Network)
    assert sorted(net.get_nodes()) == sorted(explorer.node_ids) == ["ada", "evil"]
    evil = net.get_node("evil")
    assert evil["label"] == XSS  # drawn on the canvas: text
    assert "<img" not in evil["title"]
    assert "&lt;img src=x onerror=alert(1)&gt; href" in evil["title"]
    assert evil["size"] == 18 and evil["color"] == explorer._colours["person"]["light"]
    assert [(e["from"], e["to"]) for e in net.get_edges()] == [("evil", "ada")]
    out = tmp_path / "graph.html"
    net.save_graph(str(out))  # the pyvis way
    page = out.read_text()
    # No markup from entity text: the title is escaped text, and pyvis's JSON escapes "<".
    assert "<img src=x" not in page and "</script><" not in page
    assert "\\u0026lt;img src=x onerror=alert(1)\\u0026gt; href" in page
    assert "vis-network" in page and "unpkg.com/vis-network" not in page  # inlined
    assert GraphExplorer(graph, theme="dark").to_pyvis().bgcolor == "#111111"


def test_graph_to_pyvis_draws_the_whole_graph_or_refuses_a_huge_one(graph: InMemoryGraph) -> None:
    net = graph_to_pyvis(graph)
    assert sorted(net.get_nodes()) == ["ada", "engine", "evil", "notes"]
    assert len(net.get_edges()) == 3
    assert all("<" not in n["title"] for n in net.nodes)
    with pytest.raises(InvalidInputError, match="more than max_nodes=2"):
        graph_to_pyvis(graph, max_nodes=2)
    with pytest.raises(InvalidInputError, match="theme"):
        graph_to_pyvis(graph, theme="blue")
