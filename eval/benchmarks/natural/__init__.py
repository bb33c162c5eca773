"""The natural-mistake bank: real models' wrong turns replayed by the scripted worker (README.md)."""
