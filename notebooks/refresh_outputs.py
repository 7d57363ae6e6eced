"""Re-execute the tutorial notebooks and keep only the outputs nbval should compare.

Run from the repository root after changing a notebook or an output it shows::

    PYTHONPATH=$PWD python notebooks/refresh_outputs.py            # every notebook
    PYTHONPATH=$PWD python notebooks/refresh_outputs.py 05-rag     # some of them

Each notebook runs with notebooks/ as its working directory (as under nbval). Then widget
cells lose their outputs and get ``# NBVAL_IGNORE_OUTPUT`` as first line (cells already
marked stay marked), DataFrame outputs keep only ``text/plain``, and the per-run execution
metadata, widget state and interpreter version are dropped.
"""

from __future__ import annotations

import sys
from pathlib import Path

MARK = "# NBVAL_IGNORE_OUTPUT"
WIDGET = "application/vnd.jupyter.widget-view+json"
HERE = Path(__file__).resolve().parent


def refresh(path: Path) -> None:
    """Execute one notebook in place and strip what must not be committed."""
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(path, as_version=4)
    NotebookClient(nb, timeout=600, resources={"metadata": {"path": str(HERE)}}).execute()
    nb.metadata = nbformat.from_dict({"kernelspec": nb.metadata["kernelspec"]})
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        cell.metadata.pop("execution", None)
        if any(WIDGET in output.get("data", {}) for output in cell.outputs):
            cell.outputs = []
            if not cell.source.startswith(MARK):
                cell.source = f"{MARK}\n{cell.source}"
        for output in cell.outputs:
            if 'class="dataframe' in output.get("data", {}).get("text/html", ""):
                del output.data["text/html"]
    nbformat.write(nb, path)


if __name__ == "__main__":
    names = sys.argv[1:] or sorted(p.stem for p in HERE.glob("[0-9]*.ipynb"))
    for name in names:
        print("refreshing", name)
        refresh(HERE / f"{name}.ipynb")
