"""Suite-wide pytest setup: the `published_data` marker (see tests/support/published.py)."""

from __future__ import annotations

import pytest


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "published_data: reads published material staged in ../shared: benchmark samples "
        "(tests/support/published.py), the ipyflow conformance suite (tests/stateguard/dataflow/test_ipyflow_conformance.py)",
    )
