"""The dispatch family: :class:`~agcore_lab.jupyter.DispatchMonitor` (``monitor.py``), the
dispatch it runs (``runner.py``) and the task table's HTML."""
