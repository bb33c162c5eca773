"""Test suite root (a regular package, so no installed distribution named `tests` can shadow it)."""
