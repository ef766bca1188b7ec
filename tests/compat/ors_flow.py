"""Runs the reference ORS Python client (openrewardstandard/python-sdk) against this project's
ORS server (`deno task envs serve`). Each check prints PASS or FAIL; the exit code is the number
of failures. How to set it up: tests/compat/ORS.md.

Usage: ORS_SDK_SRC=/path/to/python-sdk/src python3 ors_flow.py http://127.0.0.1:8080
"""

import os
import re
import sys
import time
import types

# Import the client package without running ors/__init__.py, which imports the server side
# (FastAPI, sse-starlette, uvicorn): the client needs only aiohttp, tenacity and structlog.
SRC = os.environ["ORS_SDK_SRC"]
ors = types.ModuleType("ors")
ors.__path__ = [os.path.join(SRC, "ors")]
sys.modules["ors"] = ors

from ors.client import ORS, ToolCallError  # noqa: E402

BASE = sys.argv[1] if len(sys.argv) > 1 else "http://127.0.0.1:8080"
failures = 0


def check(name, fn):
    global failures
    t0 = time.perf_counter()
    try:
        detail = fn()
        print(f"PASS {name} ({time.perf_counter() - t0:.2f} s){': ' + detail if detail else ''}")
    except Exception as e:  # noqa: BLE001 - every failure is reported, the run goes on
        failures += 1
        print(f"FAIL {name}: {type(e).__name__}: {e}")


client = ORS(base_url=BASE)
words = client.environment("wordproblems-v0")
guess = client.environment("guessthenumber-v0-easy")
probe = client.environment("probe-compat")


def discovery():
    splits = words.list_splits()
    assert splits == ["train", "test"], splits
    n = words.num_tasks("test")
    assert n == 1000, n
    tasks = words.list_tasks("test")
    assert len(tasks) == 1000 and tasks[0].environment_name == "wordproblems-v0"
    one = words.get_task("test", 3)
    assert one.task_spec["index"] == 3, one
    tail = words.get_task_range("test", -2)
    assert [t.task_spec["index"] for t in tail] == [998, 999], tail
    return f"{n} test tasks, task 3 = {one.task_spec['question'][:40]}..."


def tools():
    specs = words.list_tools()
    assert [t.name for t in specs] == ["answer"], specs
    assert specs[0].input_schema["properties"]["answer"], specs[0]
    for fmt in ("openai", "anthropic", "google", "openrouter"):
        converted = words.list_tools(format=fmt)
        assert len(converted) == 1, (fmt, converted)
    return "ToolSpec(**tool) accepted; four provider formats converted"


def answer_session():
    tasks = words.list_tasks("test")
    with words.session(task=tasks[0]) as s:
        prompt = s.get_prompt()
        assert prompt[0].type == "text" and "answer tool" in prompt[0].text, prompt
        assert [t.name for t in s.list_tools()] == ["answer"]
        out = s.call_tool("answer", {"answer": "-1"})
        assert out.blocks[0].text == "Wrong!" and out.reward == 0.0 and out.finished, out
        assert out.metadata["kind"], out.metadata
    return "session(task=...): prompt, task tools, a wrong answer ends with reward 0"


def play_guess():
    with guess.session(split="train", index=1) as s:
        lo, hi, turns = 1, 10, 0
        while True:
            g = (lo + hi) // 2
            out = s.call_tool("guess", {"number": g})
            turns += 1
            text = out.blocks[0].text
            if out.finished:
                break
            m = re.search(r"The number is (higher|lower)", text)
            lo, hi = (g + 1, hi) if m.group(1) == "higher" else (lo, g - 1)
        assert out.reward == 1.0, (out.reward, text)
    return f"session(split, index): solved in {turns} tool calls, reward 1.0"


def tool_errors():
    with words.session(split="test", index=1) as s:
        for name, args, want in [
            ("nope", {}, "'nope' is not a valid tool"),
            ("answer", {"nonsense": 1}, "Tool input validation error"),
        ]:
            try:
                s.call_tool(name, args)
                raise AssertionError(f"{name} did not fail")
            except ToolCallError as e:
                assert want in str(e), str(e)
    return "unknown tool and invalid input raise ToolCallError with the server's words"


def chunked_output():
    text = " ".join(f"word{i}" for i in range(3000))  # about 26 KB: seven chunks
    with probe.session(split="train", index=0) as s:
        out = s.call_tool("echo", {"text": text})
        assert out.blocks[0].text == text, "the joined chunks differ"
    return f"{len(text)} characters through chunk events, whitespace at the cuts kept"


def tool_exception():
    with probe.session(split="train", index=0) as s:
        try:
            s.call_tool("boom", {})
            raise AssertionError("boom did not fail")
        except RuntimeError as e:
            assert "kaboom" in str(e), str(e)
    return "an exception inside a tool is an SSE error event (RuntimeError)"


def secrets():
    with probe.session(split="train", index=0, secrets={"openai_api_key": "sk-test"}) as s:
        out = s.call_tool("secrets", {})
        assert '"openai_api_key":"sk-test"' in out.blocks[0].text, out.blocks[0].text
    return "X-Secrets header reaches the environment"


def long_call():
    with probe.session(split="train", index=0) as s:
        out = s.call_tool("slow", {"ms": 2500})
        assert out.blocks[0].text == "done"
    return "a 2.5 s call streamed with keep-alive pings"


def unknown_environment():
    try:
        client.environment("nope").num_tasks("train")
        raise AssertionError("no error")
    except Exception as e:  # noqa: BLE001
        assert "404" in str(e) or "Not Found" in str(e), str(e)
    return "an unknown environment is a 404"


check("discovery: splits, num_tasks, tasks, task, task_range", discovery)
check("tools: list_tools and provider formats", tools)
check("session: prompt, task tools, call", answer_session)
check("session: a multi-turn game to the end", play_guess)
check("tool-level errors", tool_errors)
check("a result over 4096 characters", chunked_output)
check("an exception in a tool", tool_exception)
check("secrets", secrets)
check("a long tool call", long_call)
check("unknown environment", unknown_environment)
client.close()
print(f"{10 - failures} passed, {failures} failed")
sys.exit(failures)
