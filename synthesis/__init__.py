"""Task and corpus synthesis: raw tables -> tasks (hidden reference, relation graph, faults) ->
teacher trajectories -> the manager corpus (`make synth`, `python -m synthesis.pipeline`).

Imports `stateguard` only; docs/architecture.md shows where each artifact goes next.
"""
