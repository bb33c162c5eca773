"""Manager SFT (paper Sec. 3.4, B.4, Eq. 25; Table 2): TRL SFTTrainer on the synthesized corpus.

    make synth && make sft                    # Qwen3-8B with the paper's settings (configs/sft.yaml)
    make synth ARGS=synth=debug && python -m training.sft sft=debug     # tiny Qwen3, CPU, ~1 min

One GPU node, 8 GPUs, DeepSpeed ZeRO-3 (configs/deepspeed/zero3.json, named by train.deepspeed):

    torchrun --nproc_per_node 8 -m training.sft
    accelerate launch --num_processes 8 -m training.sft     # the same through accelerate's launcher

Every process composes the same Hydra config; gradient accumulation follows from
global_batch_size (32) / (per_device_train_batch_size x processes). Use a launcher that passes the
rank through environment variables (torchrun, accelerate): the `deepspeed` launcher appends
`--local_rank=N`, which Hydra does not accept, and `accelerate launch --num_processes 1` starts a
plain process in which DeepSpeed looks for MPI (use torchrun --nproc_per_node 1 to try ZeRO-3 on
one device). Several nodes: --nnodes/--node_rank/--rdzv-endpoint (torchrun) or --num_machines/
--machine_rank/--main_process_ip (accelerate) on each node. LoRA instead of full fine-tuning:
`lora.enabled=true`.

Modules: config.py (typed config), data.py (corpus, mix, tokenization), render.py (chat rendering
that matches serving, with the Qwen3 `<think>` decision), train.py (run), __main__.py (Hydra).
"""
