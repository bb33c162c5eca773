"""The DAComp-DE worker: a CodeAct loop in the shape of OpenHands' CodeActAgent (paper C.2), in our words.

The benchmark's agents run in OpenHands with the CodeActAgent: every reply is some reasoning
followed by one executable action, the environment answers with an observation, and the agent
ends with a finish action. Here the action is an IPython-style cell, `<execute_ipython>...
</execute_ipython>`, run in the task's persistent sandboxed session and answered as
`OBSERVATION:`; the episode ends with `<finish>{"sql_dir": "<absolute path>"}</finish>`. The
sandbox starts no processes, so a `<execute_bash>` action is answered with a pointer to do the
same from Python (`os`, `pathlib`, `duckdb`) rather than run. A reply with no action gets an
observation asking for one.

The task message carries the track's own instructions (`TRACK_INSTRUCTIONS`): Implementation
builds every table of the contract layer by layer; Evolution changes exactly the tables the
request touches and what depends on them. They are part of the turn, so the manager's view of
the task holds them too.

    protocol = dacomp_protocol()              # the same loop for both tracks
    LLMWorker(client, protocol=protocol)
"""

from __future__ import annotations

import re

from stateguard.task import AgentTurn
from stateguard.workers.protocol import WorkerProtocol

__all__ = ["SYSTEM", "TRACK_INSTRUCTIONS", "dacomp_protocol", "parse_action"]

SYSTEM = """You are an autonomous data engineer. You work on a data-warehouse repository inside a sandboxed environment, through a persistent Python session, and you finish the task on your own.
How you act: each reply starts with a short piece of reasoning and ends with exactly one action.
- To run code, put Python in <execute_ipython>
...
</execute_ipython>. The session keeps imports, variables and files between actions. What the code prints comes back to you as OBSERVATION.
- There is no shell here. Do file and database work from Python: os and pathlib for files, the duckdb module for databases.
- When the task is complete, reply with <finish>{"sql_dir": "<absolute path of your sql folder>"}</finish> and no other action.
How you work: take one small step at a time. Look at the files before you change them, and check every change by running it. If an action fails, read the error and fix the cause instead of repeating it. Do not ask for help or confirmation; nobody will answer."""

TRACK_INSTRUCTIONS = {
    "impl": """Implementation track: the pipeline does not exist yet. Build every table the contract defines, \
layer by layer: staging first, then intermediate, then marts, in the order config/layer_dependencies.yaml gives. \
After each layer, build its tables in your working copy of the database and compare their columns and row counts \
with the contract before you start the next layer.""",
    "evol": """Evolution track: the pipeline already works, and the request changes it. Find the tables the request \
touches and every table downstream of them (config/layer_dependencies.yaml and the SQL that reads them). Change exactly \
those, keep every other SQL file as shipped, then rebuild the changed tables and their downstream tables in your \
working copy and check them.""",
}

_IPYTHON = re.compile(r"<execute_ipython>\s*\n?(.*?)</execute_ipython>", re.S)
_FINISH = re.compile(r"<finish>(.*?)</finish>", re.S)
_BASH = re.compile(r"<execute_bash>", re.S)


def parse_action(text: str) -> tuple[str | None, str | None]:
    """(cell code, None), (None, finish payload) or (None, None) when the reply holds no usable action.
    The first action counts; a finish wins only when no cell comes before it."""
    cell, finish = _IPYTHON.search(text), _FINISH.search(text)
    if cell and (not finish or cell.start() < finish.start()):
        return cell.group(1).rstrip(), None
    if finish:
        return None, finish.group(1).strip()
    return None, None


def _no_action(text: str) -> str:
    if _BASH.search(text):
        return (
            "OBSERVATION:\nThis sandbox has no shell, so <execute_bash> is not run. Do the same from Python in "
            "<execute_ipython> (os, pathlib, duckdb)."
        )
    return (
        "OBSERVATION:\nNo action found. End your reply with one <execute_ipython>...</execute_ipython> action, "
        'or with <finish>{"sql_dir": "..."}</finish> when the pipeline is complete.'
    )


def dacomp_protocol() -> WorkerProtocol:
    """The CodeAct loop for both tracks (the track's instructions travel in the turn, see bench.py)."""
    return WorkerProtocol(
        system_prompt=SYSTEM,
        turn_text=AgentTurn.prompt,
        parse=parse_action,
        feedback=lambda output: f"OBSERVATION:\n{output or '(no output)'}",
        no_action=_no_action,
    )
