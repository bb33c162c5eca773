"""verl agent loop `stateguard_manager`: one DAPO rollout = the manager's continuation over a fixed prefix.

    actor_rollout_ref.rollout.agent.agent_loop_config_path: training/rl/agent_loops.yaml
    # rows carry agent_name=stateguard_manager (training/rl/data.py); verl's AgentLoopWorker runs them

For one RL row (a decision point of a synthesized trajectory) and one of its rollout.n samples:
1. the task folder is <stateguard.tasks_dir>/<extra_info.task_id> (training/rl/prefix.py);
2. a worker thread runs the real runtime (stateguard.rollout: scripted worker with the row's
   faults, harness, workspace, store, trace) up to the decision point with the prefix teacher,
   checks the rebuilt observation against the row's prompt, and hands the window to the production
   LLM manager (stateguard/policies/llm_manager.py) whose chat client is training/rl/bridge.py:
   every model call goes, as token ids, to verl's rollout server on this event loop;
3. the returned AgentLoopOutput holds the prompt tokens (the row's prompt, the same for the whole
   group), the response tokens (model tokens mask 1; tool results, feedback and later observations
   mask 0) and, in extra_fields, the trace of the window for the reward (extra_fields
   ["stateguard_trace"], merged into extra_info by training/rl/reward_manager.py) plus a summary.

Rollouts of a group share the worker prefix because the prefix is deterministic (same task, seed,
faults and teacher); only the manager's continuation is sampled (paper B.4).
"""

from __future__ import annotations

import asyncio
import functools
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any
from uuid import uuid4

from verl.experimental.agent_loop.agent_loop import AgentLoopBase, AgentLoopMetrics, AgentLoopOutput, register

from stateguard.artifacts.rl_prompts import PreparedExtraInfo, RlColumn
from stateguard.policies.llm_manager import LLMManager
from training.rewards.verl_score import TRACE_KEY
from training.rl.bridge import TokenBudget, TokenChat
from training.rl.config import settings
from training.rl.continuation import WindowManager, run_continuation
from training.rl.prefix import PrefixSpec, load_row_task

__all__ = ["AGENT_NAME", "SUMMARY_KEY", "StateGuardAgentLoop"]

AGENT_NAME = "stateguard_manager"
SUMMARY_KEY = "stateguard"
MAX_ACTIONS_PER_ACTIVATION = 8  # paper Sec. 4.1: up to 8 actions per activation
# The runtime of a rollout (worker cells, harness, tools) runs here, never on the event loop, and never
# in the loop's default executor, which verl's own tokenization uses.
_POOL = ThreadPoolExecutor(max_workers=64, thread_name_prefix="stateguard-rollout")


@register(AGENT_NAME)
class StateGuardAgentLoop(AgentLoopBase):
    _ordinals: dict[str, int] = {}  # rollouts started per prompt index (stable request ids in a group)

    def __init__(self, *args: Any, tools: Any = None, **kwargs: Any):
        super().__init__(*args, **kwargs)  # `tools`: verl's tool list; the manager's tools are stateguard's
        self.settings = settings(self.config)
        self.budget = TokenBudget(
            prompt_length=int(self.rollout_config.prompt_length),
            response_length=int(self.rollout_config.response_length),
            max_model_calls=self.settings.max_model_calls,
        )

    def _request_id(self, extra_info: dict[str, Any]) -> str:
        key = str(PreparedExtraInfo.from_runtime(extra_info).index)
        ordinal = self._ordinals.get(key, 0)
        self._ordinals[key] = ordinal + 1
        return f"sg-{key}-{ordinal}-{uuid4().hex[:8]}"

    async def run(self, sampling_params: dict[str, Any], **kwargs: Any) -> AgentLoopOutput:
        extra_info = dict(kwargs.get(RlColumn.EXTRA_INFO) or {})
        prompt = [dict(m) for m in kwargs["raw_prompt"]]
        spec = PrefixSpec.from_extra_info(extra_info)
        task = load_row_task(self.settings.tasks_dir, spec.task_id)
        request_id = self._request_id(extra_info)
        loop = asyncio.get_running_loop()

        def generate(prompt_ids: list[int], params: dict[str, Any]) -> Any:
            call = self.server_manager.generate(
                request_id=request_id, prompt_ids=prompt_ids, sampling_params=params
            )
            return asyncio.run_coroutine_threadsafe(call, loop).result()

        windows: list[WindowManager] = []

        def on_budget(reason: str) -> None:
            for window in windows:
                window.close("budget")

        chat = TokenChat(
            self.continuous_token_builder,
            self.tokenizer,
            generate,
            row_prompt=prompt,
            sampling_params=sampling_params,
            budget=self.budget,
            followup_observation_only=self.settings.followup_observation_only,
            on_budget=on_budget,
        )
        manager = LLMManager(
            chat,
            max_actions=MAX_ACTIONS_PER_ACTIVATION,
            context_budget_tokens=self.budget.prompt_length + self.budget.response_length,
        )
        run_dir = Path(self.settings.runs_dir) / f"{request_id}"
        result = await loop.run_in_executor(
            _POOL,
            functools.partial(
                run_continuation,
                spec,
                task,
                Path(self.settings.tasks_dir) / spec.task_id,
                prompt,
                sampled=manager,
                run_dir=run_dir,
                workspace=self.settings.workspace,
                max_activations=self.settings.max_activations,
                prefix_check=self.settings.prefix_check,
                transport=self.settings.trace_transport,
                keep_run=self.settings.keep_runs,
                window=windows,
            ),
        )

        n = self.budget.response_length
        logprobs = chat.response_logprobs
        summary = {
            "task_id": spec.task_id,
            "turn": spec.turn,
            "decision_point": spec.decision_point,
            "decision": result.decision or "none",
            "closed_by": result.closed_by,
            "window_activations": result.window_activations,
            "model_calls": chat.calls,
            "actions": len(result.actions),
            "rejected": sum(not a["accepted"] for a in result.actions),
            "prefix_s": result.prefix_s,
            "request_id": request_id,
        }
        return AgentLoopOutput(
            prompt_ids=chat.prompt_ids,
            response_ids=chat.response_ids[:n],
            response_mask=chat.response_mask[:n],
            response_logprobs=None if logprobs is None else logprobs[:n],
            num_turns=chat.calls + chat.context_messages + 1,
            metrics=AgentLoopMetrics(
                generate_sequences=chat.generate_s, tool_calls=max(0.0, result.total_s - chat.generate_s)
            ),
            extra_fields={TRACE_KEY: result.trace_source, SUMMARY_KEY: summary},
        )
