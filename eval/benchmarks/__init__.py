"""Benchmarks, one folder each (loader, scorer, README with the paper's numbers and a version)."""
