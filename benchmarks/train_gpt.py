"""Train the course's small GPT from the command line: a benchmark, and the scale-out script.

INSTRUCTOR MATERIAL. This file holds working solutions to exercises of notebooks 08 and 09 (the
assembled GPT, the decay groups, random batches, the language-model loss, the learning-rate schedule, the evaluation loop). ``benchmarks/`` is not
released to students (nbgrader releases only the assignment folders), so keep it out of anything a
student receives.

It trains the model students assemble in notebook 09 (pre-LN decoder-only transformer, causal attention
through ``F.scaled_dot_product_attention``, LayerNorm with gain and shift, tied embeddings, GPT-2-style
initialisation, AdamW with weight decay on the linear layers' matrices only (not on embeddings), warm-up + cosine schedule, gradient clipping) on character-level text, and
prints training tokens/s, model FLOPs utilisation (MFU), peak memory, final train/validation loss
and wall time.

Single process (the reference recipe: pydoc_data.topics, 4 layers, 4 heads, width 128, context 64,
batch 12, no dropout, no biases, AdamW 1e-3 (0.9, 0.99), wd 0.1, 100 warm-up steps, cosine to 1e-4
over 2000 iterations, clip 1.0, fp32, 2 threads)::

    python benchmarks/train_gpt.py --config reference

Several processes with DistributedDataParallel (NCCL between GPUs, gloo on CPUs); the global batch
is split evenly across processes, so the run is the same as a single process with that batch::

    torchrun --standalone --nproc_per_node=4 benchmarks/train_gpt.py --config gpu
    torchrun --standalone --nproc_per_node=2 benchmarks/train_gpt.py --config tiny --device cpu

Timings depend on what else the machine is doing: run it on a quiet machine (``uptime`` first) and
compare like with like, e.g. against a reference implementation run just before or after on the same
machine. ``--json PATH`` writes every figure and the loss curve to a file.

Where the time goes: ``--profile 20`` prints PyTorch's profile of 20 steps after the warm-up (left out
of tokens/s), and every run ends with the *matmul floor*, the time the step's matrix products take on
their own at the model's shapes, so a tokens/s figure can be read as a fraction of what this machine
allows at this dtype.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from utils import corpus  # noqa: E402
from utils.run_cost import GPU_PEAK_TFLOPS, matmul_rates  # noqa: E402  (one table of datasheet peaks, for the notebook and this script)
from utils.precision import Precision, choose_precision, peak_memory_bytes, peak_memory_source, reset_peak_memory  # noqa: E402

# ---------------------------------------------------------------------------------------------------
# Configurations


@dataclass
class Config:
    # model
    n_layer: int = 4
    n_head: int = 4
    n_embd: int = 128
    block_size: int = 64
    dropout: float = 0.0
    bias: bool = False
    # optimisation
    batch_size: int = 12            # the global batch (split across processes under torchrun)
    max_iters: int = 2000
    lr: float = 1e-3
    min_lr: float = 1e-4
    warmup_iters: int = 100
    lr_decay_iters: int = 2000
    beta1: float = 0.9
    beta2: float = 0.99
    weight_decay: float = 0.1
    grad_clip: float = 1.0
    # measuring
    eval_iters: int = 20            # batches for the final train/val loss
    eval_interval: int = 0          # 0: evaluate only at the end
    log_interval: int = 100
    # machinery
    corpus: str = "python_docs"
    device: str = "auto"
    dtype: str = "float32"          # float32, bfloat16, float16, or auto: utils.precision.choose_precision
    threads: int = 2                # CPU threads per process (0: leave PyTorch's default)
    compile: bool = False
    seed: int = 1337


PRESETS = {
    # The recipe of the performance goal (see the module docstring).
    "reference": Config(),
    # A nanoGPT "shakespeare-char"-class model for one GPU (about 10.7M parameters).
    "gpu": Config(n_layer=6, n_head=6, n_embd=384, block_size=256, dropout=0.2, batch_size=64, max_iters=5000,
                  lr=1e-3, min_lr=1e-4, warmup_iters=100, lr_decay_iters=5000, eval_iters=200, eval_interval=500,
                  log_interval=250, corpus="python_stdlib", dtype="auto", threads=0),
    # Seconds on a CPU: for tests of the script itself (the DDP check).
    "tiny": Config(n_layer=2, n_head=2, n_embd=32, block_size=16, batch_size=8, max_iters=6, lr=1e-3, min_lr=1e-4,
                   warmup_iters=2, lr_decay_iters=6, eval_iters=2, log_interval=1, threads=1),
}


# ---------------------------------------------------------------------------------------------------
# The model (notebook 09's GPT with PyTorch's parts: the model students assemble and train)


class CausalSelfAttention(nn.Module):
    def __init__(self, cfg: Config):
        super().__init__()
        self.n_head, self.dropout = cfg.n_head, cfg.dropout
        self.qkv = nn.Linear(cfg.n_embd, 3 * cfg.n_embd, bias=cfg.bias)
        self.proj = nn.Linear(cfg.n_embd, cfg.n_embd, bias=cfg.bias)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(x).view(B, T, 3, self.n_head, C // self.n_head).permute(2, 0, 3, 1, 4)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True, dropout_p=self.dropout if self.training else 0.0)
        return self.proj(y.transpose(1, 2).reshape(B, T, C))


class FeedForward(nn.Module):
    def __init__(self, cfg: Config):
        super().__init__()
        self.fc = nn.Linear(cfg.n_embd, 4 * cfg.n_embd, bias=cfg.bias)
        self.proj = nn.Linear(4 * cfg.n_embd, cfg.n_embd, bias=cfg.bias)

    def forward(self, x):
        return self.proj(F.gelu(self.fc(x)))


class Block(nn.Module):
    # Notebook 09's block: the norms are nn.LayerNorm with their shift (as students build them).
    def __init__(self, cfg: Config):
        super().__init__()
        self.ln1 = nn.LayerNorm(cfg.n_embd)
        self.attn = CausalSelfAttention(cfg)
        self.ln2 = nn.LayerNorm(cfg.n_embd)
        self.ffn = FeedForward(cfg)
        self.drop = nn.Dropout(cfg.dropout)

    def forward(self, x):
        x = x + self.drop(self.attn(self.ln1(x)))
        return x + self.drop(self.ffn(self.ln2(x)))


class GPT(nn.Module):
    def __init__(self, cfg: Config, vocab_size: int):
        super().__init__()
        self.tok_emb = nn.Embedding(vocab_size, cfg.n_embd)
        self.pos_emb = nn.Embedding(cfg.block_size, cfg.n_embd)
        self.drop = nn.Dropout(cfg.dropout)
        self.blocks = nn.ModuleList([Block(cfg) for _ in range(cfg.n_layer)])
        self.ln_f = nn.LayerNorm(cfg.n_embd)
        self.head = nn.Linear(cfg.n_embd, vocab_size, bias=False)
        self.head.weight = self.tok_emb.weight
        for module in self.modules():
            if isinstance(module, (nn.Linear, nn.Embedding)):
                nn.init.normal_(module.weight, mean=0.0, std=0.02)
            if isinstance(module, nn.Linear) and module.bias is not None:
                nn.init.zeros_(module.bias)
        for name, p in self.named_parameters():
            if name.endswith("attn.proj.weight") or name.endswith("ffn.proj.weight"):
                nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(2 * cfg.n_layer))
        self.register_buffer("positions", torch.arange(cfg.block_size), persistent=False)

    def forward(self, idx):
        x = self.drop(self.tok_emb(idx) + self.pos_emb(self.positions[: idx.shape[1]]))
        for block in self.blocks:
            x = block(x)
        return self.head(self.ln_f(x))


# ---------------------------------------------------------------------------------------------------
# Training pieces (solutions to notebook 08's exercises)


def get_batch(data, block_size, batch_size, generator):
    starts = torch.randint(data.shape[0] - block_size, (batch_size,), generator=generator)
    index = starts[:, None] + torch.arange(block_size)
    return data[index], data[index + 1]


def lm_loss(logits, targets):
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))


def learning_rate(step, cfg: Config):
    if step < cfg.warmup_iters:
        return cfg.lr * (step + 1) / cfg.warmup_iters
    if step >= cfg.lr_decay_iters:
        return cfg.min_lr
    progress = (step - cfg.warmup_iters) / (cfg.lr_decay_iters - cfg.warmup_iters)
    return cfg.min_lr + 0.5 * (1.0 + math.cos(math.pi * progress)) * (cfg.lr - cfg.min_lr)


def configure_optimizer(model, cfg: Config, device):
    # Notebook 09's groups: decay only the weights of linear layers that are not also an embedding (the
    # tied head); biases, norm gains and shifts, and the embeddings are not decayed.
    embeddings = {id(m.weight) for m in model.modules() if isinstance(m, nn.Embedding)}
    linears = {id(m.weight) for m in model.modules() if isinstance(m, nn.Linear)}
    params = [p for p in model.parameters() if p.requires_grad]
    decay = [p for p in params if id(p) in linears and id(p) not in embeddings]
    groups = [{"params": decay, "weight_decay": cfg.weight_decay},
              {"params": [p for p in params if not any(p is q for q in decay)], "weight_decay": 0.0}]
    # The fused AdamW kernel updates every tensor in one pass (CUDA, and CPU in recent PyTorch).
    try:
        return torch.optim.AdamW(groups, lr=cfg.lr, betas=(cfg.beta1, cfg.beta2), fused=True)
    except (RuntimeError, TypeError):
        return torch.optim.AdamW(groups, lr=cfg.lr, betas=(cfg.beta1, cfg.beta2))


@torch.no_grad()
def estimate_loss(model, data, cfg: Config, batches: int, seed: int, device, precision: Precision):
    was_training = model.training
    model.eval()
    generator = torch.Generator().manual_seed(seed)
    total = 0.0
    for _ in range(batches):
        x, y = get_batch(data, cfg.block_size, cfg.batch_size, generator)
        with precision.autocast():
            total += lm_loss(model(x.to(device)), y.to(device)).item()
    model.train(was_training)
    return total / batches


# ---------------------------------------------------------------------------------------------------
# Measuring



def flops_per_token(model, cfg: Config) -> float:
    """Training FLOPs per token: 6 per weight (forward 2, backward 4) plus attention's scores/values."""
    n = sum(p.numel() for p in model.parameters()) - model.pos_emb.weight.numel()
    return 6 * n + 12 * cfg.n_layer * cfg.n_embd * cfg.block_size


