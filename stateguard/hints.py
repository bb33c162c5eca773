"""The runtime's name for worker-facing hints (paper A.5): state hints and repair hints.

The `Hint` record, its packed states and its fixed wording are defined in
`stateguard.artifacts.hints`: a hint is written to the trace as delivered, so it belongs to the
formats layer, which imports nothing outside itself. This module names the same objects for the
harness and the workers.
"""

from stateguard.artifacts.hints import *  # noqa: F403  (the same names, listed in its __all__)
from stateguard.artifacts.hints import __all__ as __all__
