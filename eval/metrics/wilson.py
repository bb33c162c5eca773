"""The Wilson score interval of a binomial proportion (95% by default).

It stays inside [0, 1] and is usable at 0 or n successes and on small samples, where the normal
approximation is not: e.g. 0 of 34 gives [0.000, 0.102].
"""

from __future__ import annotations

import math

__all__ = ["wilson"]


def wilson(successes: int, n: int, z: float = 1.959963984540054) -> tuple[float, float] | None:
    """(low, high) for `successes` out of `n`; None when n is 0 (no sample, no interval)."""
    if n < 0 or not 0 <= successes <= n:
        raise ValueError(f"wilson: {successes} successes out of {n} trials")
    if n == 0:
        return None
    p = successes / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)