def best_time(fn, device, warmup: int = 3, repeats: int = 5, clock=time.perf_counter) -> float:
    """The fastest of ``repeats`` timed calls of ``fn`` after ``warmup`` untimed ones (GPU work waited for),
    by ``clock`` (wall time by default; ``time.process_time`` counts only this process's CPU time, which
    other work on a shared machine disturbs far less when PyTorch runs on one thread)."""
    for _ in range(warmup):
        fn()
    best = float("inf")
    for _ in range(repeats):
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        start = clock()
        fn()
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        best = min(best, clock() - start)
    return best


def peak_flops(device, cfg: Config, override_tflops: float | None, model=None, batch: int = 1) -> tuple[float, str]:
    if override_tflops:
        return override_tflops * 1e12, "given on the command line"
    if device.type == "cuda":
        name = torch.cuda.get_device_name(device)
        for key, (half, single) in GPU_PEAK_TFLOPS.items():
            if key in name:
                tflops = half if cfg.dtype in ("bfloat16", "float16") else single
                return tflops * 1e12, f"{name} datasheet peak for {cfg.dtype}"
        return float("nan"), f"unknown GPU {name}"
    # CPU: no datasheet figure to trust, so measure what float32 matmul reaches here, with these threads,
    # at the model's own shapes: the median of many timed products (one timing is too noisy to divide by).
    return measured_matmul_peak(model, batch * cfg.block_size, device)


