"""What every view shares, in one place: text helpers, the theme, the refresh path, background
tasks and the manager-view base class.

- :mod:`.text` — ``error_line``, ``plural``, ``badge``, the height cap;
- :mod:`.theme` — the CSS every view puts in front of its HTML (light and dark);
- :mod:`.refresh` — :class:`~.refresh.Reloader` and :class:`~.refresh.Poller`, the one refresh path;
- :mod:`.tasks` — :class:`~.tasks.BackgroundTask`, engine calls from widget callbacks;
- :mod:`.view` — :class:`~.view.ManagerView`, the base of the manager views;
- :mod:`.messages` — one message as a compact cell (diff rows, an approval's turn);
- :mod:`.history_parts` — the helpers borrowed from the checkpoint-history family.

Views import from these modules, never from one another.
"""
