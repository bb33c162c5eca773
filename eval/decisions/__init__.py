"""Decision-level evaluation of a served manager (`python -m eval.decisions`, `make eval-decisions`).

items.py reads held-out decisions from an exported SFT corpus, score.py scores replies against
the teacher, __main__.py asks any OpenAI-compatible endpoint and writes the summary.
"""
