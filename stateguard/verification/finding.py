"""What a check found: the record both the rules manager's checks and the semantic checker return.

    Finding(check="precision", variables=["share"], reason="...in words...", evidence="...for the trace...")

`check` names the check that fired, `variables` the workspace variables it localizes (what the
worker can act on), `reason` is worker-safe (the requirement in words: no code, no values), and
`evidence` is the detail the trace keeps. It lives here, below both `stateguard.policies.checks`
and `verifier`, so that verification imports nothing of the policies.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

__all__ = ["Finding"]


class Finding(BaseModel):
    model_config = ConfigDict(frozen=True)
    check: str
    variables: list[str]
    reason: str
    evidence: str
