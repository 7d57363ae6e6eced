"""``python -m agcore_lab demo``."""

from agcore_lab.cli import main

raise SystemExit(main())
