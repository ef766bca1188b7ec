"""PyTorch CPU reference of the local backend's model, for `deno task bench`.

The same pre-LN GPT as lib/local/model/gpt.ts (learned positions, causal attention, tanh-GELU
MLP, untied head, LayerNorm eps 1e-5) with the same LoRA placement (q, k, v, o, fc, proj,
lm_head; scale alpha/rank), timed on the same work: a train step (forward, summed token
cross-entropy, backward, AdamW) and KV-cache sampling with per-token logprobs.

Run with Debian's Python (python3-torch + libopenblas0-pthread):
    /usr/bin/python3 bench/torch_reference.py '{"vocab":512,"d":128,"layers":4,...}'
Prints one JSON object.
"""

import json
import math
import statistics
import sys
import time

import torch
import torch.nn.functional as F

cfg = {
    "vocab": 512, "d": 128, "layers": 4, "heads": 4, "seq": 128, "batch": 16,
    "rank": 32, "alpha": 32, "steps": 10, "warmup": 2, "threads": 2,
    "prompt": 16, "new_tokens": 112, "sample_rows": 16, "sample_reps": 3,
}
if len(sys.argv) > 1:
    cfg.update(json.loads(sys.argv[1]))
torch.set_num_threads(cfg["threads"])
torch.manual_seed(0)


class Linear(torch.nn.Module):
    """x @ W + b (+ scale * (x @ A) @ B when LoRA is on)."""

    def __init__(self, n_in, n_out, bias=True, rank=0, scale=1.0):
        super().__init__()
        self.w = torch.nn.Parameter(torch.randn(n_in, n_out) * 0.02)
        self.b = torch.nn.Parameter(torch.zeros(n_out)) if bias else None
        self.a = torch.nn.Parameter(torch.randn(n_in, rank) / math.sqrt(n_in)) if rank else None
        # Small non-zero B so that timing exercises the full LoRA path's gradients.
        self.lb = torch.nn.Parameter(torch.randn(rank, n_out) * 1e-3) if rank else None
        self.scale = scale

    def forward(self, x):
        y = x @ self.w
        if self.b is not None:
            y = y + self.b
        if self.a is not None:
            y = y + self.scale * ((x @ self.a) @ self.lb)
        return y


class Block(torch.nn.Module):
    def __init__(self, d, heads, rank, scale):
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = torch.nn.LayerNorm(d, eps=1e-5), torch.nn.LayerNorm(d, eps=1e-5)
        self.q, self.k, self.v, self.o = (Linear(d, d, rank=rank, scale=scale) for _ in range(4))
        self.fc = Linear(d, 4 * d, rank=rank, scale=scale)
        self.proj = Linear(4 * d, d, rank=rank, scale=scale)

    def attend(self, x, cache=None, pos=None):
        b, t, d = x.shape
        h = self.heads
        split = lambda z: z.view(b, t, h, d // h).transpose(1, 2)
        q, k, v = split(self.q(x)), split(self.k(x)), split(self.v(x))
        if cache is not None:
            kc, vc = cache
            kc[:, :, pos:pos + t] = k
            vc[:, :, pos:pos + t] = v
            k, v = kc[:, :, :pos + t], vc[:, :, :pos + t]
        else:
            pos = 0
        # torch 1.13 (Debian's) has no scaled_dot_product_attention.
        att = (q @ k.transpose(-2, -1)) / math.sqrt(d // h)
        mask = torch.ones(t, pos + t, dtype=torch.bool).tril(diagonal=pos)
        y = torch.softmax(att.masked_fill(~mask, float("-inf")), dim=-1) @ v
        return self.o(y.transpose(1, 2).reshape(b, t, d))

    def forward(self, x, cache=None, pos=None):
        x = x + self.attend(self.ln1(x), cache, pos)
        return x + self.proj(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))


class GPT(torch.nn.Module):
    def __init__(self, c, rank):
        super().__init__()
        scale = c["alpha"] / rank if rank else 1.0
        self.wte = torch.nn.Parameter(torch.randn(c["vocab"], c["d"]) * 0.02)
        self.wpe = torch.nn.Parameter(torch.randn(c["seq"], c["d"]) * 0.02)
        self.blocks = torch.nn.ModuleList(Block(c["d"], c["heads"], rank, scale) for _ in range(c["layers"]))
        self.ln_f = torch.nn.LayerNorm(c["d"], eps=1e-5)
        self.head = Linear(c["d"], c["vocab"], bias=False, rank=rank, scale=scale)

    def forward(self, tokens, caches=None, pos=0):
        x = self.wte[tokens] + self.wpe[pos:pos + tokens.shape[1]]
        for i, blk in enumerate(self.blocks):
            x = blk(x, None if caches is None else caches[i], pos)
        return self.head(self.ln_f(x))


def time_train(lora: bool):
    model = GPT(cfg, cfg["rank"] if lora else 0)
    if lora:
        for name, p in model.named_parameters():
            p.requires_grad = name.endswith(".a") or name.endswith(".lb")
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=1e-4, betas=(0.9, 0.95), eps=1e-12, weight_decay=0.0)
    tokens = torch.randint(0, cfg["vocab"], (cfg["batch"], cfg["seq"] + 1))
    x, y = tokens[:, :-1], tokens[:, 1:]
    times = []
    for i in range(cfg["warmup"] + cfg["steps"]):
        t0 = time.perf_counter()
        logits = model(x)
        loss = F.cross_entropy(logits.reshape(-1, cfg["vocab"]), y.reshape(-1), reduction="sum")
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        if i >= cfg["warmup"]:
            times.append((time.perf_counter() - t0) * 1000)
    return {"median_ms": statistics.median(times), "all_ms": times,
            "trainable_params": sum(p.numel() for p in params)}


@torch.no_grad()
def time_sampling():
    model = GPT(cfg, cfg["rank"]).eval()
    rows, n_new, plen = cfg["sample_rows"], cfg["new_tokens"], cfg["prompt"]
    hd = cfg["d"] // cfg["heads"]
    rates = []
    for _ in range(cfg["sample_reps"]):
        prompt = torch.randint(0, cfg["vocab"], (rows, plen))
        caches = [(torch.zeros(rows, cfg["heads"], plen + n_new, hd),
                   torch.zeros(rows, cfg["heads"], plen + n_new, hd)) for _ in model.blocks]
        t0 = time.perf_counter()
        logits = model(prompt, caches, 0)[:, -1]
        pos, logprobs = plen, []
        for _ in range(n_new):
            lp = torch.log_softmax(logits, dim=-1)
            tok = torch.multinomial(lp.exp(), 1)
            logprobs.append(lp.gather(1, tok))
            logits = model(tok, caches, pos)[:, -1]
            pos += 1
        rates.append(rows * n_new / (time.perf_counter() - t0))
    return {"median_tok_s": statistics.median(rates), "all_tok_s": rates}


print(json.dumps({
    "engine": f"pytorch {torch.__version__} cpu, {torch.get_num_threads()} threads",
    "config": cfg,
    "train_lora": time_train(lora=True),
    "train_full": time_train(lora=False),
    "sampling": time_sampling(),
}))
