"""Drives a Tinker-compatible server with the official Tinker Python SDK (0.25).

Run through `deno task compat:sdk`, which starts the local backend and sets
TINKER_BASE_URL / TINKER_API_KEY. Prints one `PASS <step>` / `FAIL <step>: <why>` /
`SKIP <step>: <why>` line per step and exits non-zero if any step failed.
"""

import math
import os
import sys
import traceback

import tinker
from tinker import types

MODEL = sys.argv[1] if len(sys.argv) > 1 else os.environ.get("SDK_FLOW_MODEL", "local/tiny")
failures = 0


def step(name):
    """Runs the decorated function now as one named step of the flow."""

    def run(fn):
        global failures
        try:
            detail = fn()
            print(f"PASS {name}" + (f": {detail}" if detail else ""), flush=True)
        except Skip as s:
            print(f"SKIP {name}: {s}", flush=True)
        except Exception as e:  # noqa: BLE001 - every failure is reported, then the flow goes on
            failures += 1
            print(f"FAIL {name}: {type(e).__name__}: {e}", flush=True)
            traceback.print_exc(file=sys.stderr)
        return fn

    return run


class Skip(Exception):
    pass


def datum(tokens, weights=None):
    """Next-token prediction datum: input tokens[:-1], targets tokens[1:]."""
    n = len(tokens) - 1
    return types.Datum(
        model_input=types.ModelInput.from_ints(tokens[:-1]),
        loss_fn_inputs={
            "target_tokens": tokens[1:],
            "weights": weights if weights is not None else [1.0] * n,
        },
    )


SEQS = [[10 + (i * 7 + j * 3) % 50 for j in range(12)] for i in range(4)]
BATCH = [datum(s) for s in SEQS]
state = {}

service = tinker.ServiceClient()


@step("get_server_capabilities")
def _():
    caps = service.get_server_capabilities()
    names = [m.model_name for m in caps.supported_models]
    assert MODEL in names, f"{MODEL} not in {names}"
    return ", ".join(n for n in names if n)


@step("create_lora_training_client")
def _():
    state["tc"] = service.create_lora_training_client(base_model=MODEL, rank=8, seed=0)


if "tc" not in state:
    print("FAILED: no training client, the flow cannot go on", flush=True)
    sys.exit(1)
tc = state["tc"]


@step("get_info")
def _():
    info = tc.get_info()
    assert info.model_data.model_name == MODEL, info
    return f"model_id={info.model_id}"


@step("forward_backward cross_entropy (protobuf)")
def _():
    out = tc.forward_backward(BATCH, "cross_entropy").result()
    assert "loss:sum" in out.metrics, out.metrics
    assert len(out.loss_fn_outputs) == len(BATCH)
    lp = out.loss_fn_outputs[0]["logprobs"].tolist()
    assert len(lp) == len(SEQS[0]) - 1 and all(math.isfinite(x) for x in lp)
    state["first_loss"] = out.metrics["loss:sum"]
    state["first_lp"] = [o["logprobs"].tolist() for o in out.loss_fn_outputs]
    return f"loss:sum={out.metrics['loss:sum']:.3f}"


@step("forward_backward importance_sampling")
def _():
    # Sampling logprobs = the model's own logprobs (weights unchanged since the first
    # forward_backward), so every ratio is 1 and loss:sum = -sum(advantages).
    data, adv_sum = [], 0.0
    for i, s in enumerate(SEQS[:2]):
        n = len(s) - 1
        adv = [0.5 if (i + j) % 2 else -0.25 for j in range(n)]
        adv_sum += sum(adv)
        data.append(
            types.Datum(
                model_input=types.ModelInput.from_ints(s[:-1]),
                loss_fn_inputs={
                    "target_tokens": s[1:],
                    "logprobs": state["first_lp"][i],
                    "advantages": adv,
                },
            )
        )
    out = tc.forward_backward(data, "importance_sampling").result()
    loss = out.metrics["loss:sum"]
    assert abs(loss + adv_sum) < 1e-3, (loss, -adv_sum)
    lp = out.loss_fn_outputs[0]["logprobs"].tolist()
    diff = max(abs(a - b) for a, b in zip(lp, state["first_lp"][0]))
    assert diff < 1e-5, f"logprobs moved without an optim_step: {diff}"
    return f"loss:sum={loss:.4f} (expected {-adv_sum:.4f})"


@step("optim_step (AdamParams lr 1e-3) changes the model")
def _():
    res = tc.optim_step(types.AdamParams(learning_rate=1e-3)).result()
    assert isinstance(res, types.OptimStepResponse), type(res)
    out = tc.forward(BATCH[:1], "cross_entropy").result()
    lp = out.loss_fn_outputs[0]["logprobs"].tolist()
    diff = max(abs(a - b) for a, b in zip(lp, state["first_lp"][0]))
    assert diff > 1e-6, "logprobs unchanged after optim_step"
    return f"metrics={res.metrics}, max |dlogprob|={diff:.2e}"


@step("loss falls over 20 steps (lr 1e-3)")
def _():
    adam = types.AdamParams(learning_rate=1e-3)
    losses = []
    for _ in range(20):
        fb = tc.forward_backward(BATCH, "cross_entropy")
        op = tc.optim_step(adam)
        losses.append(fb.result().metrics["loss:sum"])
        op.result()
    assert losses[-1] < 0.7 * losses[0], losses
    return f"{losses[0]:.2f} -> {losses[-1]:.2f}"


@step("forward (forward-only) matches the trained model")
def _():
    out = tc.forward(BATCH[:1], "cross_entropy").result()
    state["fwd_lp"] = out.loss_fn_outputs[0]["logprobs"].tolist()


