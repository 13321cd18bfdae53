#!/usr/bin/env python3
"""run.py - xpfo's benchmark runner: the entry point of bench/xpfobench (see
its __init__.py for what a run does, and bench/README.md)."""

import os
import sys

# the package sits next to this file; no __pycache__ in the source tree
sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from xpfobench.suite import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
