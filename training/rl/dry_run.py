"""CPU dry run of the RL recipe: everything of one DAPO step but the GPU rollout engine and the update.

    python -m training.rl rl=debug            # `make rl CONFIG=debug`; about a minute on 2 cores

1. data: training.rl.data prepares train/val parquet from the synthesized RL prompts;
2. config: verl's validation and our recipe checks on the composed config (training/rl/config.py);
3. loading: verl's RLHFDataset reads our train parquet; a few prompts (a g=1 decision point first)
   are repeated rollout.n times into one batch, as verl's trainer does;
4. rollout: verl's AgentLoopWorker (in process, no Ray) runs our agent loop for every sample against
   the scripted model server (training/rl/scripted_server.py) over the tiny offline Qwen3 tokenizer;
   each sample rebuilds its prefix in the real harness and workspace;
5. reward: during the rollout verl calls its reward worker (RewardLoopWorker, in process) which loads
   our reward manager and compute_score from the config, exactly as in training;
6. DAPO: the zero-variance group filter and verl's GRPO advantages on the collected rewards.
The result is checked (shared prompt tokens per group, masked tool results, finite zero-mean
advantages) and summarized as one table row per group.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

import numpy as np
import torch
from omegaconf import DictConfig
from pydantic import BaseModel

from stateguard.artifacts.rl_prompts import PreparedExtraInfo, RlColumn
from training.rl.config import check_recipe, settings
from training.rl.dapo import group_advantages, keep_mask
from training.rl.data import PrepStats, prepare

__all__ = ["DryRunResult", "GroupRow", "dry_run", "format_table", "rollout_groups"]


class GroupRow(BaseModel):
    index: int
    task_id: str
    turn: int
    decision_point: int
    variant: str
    g: int
    personas: list[str]
    decisions: list[str]
    scores: list[float]
    rewards: list[float]
    advantages: list[float]
    kept: bool
    response_tokens: list[int]
    model_tokens: list[int]


class DryRunResult(BaseModel):
    recipe: dict[str, Any]
    data: PrepStats
    rollouts: int
    groups: list[GroupRow]
    checks: list[str]
    timings: dict[str, float]


class _LocalReward:
    """Stands in for a Ray actor handle of verl's RewardLoopWorker: `handle.compute_score.remote(data)`."""

    def __init__(self, worker: Any):
        self.compute_score = self
        self._worker = worker

    def remote(self, data: Any) -> Any:
        return self._worker.compute_score(data)


def _pick(dataset: Any, wanted: int, constant: int) -> tuple[list[int], list[int]]:
    """Row positions: g=1 decision points first, then other turns; the last `constant` are constant groups."""
    infos = [PreparedExtraInfo.from_runtime(dataset[i][RlColumn.EXTRA_INFO]) for i in range(len(dataset))]
    labels = [(i, info.label().g, info.turn) for i, info in enumerate(infos)]
    order = sorted(labels, key=lambda x: (-x[1], x[0]))
    chosen, turns = [], set()
    for i, _, turn in order:
        if turn not in turns:
            chosen.append(i)
            turns.add(turn)
        if len(chosen) == wanted + constant:
            break
    if len(chosen) < wanted + constant:
        raise ValueError(
            f"the train split has {len(chosen)} distinct decision turns; lower stateguard.dry_run.groups"
        )
    return chosen[:wanted], chosen[wanted:]


