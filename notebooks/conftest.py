"""nbval settings for the tutorial notebooks: pandas' HTML is never compared.

A DataFrame's HTML changes with the pandas version; its ``text/plain`` form holds the same
values and is what the committed notebooks keep. nbval compares every MIME type a cell
produces, so the fresh run's DataFrame HTML is dropped before the comparison (other HTML,
such as agcore_lab's own reprs, is still compared).
"""

from __future__ import annotations

from typing import Any

from nbformat import from_dict
from nbval.plugin import IPyNbCell  # type: ignore[import-untyped]

_compare_outputs = IPyNbCell.compare_outputs


def _without_dataframe_html(output: Any) -> Any:
    html = output.get("data", {}).get("text/html")
    if html is None or 'class="dataframe' not in "".join(html):
        return output
    data = {key: value for key, value in output["data"].items() if key != "text/html"}
    return from_dict({**output, "data": data})  # type: ignore[no-untyped-call]


def _compare_without_dataframe_html(
    self: IPyNbCell, test: list[Any], ref: list[Any], skip_compare: Any = None
) -> bool:
    test = [_without_dataframe_html(output) for output in test]
    ref = [_without_dataframe_html(output) for output in ref]
    return bool(_compare_outputs(self, test, ref, skip_compare))


IPyNbCell.compare_outputs = _compare_without_dataframe_html
