"""Evaluation: benchmarks (`eval.benchmarks`), the runner (`make eval`, `python -m eval.runner`),
metrics and tables (`make tables`), the demo (`make demo`), the run viewer (`make view`), and
micro-benchmarks (`eval.perf`, `make bench`).

Imports `stateguard` only; docs/architecture.md shows the data path.
"""
