"""The approval family: :class:`~agcore_lab.jupyter.ApprovalPanel` (``panel.py``) with its call
cards, bulk decisions, the turn behind a call, and the operations every button runs."""
