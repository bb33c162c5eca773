"""Worker adapters (paper A.6). `ScriptedWorker` is the offline stand-in for an LLM agent;
`registry.py` names the workers (`WORKERS`, the one registry `worker=<name>` reads)."""

from stateguard.workers.faults import Fault, FaultError, check_fault, check_faults
from stateguard.workers.response import ResponseModel
from stateguard.workers.scripted import FaultModel, ScriptedWorker

__all__ = [
    "Fault",
    "FaultError",
    "FaultModel",
    "ResponseModel",
    "ScriptedWorker",
    "check_fault",
    "check_faults",
]
