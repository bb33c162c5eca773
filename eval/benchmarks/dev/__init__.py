"""`dev`: the hand-written development set (LongDS layout, fault variants, a held-out split)."""
