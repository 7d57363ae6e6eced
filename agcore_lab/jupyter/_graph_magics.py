"""``%agcore graph [VAR] [ENTITY] [--depth N]``: open a :class:`GraphExplorer` on a graph.

``VAR`` names a variable holding a :class:`~agcore_lab.kg.base.KnowledgeGraph`; without it, the
only graph in the notebook (a single word that is not such a variable is taken as ``ENTITY``).
``ENTITY`` is an entity id whose neighbourhood is shown at once. :func:`graph_command` builds
the explorer and returns it; the magic displays it.
"""

from __future__ import annotations

from typing import Any

from IPython.core.magic_arguments import argument

from agcore_lab.jupyter._magic_args import CommandError, command, parse
from agcore_lab.jupyter.graph.explorer import MAX_DEPTH, GraphExplorer

__all__ = ["GRAPH_HELP", "graph_command"]

GRAPH_HELP = """\
  %agcore graph [VAR] [ENTITY]
                      explore the knowledge graph in VAR (default: the only one in the
                      notebook), around ENTITY [--depth N (1)] [--direction D] [--dark]"""

_GRAPH = command(
    "graph",
    "Explore a knowledge graph.",
    argument("names", nargs="*", metavar="VAR ENTITY", help="the graph variable, an entity id"),
    argument("--depth", "-d", type=int, default=1, help=f"the walk's depth (1-{MAX_DEPTH})"),
    argument(
        "--direction",
        default="outgoing",
        type=str.lower,
        choices=["outgoing", "incoming", "both"],
        help="which relations the walk follows",
    ),
    argument("--dark", action="store_true", help="dark colours (for JupyterLab Dark)"),
    argument("--max-nodes", type=int, default=500, help="the most entities drawn at once"),
)


def _is_graph(value: Any) -> bool:
    from agcore_lab.kg.base import KnowledgeGraph

    return isinstance(value, KnowledgeGraph)


def graph_command(shell: Any, line: str) -> GraphExplorer:
    """Build the explorer for ``%agcore graph [VAR] [ENTITY] [--depth N]``.

    Args:
        shell: The IPython shell (its ``user_ns`` holds the graph).
        line: The rest of the magic line, after ``graph``.

    Returns:
        The explorer (not displayed: the caller displays it).

    Raises:
        CommandError: No such variable, no graph or several graphs, bad arguments.
    """
    args = parse(_GRAPH, line)
    if len(args.names) > 2:
        raise CommandError("give at most a graph variable and an entity id")
    if not 1 <= args.depth <= MAX_DEPTH:
        raise CommandError(f"--depth must be between 1 and {MAX_DEPTH}, got {args.depth}")
    namespace = shell.user_ns if shell is not None else {}
    names = list(args.names)
    if names and names[0] in namespace and (len(names) == 2 or _is_graph(namespace[names[0]])):
        var = names.pop(0)
        graph = namespace[var]
        if not _is_graph(graph):
            raise CommandError(f"variable {var!r} holds a {type(graph).__name__}, not a graph")
    elif len(names) == 2:
        raise CommandError(f"no variable {names[0]!r} in the notebook")
    else:
        found = {
            id(v): (k, v) for k, v in namespace.items() if not k.startswith("_") and _is_graph(v)
        }
        if len(found) != 1:
            what = "no knowledge graph" if not found else f"{len(found)} knowledge graphs"
            raise CommandError(f"{what} in the notebook: pass VAR, a variable holding one")
        graph = next(iter(found.values()))[1]
    return GraphExplorer(
        graph,
        center=names[0] if names else None,
        depth=args.depth,
        direction=args.direction,
        theme="dark" if args.dark else "light",
        max_nodes=args.max_nodes,
    )