@step("save_state")
def _():
    state["ckpt"] = tc.save_state("ckpt-1").result().path
    assert state["ckpt"].startswith("tinker://") and "/weights/ckpt-1" in state["ckpt"]
    return state["ckpt"]


@step("save_weights_for_sampler")
def _():
    state["samp"] = tc.save_weights_for_sampler("samp-1").result().path
    assert "/sampler_weights/samp-1" in state["samp"], state["samp"]
    return state["samp"]


@step("create_sampling_client(model_path) + sample with logprobs")
def _():
    sc = service.create_sampling_client(model_path=state["samp"])
    params = types.SamplingParams(max_tokens=8, temperature=1.0, seed=3, stop=[5])
    res = sc.sample(types.ModelInput.from_ints(SEQS[0][:6]), num_samples=2, sampling_params=params).result()
    assert len(res.sequences) == 2
    for s in res.sequences:
        assert len(s.tokens) == len(s.logprobs) and 1 <= len(s.tokens) <= 8
        assert s.stop_reason in ("stop", "length")
    state["sc"], state["sample"] = sc, res.sequences[0]
    return f"tokens={res.sequences[0].tokens}"


@step("compute_logprobs equals the sampler's logprobs")
def _():
    sc, seq = state["sc"], state["sample"]
    prompt = SEQS[0][:6]
    lps = sc.compute_logprobs(types.ModelInput.from_ints(prompt + seq.tokens)).result()
    assert lps[0] is None
    recomputed = lps[len(prompt):]
    diff = max(abs(a - b) for a, b in zip(recomputed, seq.logprobs))
    assert diff <= 1e-4, diff
    return f"max |diff|={diff:.2e}"


@step("sample with prompt logprobs and top-k prompt logprobs")
def _():
    res = state["sc"].sample(
        types.ModelInput.from_ints(SEQS[1][:5]),
        num_samples=1,
        sampling_params=types.SamplingParams(max_tokens=2, seed=1),
        include_prompt_logprobs=True,
        topk_prompt_logprobs=3,
    ).result()
    assert res.prompt_logprobs[0] is None and len(res.prompt_logprobs) == 5
    assert res.topk_prompt_logprobs[0] is None and len(res.topk_prompt_logprobs[1]) == 3


@step("save_weights_and_get_sampling_client + sample")
def _():
    sc = tc.save_weights_and_get_sampling_client()
    res = sc.sample(
        types.ModelInput.from_ints(SEQS[2][:4]), 1, types.SamplingParams(max_tokens=4, seed=0)
    ).result()
    assert len(res.sequences[0].tokens) >= 1


@step("create_training_client_from_state_with_optimizer gives identical logprobs")
def _():
    tc2 = service.create_training_client_from_state_with_optimizer(state["ckpt"])
    out = tc2.forward(BATCH[:1], "cross_entropy").result()
    lp = out.loss_fn_outputs[0]["logprobs"].tolist()
    diff = max(abs(a - b) for a, b in zip(lp, state["fwd_lp"]))
    assert diff <= 1e-6, diff
    tc2.forward_backward(BATCH, "cross_entropy").result()
    tc2.optim_step(types.AdamParams(learning_rate=1e-3)).result()
    return f"max |diff|={diff:.1e}"


rest = service.create_rest_client()


@step("RestClient list_training_runs")
def _():
    runs = rest.list_training_runs().result()
    ids = [r.training_run_id for r in runs.training_runs]
    assert tc.model_id in ids, ids


@step("RestClient list_checkpoints / set TTL / delete_checkpoint")
def _():
    ckpts = rest.list_checkpoints(tc.model_id).result().checkpoints
    paths = {c.tinker_path for c in ckpts}
    assert state["ckpt"] in paths and state["samp"] in paths, paths
    rest.set_checkpoint_ttl_from_tinker_path(state["samp"], 3600).result()
    ckpts = rest.list_checkpoints(tc.model_id).result().checkpoints
    assert any(c.tinker_path == state["samp"] and c.expires_at for c in ckpts)
    rest.delete_checkpoint_from_tinker_path(state["samp"]).result()
    ckpts = rest.list_checkpoints(tc.model_id).result().checkpoints
    assert state["samp"] not in {c.tinker_path for c in ckpts}


@step("RestClient list_user_checkpoints")
def _():
    ckpts = rest.list_user_checkpoints().result().checkpoints
    assert any(c.tinker_path == state["ckpt"] for c in ckpts)


@step("unknown base model is a clear error")
def _():
    try:
        service.create_lora_training_client(base_model="Qwen/Qwen3-8B", rank=8)
    except Exception as e:  # noqa: BLE001
        msg = str(e)
        assert "local/tiny" in msg and "TINKER_API_KEY" in msg, msg
        return msg[:120]
    raise AssertionError("creating an unserved model succeeded")


@step("forward_backward_custom")
def _():
    try:
        import torch  # noqa: F401
    except ImportError:
        raise Skip("torch is not importable in this Python")

    def loss_fn(data, logprobs_list):
        loss = sum(-lp.sum() for lp in logprobs_list)
        return loss, {"custom:sum": float(loss)}

    ref = tc.forward(BATCH[:2], "cross_entropy").result().metrics["loss:sum"]
    out = tc.forward_backward_custom(BATCH[:2], loss_fn).result()
    got = out.metrics["custom:sum"]
    assert abs(got - ref) <= 1e-3 * max(1.0, abs(ref)), (got, ref)
    return f"custom:sum={got:.4f}, cross_entropy loss:sum={ref:.4f}"


print(f"{'FAILED' if failures else 'OK'}: {failures} step(s) failed", flush=True)
sys.exit(1 if failures else 0)
