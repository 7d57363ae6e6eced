"""Two writer processes sharing one SQLite vector file (run as a script, each is one writer).

A writer opens the file (through a ``SqliteStore``, or as a file of its own for vectors),
waits for the go file, adds ``count`` documents one add at a time (each its own transaction,
interleaving with the other writer's), then tries an id both want, and prints its figures.
:func:`two_writers` starts a pair and returns what they printed.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any


def two_writers(path: Path, count: int, *, own_file: bool, dim: int) -> list[dict[str, Any]]:
    """Run a ``left`` and a ``right`` writer of ``count`` documents on ``path`` at once."""
    go = path.with_name(path.name + ".go")
    how = "file" if own_file else "store"
    writers = [
        subprocess.Popen(
            [sys.executable, __file__, how, str(path), name, str(count), str(go), str(dim)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for name in ("left", "right")
    ]
    go.touch()
    results = []
    for writer in writers:
        out, err = writer.communicate(timeout=100)
        assert writer.returncode == 0, err
        results.append(json.loads(out))
    return results


def _write(how: str, path: str, name: str, count: int, go: Path, dim: int) -> None:
    from agcore_lab.errors import ConflictError
    from agcore_lab.rag import Document, MockEmbedding, SqliteVectorStore
    from agcore_lab.store.sqlite import SqliteStore

    store = SqliteVectorStore(path if how == "file" else SqliteStore(path), "shared")
    embed = MockEmbedding(dim=dim)
    while not go.exists():
        time.sleep(0.01)
    for i in range(count):
        doc = Document(id=f"{name}-{i}", content=f"{name} document {i}", metadata={"by": name})
        store.add([doc], embed.embed([doc.content]))
    try:
        store.add([Document(id="both", content="x")], embed.embed(["x"]))
        duplicate = "added"
    except ConflictError:
        duplicate = "conflict"
    print(json.dumps({"len": len(store), "duplicate": duplicate}))


if __name__ == "__main__":
    how, path, name, count, go, dim = sys.argv[1:7]
    _write(how, path, name, int(count), Path(go), int(dim))
