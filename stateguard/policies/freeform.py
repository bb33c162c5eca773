"""The `freeform` ablation's prompt (paper C.5, "Free-Form Memory"): the full runtime, no prescribed policy.

Kept from the full manager (`stateguard.policies.prompts`), unchanged: the role and the
information boundary (P_sys: supervise, never solve; no ground truth), the lifecycle template of
the flow (P_life), the observation fields, and everything the harness enforces: the same
actions and tool schemas, state fields, relation types, lifecycle table, repair protocol and
hint guard. Dropped, and replaced by `FREEFORM_POLICY`: the prescriptive controller P_ctrl (the
five checks, when a violation requires REPAIR, and what a state should record). The manager may
fill the state fields in any form or leave them empty, attach constraint code or not, and check
anything, at any point, or nothing. `docs/ablations.md` lists each ablation's exact difference.

    system = prompts.system_prompt(Regime.TURN_ALIGNED, "freeform")   # what LLMManager(variant="freeform") sends

This module holds the policy text only; `stateguard.policies.prompts` composes it with the parts
kept from the full manager (`freeform_system_prompt`), so the two modules do not import each other.
"""

from __future__ import annotations

FREEFORM_POLICY = """How you keep the state and check it: your call
There is no required content. Put into issue, constraints, used_variables and conclusions whatever you find useful, in any wording, or leave them empty. No rule picks the values worth constraining, the variables worth naming, or the wording of a conclusion; a constraint may carry Python that runs on its own, or be text only.
The shapes the harness accepts do not change:
  constraint: {"text": "..."} or {"text": "...", "code": "<Python that runs on its own>"}
  variable:   {"name": "<workspace name>", "value": <value>} (add "version" only to reuse an earlier committed value)
  conclusion: "..."
Whether and what to verify is yours to decide as well: there is no checklist and no required check. Where the lifecycle below mentions checks, you decide which, if any, to run, and when.
What stays fixed: the lifecycle order, the relation types, the tools, and the repair protocol. REPAIR names affected variables and says in words what is wrong; a hint with code, a corrected value or the answer is refused by the harness, which also decides light or heavy and counts the attempts (after the budget, ABANDON_STATE). State ids, variable versions, source binding and checkpoints belong to the harness."""
