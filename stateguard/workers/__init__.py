"""Worker adapters (paper A.6). `ScriptedWorker` is the offline stand-in for an LLM agent."""

from stateguard.workers.scripted import Fault, FaultModel, ScriptedWorker

__all__ = ["Fault", "FaultModel", "ScriptedWorker"]