async def rollout_groups(cfg: DictConfig, model_dir: str, groups: int, constant: int) -> tuple[Any, Any, Any]:
    """(input batch, verl's output batch, scripted server) for `groups` + `constant` prompts x rollout.n."""
    from verl import DataProto
    from verl.experimental.agent_loop.agent_loop import AgentLoopWorker
    from verl.experimental.reward_loop.reward_loop import RewardLoopWorker
    from verl.utils.dataset.rl_dataset import RLHFDataset, collate_fn
    from verl.utils.tokenizer import hf_tokenizer

    from training.rl.scripted_server import ScriptedServerClient

    tokenizer = hf_tokenizer(model_dir)
    dataset = RLHFDataset(cfg.data.train_files, tokenizer, cfg.data)
    picked, constant_rows = _pick(dataset, groups, constant)
    rows = [dataset[i] for i in picked + constant_rows]
    batch = DataProto.from_single_dict(collate_fn(rows))
    uids = [str(PreparedExtraInfo.from_runtime(r[RlColumn.EXTRA_INFO]).index) for r in rows]
    batch.non_tensor_batch["uid"] = np.array(uids, dtype=object)
    batch = batch.repeat(repeat_times=int(cfg.actor_rollout_ref.rollout.n), interleave=True)
    server = ScriptedServerClient(
        cfg, tokenizer, constant_keys=[uids[len(picked) + k] for k in range(len(constant_rows))]
    )
    reward: Any = _LocalReward(RewardLoopWorker(cfg))  # built inside the running loop, as verl's actors are
    worker = AgentLoopWorker(cfg, llm_client=server, reward_loop_worker_handles=[reward])
    out = await worker.generate_sequences(batch)
    return batch, out, server


def _checks(batch: Any, out: Any, uids: np.ndarray, adv: np.ndarray, keep: np.ndarray) -> list[str]:
    """What a rollout batch must satisfy; raises on the first violation."""
    prompts, mask = out.batch["prompts"], out.batch["response_mask"]
    n_groups = len(dict.fromkeys(uids))
    per_group = len(uids) // max(n_groups, 1)
    for uid in dict.fromkeys(uids):
        rows = np.flatnonzero(uids == uid)
        if not all(torch.equal(prompts[rows[0]], prompts[r]) for r in rows):
            raise RuntimeError(f"group {uid}: rollouts do not share the prompt tokens")
        if keep[rows[0]] and abs(float(adv[rows].mean())) > 1e-4:
            raise RuntimeError(f"group {uid}: GRPO advantages do not average to zero ({adv[rows].mean()})")
    if not np.isfinite(adv).all():
        raise RuntimeError("non-finite advantages")
    valid = out.batch["attention_mask"][:, prompts.shape[1] :].bool()
    masked_inside = ((mask == 0) & valid).any(dim=1)
    if not bool(masked_inside.any()):
        raise RuntimeError("no rollout has masked context tokens: tool results were not masked out")
    return [
        f"{n_groups} groups x {per_group} rollouts share their prompt tokens",
        f"{int(masked_inside.sum())}/{len(uids)} rollouts hold masked tool results / observations (mask 0)",
        "GRPO advantages finite and zero-mean in every kept group",
        f"{int((~keep).sum()) // per_group} zero-variance group(s) dropped",
    ]


