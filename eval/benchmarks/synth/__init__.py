"""`synth`: the frozen offline benchmark built by `make synth ARGS=synth=bench` (the default of `make eval`)."""

from eval.benchmarks.synth.loader import SynthBench, load_synth_tasks, verify_frozen

__all__ = ["SynthBench", "load_synth_tasks", "verify_frozen"]
