"""Benchmarks that print tables (`make bench`)."""
