"""Manager training on the synthesized corpus: SFT (`training.sft`, `make sft`), RL with DAPO
(`training.rl`, `make rl`) and its reward (`training.rewards`), and the tiny test model.

Imports `stateguard` only; docs/architecture.md shows the data path.
"""
