"""The runtime's name for the record base: `Record` and `SCHEMA_VERSION` are defined in
`stateguard.artifacts.records`, the formats layer, which imports nothing outside itself (the
trace's events embed records, so the base has to live there). Both paths name the same objects.
"""

from stateguard.artifacts.records import *  # noqa: F403  (the same names, listed in its __all__)
from stateguard.artifacts.records import __all__ as __all__