def dry_run(cfg: DictConfig) -> DryRunResult:
    s = settings(cfg)
    # DictWorkspace hashes values with pickle, whose module lookup walks sys.modules; with transformers loaded
    # every walk logs a deprecation warning per lazy alias. Nothing is wrong: keep them out of the output.
    logging.getLogger("transformers").setLevel(logging.ERROR)
    logging.getLogger("verl").setLevel(
        logging.WARNING
    )  # one INFO line per agent loop about its token builder
    clock = {"start": time.perf_counter()}
    data = prepare(s.prompts, s.data_dir, val_fraction=s.val_fraction, seed=s.seed, agent_name=s.agent_name)
    clock["data"] = time.perf_counter()
    from training.tiny_model import build_tiny_model, is_built

    if not is_built(s.dry_run.model_dir, overfit_response=None, seed=0):
        build_tiny_model(s.dry_run.model_dir, overfit_response=None, seed=0)
    recipe = check_recipe(cfg)
    clock["config"] = time.perf_counter()
    batch, out, server = asyncio.run(
        rollout_groups(cfg, s.dry_run.model_dir, s.dry_run.groups, s.dry_run.constant_groups)
    )
    clock["rollout"] = time.perf_counter()

    uids = np.asarray(batch.non_tensor_batch["uid"])
    rm_scores, mask = out.batch["rm_scores"], out.batch["response_mask"]
    rewards = rm_scores.sum(dim=-1).numpy()
    metric = str(cfg.algorithm.filter_groups.metric)
    scores = np.asarray(out.non_tensor_batch["score"], dtype=float)
    keep = keep_mask(list(uids), list(rewards if metric == "reward" else out.non_tensor_batch[metric]))
    token_adv = group_advantages(
        rm_scores,
        mask,
        list(uids),
        estimator=str(cfg.algorithm.adv_estimator),
        norm_adv_by_std=bool(cfg.algorithm.norm_adv_by_std_in_grpo),
    )
    adv = ((token_adv * mask).sum(dim=-1) / mask.sum(dim=-1).clamp(min=1)).numpy()
    clock["dapo"] = time.perf_counter()
    checks = _checks(batch, out, uids, adv, keep)

    summaries = out.non_tensor_batch["stateguard"]
    valid = out.batch["attention_mask"][:, out.batch["prompts"].shape[1] :].sum(dim=-1).tolist()
    groups = []
    for uid in dict.fromkeys(uids):
        rows = np.flatnonzero(uids == uid)
        extra = PreparedExtraInfo.from_runtime(batch.non_tensor_batch[RlColumn.EXTRA_INFO][rows[0]])
        groups.append(
            GroupRow(
                index=extra.index,
                task_id=extra.task_id,
                turn=extra.turn,
                decision_point=extra.decision_point,
                variant=extra.variant,
                g=extra.label().g,
                personas=[server.persona(summaries[r]["request_id"]) for r in rows],
                decisions=[summaries[r]["decision"] for r in rows],
                scores=[round(float(scores[r]), 4) for r in rows],
                rewards=[round(float(rewards[r]), 4) for r in rows],
                advantages=[round(float(adv[r]), 3) for r in rows],
                kept=bool(keep[rows[0]]),
                response_tokens=[int(valid[r]) for r in rows],
                model_tokens=[int(mask[r].sum()) for r in rows],
            )
        )
    stamps = list(clock.items())
    timings = {name: round(t - prev, 2) for (_, prev), (name, t) in zip(stamps, stamps[1:], strict=False)}
    timings["total"] = round(clock["dapo"] - clock["start"], 2)
    return DryRunResult(
        recipe=recipe, data=data, rollouts=len(uids), groups=groups, checks=checks, timings=timings
    )


def format_table(result: DryRunResult) -> str:
    """One line per rollout, grouped; then the checks and the timings."""
    lines = [
        f"{'group':>5} {'task / turn / dp':<34} {'g':>1} {'persona':<15} {'decision':<19} "
        f"{'R(tau)':>7} {'reward':>7} {'adv':>6} {'resp':>5} {'model':>5}  kept"
    ]
    for grp in result.groups:
        where = f"{grp.task_id[:22]} t{grp.turn} dp{grp.decision_point}"
        for k in range(len(grp.scores)):
            lines.append(
                f"{grp.index if k == 0 else '':>5} {where if k == 0 else '':<34} "
                f"{grp.g if k == 0 else '':>1} "
                f"{grp.personas[k]:<15} {grp.decisions[k]:<19} {grp.scores[k]:>7.3f} {grp.rewards[k]:>7.3f} "
                f"{(f'{grp.advantages[k]:6.2f}' if grp.kept else '-'):>6} "
                f"{grp.response_tokens[k]:>5} {grp.model_tokens[k]:>5}  "
                f"{('yes' if grp.kept else 'DROPPED (zero variance)') if k == 0 else ''}"
            )
    recipe = result.recipe
    lines += [
        "",
        "recipe: "
        + ", ".join(
            f"{k}={recipe[k]}"
            for k in (
                "adv_estimator",
                "clip_ratio_low",
                "clip_ratio_high",
                "loss_agg_mode",
                "use_kl_loss",
                "filter_groups_metric",
                "overlong_buffer_len",
                "rollout_n",
                "lr",
                "train_batch_size",
                "context",
            )
        ),
    ]
    lines += [
        f"data: {result.data.train_rows} train / {result.data.val_rows} val rows "
        f"({result.data.duplicates} duplicates dropped) -> {result.data.train_path}"
    ]
    lines += [f"check: {c}" for c in result.checks]
    lines += ["time: " + ", ".join(f"{k} {v:.1f}s" for k, v in result.timings.items())]
    return "\n".join(lines)
