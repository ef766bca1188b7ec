"""The official Tinker SDK's protobuf codec on the client benchmark's data, for `deno task bench client`.

Builds the same RL datums as bench/client.ts (`rlDatums`: tokens, int64 target_tokens, float32
logprobs and advantages, one formula on both sides) with the SDK's types, and times what the SDK
does per forward_backward call (tinker/resources/training.py): the request dataclasses,
`forward_backward_request_to_proto`, `SerializeToString`. It also decodes our server's
forward_backward result body as the SDK's futures do (`deserialize_forward_backward_output`), and
checks both of our bodies: our request must parse into the message the SDK builds itself.

Run with the SDK on the path (tests/compat/README.md):
    PYTHONPATH=/work/sdk/tinker-0.25.0/src:/work/sdk/pydeps:/work/sdk/pytorch \\
      python3 bench/sdk_codec.py '{"datums":1000,"tokens":2000,"reps":5,"request":"...","output":"..."}'
Prints one JSON object: wall and CPU milliseconds of every call, sizes, and the checks.
"""

import json
import sys
import time

import numpy as np
import tinker
from google.protobuf.internal import api_implementation
from tinker import types
from tinker.proto import tinker_public_pb2 as public_pb
from tinker.proto.request_conv import forward_backward_request_to_proto
from tinker.proto.response_conv import deserialize_forward_backward_output

cfg = {"datums": 1000, "tokens": 2000, "reps": 5, "request": None, "output": None}
if len(sys.argv) > 1:
    cfg.update(json.loads(sys.argv[1]))


def rl_datum_lists(i, n):
    """Plain lists of one datum, as a rollout holds them (same formula as bench/client.ts)."""
    toks = [(i * 7 + t * 13) % 151_000 for t in range(n + 1)]
    logprobs = [-((i + t) % 97 + 1) / 10 for t in range(n)]
    advantages = [((i % 5) - 2) / 2] * n
    return toks, logprobs, advantages


def build(lists):
    """Datums with the SDK's types (numpy arrays inside TensorData, as from_torch gives)."""
    return [
        types.Datum(
            model_input=types.ModelInput.from_ints(toks[:-1]),
            loss_fn_inputs={
                "target_tokens": types.TensorData.from_numpy(np.asarray(toks[1:], dtype=np.int64)),
                "logprobs": types.TensorData.from_numpy(np.asarray(lps, dtype=np.float32)),
                "advantages": types.TensorData.from_numpy(np.asarray(advs, dtype=np.float32)),
            },
        )
        for toks, lps, advs in lists
    ]


def encode(datums):
    """What the SDK does per forward_backward call, from datums to the request body."""
    request = types.ForwardBackwardRequest(
        forward_backward_input=types.ForwardBackwardInput(
            data=datums, loss_fn="importance_sampling", loss_fn_config=None
        ),
        model_id="m",
        seq_id=1,
    )
    msg = forward_backward_request_to_proto(request)
    msg.forward_only = False
    return msg.SerializeToString()


def timed(f, reps):
    """Wall and CPU milliseconds of each call, and the last result."""
    wall, cpu, out = [], [], None
    for _ in range(reps):
        c0, t0 = time.process_time(), time.perf_counter()
        out = f()
        wall.append((time.perf_counter() - t0) * 1000)
        cpu.append((time.process_time() - c0) * 1000)
    return {"wall": wall, "cpu": cpu}, out


lists = [rl_datum_lists(i, cfg["tokens"]) for i in range(cfg["datums"])]
build_samples, datums = timed(lambda: build(lists), cfg["reps"])
encode_samples, body = timed(lambda: encode(datums), cfg["reps"])
result = {
    "sdk_version": tinker.__version__,
    "protobuf": f"{api_implementation.Type()} backend",
    "bytes": len(body),
    "samples": {"build": build_samples, "encode": encode_samples},
}

if cfg["request"]:
    with open(cfg["request"], "rb") as f:
        ours = public_pb.ForwardBackwardRequest.FromString(f.read())
    result["our_request_equals_sdk_message"] = ours == public_pb.ForwardBackwardRequest.FromString(body)

if cfg["output"]:
    with open(cfg["output"], "rb") as f:
        output_body = f.read()
    result["samples"]["decode"], out = timed(
        lambda: deserialize_forward_backward_output(output_body), cfg["reps"]
    )
    result["output_bytes"] = len(output_body)
    result["output_logprobs_sum"] = float(
        sum(float(o["logprobs"].to_numpy().astype(np.float64).sum()) for o in out.loss_fn_outputs)
    )

print(json.dumps(result))