def measured_matmul_peak(model, rows: int, device, repeats: int = 31) -> tuple[float, str]:
    """The highest median FLOP/s over the forward products ``x @ W.T`` of the model's linear layers, each
    timed ``repeats`` times on its own, and a text with the spread (10th to 90th percentile) of that shape."""
    best, best_text = 0.0, "no linear layer"
    for n_out, n_in in sorted({tuple(m.weight.shape) for m in model.modules() if isinstance(m, nn.Linear)}):
        rates = matmul_rates(rows, n_in, n_out, device, repeats=repeats, warmup=3)
        median = rates[len(rates) // 2]
        if median > best:
            low, high = rates[len(rates) // 10], rates[(9 * len(rates)) // 10]
            best, best_text = median, (f"median of {repeats} float32 products ({rows}x{n_in}) @ ({n_in}x{n_out}), "
                                       f"{torch.get_num_threads()} threads; 10-90 % spread {low / 1e9:.1f}-{high / 1e9:.1f} GFLOP/s")
    return best, best_text


def matmul_floor_seconds(model, cfg: Config, batch: int, device, dtype, clock=time.perf_counter) -> float:
    """How long one training step's matrix products take on their own, at the model's shapes.

    Every ``nn.Linear`` costs three products per step (forward ``x @ W.T``, and backward ``dY @ W`` and
    ``dY.T @ x``), and attention six batched ones per layer (``Q K^T`` and ``A V`` forward, four more
    backward). Each is timed alone (best of five) and the times are added: no fusing, overlap or
    overhead-cutting can make a step faster than this at this dtype and thread count, so it turns the
    tokens/s of a run into a fraction of what this machine allows. ``clock`` as in ``best_time``.
    """
    def product(a_shape, b_shape, transpose_b=False) -> float:
        a = torch.randn(a_shape, device=device, dtype=dtype)
        b = torch.randn(b_shape, device=device, dtype=dtype)
        b = b.transpose(-2, -1) if transpose_b else b
        return best_time(lambda: torch.matmul(a, b), device, clock=clock)

    rows = batch * cfg.block_size
    cache: dict[tuple, float] = {}
    total = 0.0
    for module in model.modules():
        if isinstance(module, nn.Linear):
            n_out, n_in = module.weight.shape
            key = (n_out, n_in)
            if key not in cache:
                cache[key] = (product((rows, n_in), (n_out, n_in), transpose_b=True)  # x @ W.T
                              + product((rows, n_out), (n_out, n_in))                # dY @ W
                              + product((n_out, rows), (rows, n_in)))                # dY.T @ x
            total += cache[key]
    heads, head_size, t = batch * cfg.n_head, cfg.n_embd // cfg.n_head, cfg.block_size
    # Forward S = Q K^T and Y = A V; backward dA = dY V^T (shaped like S), and dV = A^T dY, dQ = dS K and
    # dK = dS^T Q (shaped like Y).
    per_layer = (2 * product((heads, t, head_size), (heads, head_size, t))
                 + 4 * product((heads, t, t), (heads, t, head_size)))
    return total + cfg.n_layer * per_layer


def precision_of(dtype: str, device) -> Precision:
    """The run's precision: ``auto`` decides from the device (float16 + GradScaler below compute capability
    8.0, bfloat16 from 8.0, float32 on CPUs); a named dtype is used as asked, even where it is emulated."""
    if dtype == "auto":
        return choose_precision(device)
    dtypes = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}
    if dtype not in dtypes:
        raise SystemExit(f"--dtype must be auto or one of {sorted(dtypes)}, got {dtype!r}")
    chosen = dtypes[dtype]
    return Precision(device.type, chosen, chosen is torch.float16, f"{dtype} (asked for with --dtype)")


# ---------------------------------------------------------------------------------------------------


def parse_args(argv=None) -> tuple[Config, argparse.Namespace]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", default="reference", choices=sorted(PRESETS))
    for name, value in asdict(Config()).items():
        flag = "--" + name.replace("_", "-")
        if isinstance(value, bool):
            parser.add_argument(flag, type=lambda s: s.lower() in ("1", "true", "yes"), default=None)
        else:
            parser.add_argument(flag, type=type(value), default=None)
    parser.add_argument("--peak-tflops", type=float, default=None, help="peak FLOP/s for MFU (default: see docs)")
    parser.add_argument("--json", type=Path, default=None, help="write the results and the loss curve here")
    parser.add_argument("--quiet", action="store_true", help="print only the summary")
    parser.add_argument("--profile", type=int, default=0, metavar="STEPS",
                        help="profile this many steps after the warm-up and print where their time went "
                             "(those steps are left out of tokens/s)")
    args = parser.parse_args(argv)
    cfg = Config(**asdict(PRESETS[args.config]))
    for name in asdict(cfg):
        value = getattr(args, name)
        if value is not None:
            setattr(cfg, name, value)
    return cfg, args


def load_corpus(name: str) -> tuple[torch.Tensor, torch.Tensor, list[str]]:
    """Training and validation ids and the character vocabulary. "python_stdlib" is the standard library's
    source and docs, split by file (tens of MB on every Python: a GPU-sized text offline); the others are
    split 90/10 at a cut."""
    if name == "python_stdlib":
        train_text, val_text = corpus.python_stdlib_corpus()
    else:
        text = corpus.python_docs() if name == "python_docs" else corpus.download_corpus(name)
        train_text, val_text = corpus.train_validation_split(text, 0.1)
    chars = sorted(set(train_text) | set(val_text))
    stoi = {ch: i for i, ch in enumerate(chars)}
    encode = lambda part: torch.tensor([stoi[ch] for ch in part], dtype=torch.long)  # noqa: E731
    return encode(train_text), encode(val_text), chars


def main(argv=None) -> dict:
    cfg, args = parse_args(argv)
    distributed = "RANK" in os.environ and int(os.environ.get("WORLD_SIZE", "1")) > 1
    if cfg.device == "auto":
        cfg.device = "cuda" if torch.cuda.is_available() else "cpu"
    if cfg.threads:
        torch.set_num_threads(cfg.threads)
    rank, world = 0, 1
    if distributed:
        dist.init_process_group(backend="nccl" if cfg.device == "cuda" else "gloo")
        rank, world = dist.get_rank(), dist.get_world_size()
    if cfg.device == "cuda":
        device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0")))
        torch.cuda.set_device(device)
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True
    else:
        device = torch.device(cfg.device)
    if cfg.batch_size % world:
        raise SystemExit(f"the global batch {cfg.batch_size} does not split evenly over {world} processes")
    local_batch = cfg.batch_size // world
    say = (lambda *a: print(*a, flush=True)) if rank == 0 and not args.quiet else (lambda *a: None)

    train_data, val_data, chars = load_corpus(cfg.corpus)

    torch.manual_seed(cfg.seed)  # the same initial weights in every process
    model = GPT(cfg, len(chars)).to(device)
    optimizer = configure_optimizer(model, cfg, device)
    precision = precision_of(cfg.dtype, device)
    cfg.dtype = str(precision.dtype).removeprefix("torch.")
    scaler = precision.grad_scaler()
    train_model = model
    if distributed:
        train_model = nn.parallel.DistributedDataParallel(model, device_ids=[device.index] if device.type == "cuda" else None)
    if cfg.compile:
        train_model = torch.compile(train_model)
    per_token = flops_per_token(model, cfg)
    peak, peak_source = peak_flops(device, cfg, args.peak_tflops, model, local_batch)
    say(f"{sum(p.numel() for p in model.parameters()):,} parameters | {world} process(es) on {device} | "
        f"{precision.reason} | vocabulary {len(chars)} | train {len(train_data):,} val {len(val_data):,} characters")

    generator = torch.Generator().manual_seed(cfg.seed + 1)  # identical in every process: the same global batch
    losses = []
    reset_peak_memory(device)  # the peak of this run (CPU: the process's resident memory; see utils.precision)
    wall_start = time.perf_counter()
    train_seconds = 0.0
    tokens = 0
    # Throughput leaves out the first steps (torch.compile compiles there, caches warm up).
    skip = min(10, cfg.max_iters // 2)
    steady_seconds, steady_tokens, timed_steps, warmup_seconds = 0.0, 0, 0, 0.0
    profiler = None
    for step in range(cfg.max_iters):
        if args.profile and step == skip:
            profiler = torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU] + (
                [torch.profiler.ProfilerActivity.CUDA] if device.type == "cuda" else []))
            profiler.start()
        profiling = profiler is not None and step < skip + args.profile
        start = time.perf_counter()
        for group in optimizer.param_groups:
            group["lr"] = learning_rate(step, cfg)
        x, y = get_batch(train_data, cfg.block_size, cfg.batch_size, generator)
        x, y = x[rank * local_batch:(rank + 1) * local_batch], y[rank * local_batch:(rank + 1) * local_batch]
        x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
        with precision.autocast():
            loss = lm_loss(train_model(x), y)
        optimizer.zero_grad(set_to_none=True)
        scaler.scale(loss).backward()
        if cfg.grad_clip:
            scaler.unscale_(optimizer)
            torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.grad_clip)
        scaler.step(optimizer)
        scaler.update()
        log_now = (step + 1) % cfg.log_interval == 0 or step == cfg.max_iters - 1 or args.json is not None
        if log_now:
            value = loss.detach().float()
            if distributed:
                dist.all_reduce(value)
                value /= world
            losses.append(value.item())
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        train_seconds += time.perf_counter() - start
        tokens += cfg.batch_size * cfg.block_size
        if profiling and step == min(skip + args.profile, cfg.max_iters) - 1:
            profiler.stop()
            if rank == 0:
                sort_by = "self_cuda_time_total" if device.type == "cuda" else "self_cpu_time_total"
                print(profiler.key_averages().table(sort_by=sort_by, row_limit=20), flush=True)
        if step < skip:
            warmup_seconds += time.perf_counter() - start
        if step >= skip and not profiling:
            steady_seconds += time.perf_counter() - start
            steady_tokens += cfg.batch_size * cfg.block_size
            timed_steps += 1
        if (step + 1) % cfg.log_interval == 0 and log_now:
            say(f"step {step + 1:5d}  loss {losses[-1]:.4f}  lr {learning_rate(step, cfg):.2e}  "
                f"{tokens / train_seconds:,.0f} tokens/s")
        if cfg.eval_interval and (step + 1) % cfg.eval_interval == 0 and step + 1 < cfg.max_iters and rank == 0:
            val = estimate_loss(model, val_data, cfg, cfg.eval_iters, 1, device, precision)
            say(f"step {step + 1:5d}  validation loss {val:.4f}")
    train_loss = estimate_loss(model, train_data, cfg, cfg.eval_iters, 0, device, precision)
    val_loss = estimate_loss(model, val_data, cfg, cfg.eval_iters, 1, device, precision)
    wall = time.perf_counter() - wall_start
    tokens_per_second = steady_tokens / steady_seconds if steady_seconds else float("nan")
    floor = matmul_floor_seconds(model, cfg, local_batch, device, precision.dtype)
    checksum = float(sum(p.detach().double().sum() for p in model.parameters()))
    result = {
        "config": asdict(cfg), "processes": world, "device": str(device),
        "device_name": torch.cuda.get_device_name(device) if device.type == "cuda" else "CPU",
        "parameters": sum(p.numel() for p in model.parameters()),
        "tokens_per_second": tokens_per_second, "timed_steps": timed_steps, "warmup_seconds": warmup_seconds, "train_seconds": train_seconds, "wall_seconds": wall,
        "mfu": per_token * tokens_per_second / peak, "peak_flops": peak, "peak_source": peak_source,
        "matmul_floor_ms": 1e3 * floor, "tokens_per_second_ceiling": cfg.batch_size * cfg.block_size / floor,
        "peak_memory_mb": peak_memory_bytes(device) / 2**20,
        "peak_memory_source": peak_memory_source(device), "precision": precision.reason, "train_loss": train_loss, "val_loss": val_loss,
        "loss_curve": losses, "parameter_checksum": checksum, "load_average": os.getloadavg(),
    }
    if rank == 0:
        print(f"training tokens/s {tokens_per_second:,.0f} (after step {skip}; the first {skip} steps took {warmup_seconds:.1f} s) | MFU {100 * result['mfu']:.1f} % of {peak / 1e12:.3g} TFLOP/s "
              f"({peak_source}) | peak memory {result['peak_memory_mb']:,.0f} MiB | "
              f"train loss {train_loss:.4f} | val loss {val_loss:.4f} | wall {wall:.1f} s "
              f"(training {train_seconds:.1f} s) | load average {os.getloadavg()[0]:.2f}", flush=True)
        print(f"matmul floor {result['matmul_floor_ms']:.1f} ms/step: the step's matrix products alone, at the model's "
              f"shapes, allow at most {result['tokens_per_second_ceiling']:,.0f} tokens/s here; this run reached "
              f"{100 * tokens_per_second / result['tokens_per_second_ceiling']:.0f} % of that", flush=True)
        if args.json:
            args.json.write_text(json.dumps(result, indent=1))
    if distributed:
        dist.barrier()
        dist.destroy_process_group()
    return result


if __name__ == "__main__":
    main()
