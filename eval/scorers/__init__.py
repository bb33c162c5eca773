"""Scorers: small, table-tested functions that decide whether an answer is right."""
