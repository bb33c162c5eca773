"""StateWise (`make eval BENCH=statewise`, `python -m eval.benchmarks.statewise.run`): executable cases
for persistent-state recovery; README.md lists the cases, conditions and metrics."""
