"""Manager RL with DAPO on verl 0.9 (paper Sec. 3.5, Appendix B.4, Table 2).

    make rl CONFIG=debug            # python -m training.rl rl=debug: CPU dry run, about a minute
    python -m training.rl           # DAPO training on a GPU node or Ray cluster (below)

The recipe is configs/rl.yaml: verl's own ppo_trainer config plus our deltas (GRPO advantages, no
KL, clip 0.2/0.28, token-mean loss, dynamic sampling on R(tau), an overlong buffer, 8 rollouts per
prompt, lr 5e-7, 64 prompts per step, 40,960 tokens of prompt + response). Modules, one concept each:

    config          the `stateguard:` section, typed; verl's validation plus the recipe's invariants
    data            synthesized RL prompts -> train/val parquet (agent_name, index)
    prefix          a row's task, faults and the shared teacher (synthesis.teacher) replaying its prefix; check
    continuation    one rollout through stateguard.rollout: prefix, then the sampled manager's window
    bridge          the LLM manager's chat client over verl's token-level server (the token ledger)
    agent_loop      verl agent loop `stateguard_manager` (registered by agent_loops.yaml)
    reward_manager  verl's DAPO reward manager fed the rollout's trace -> training.rewards compute_score
    dapo            the zero-variance group filter and verl's GRPO advantages on a batch
    scripted_server a scripted stand-in for the rollout server (CPU dry run, tests)
    dry_run / run   the CPU dry run; the launch of verl's trainer

GPU / cluster launch (one 8-GPU node as in the paper; more nodes join the same Ray cluster):

    # every node, same path; a GPU env of its own: verl[vllm] pins torch 2.11.0 and vllm 0.24.0,
    # which the CPU `train` extra (torch 2.13.0) cannot share
    pip install 'verl[vllm]==0.9.1' && pip install -e .
    make synth                                   # runs/synth: task folders + corpus/rl/prompts.parquet
    make sft                                     # runs/sft/checkpoint-final: RL starts from SFT
    ray start --head                             # node 0; others: ray start --address=<head>:6379
    python -m training.rl trainer.nnodes=1 trainer.n_gpus_per_node=8
    # or verl's own entry on the same recipe (run from the repository root; data prepared first):
    python -m training.rl.data runs/synth/corpus/rl/prompts.parquet runs/rl/data
    python -m verl.trainer.main_ppo --config-path=$PWD/configs --config-name=rl

The reward judge (GPT-OSS-120B in the paper) is an OpenAI-compatible endpoint given as
reward.custom_reward_function.reward_kwargs.config.judge (configs/reward/default.yaml).
"""
