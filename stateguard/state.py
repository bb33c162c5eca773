"""The runtime's name for the analytical-state model (paper Eq. 2, A.4).

The models are defined in `stateguard.artifacts.state`: states are written to the store and the
trace, so they belong to the formats layer, which imports nothing outside itself. This module
names the same objects for the harness, the policies and the store.
"""

from stateguard.artifacts.state import *  # noqa: F403  (the same names, listed in its __all__)
from stateguard.artifacts.state import __all__ as __all__
