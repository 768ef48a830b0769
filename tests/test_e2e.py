"""End to end: the real OpenAI client and the real agent against a real llama-server.

The server runs Qwen2.5-Coder-0.5B-Instruct (see tests/llama.py and the `llama_server` fixture in
conftest.py), and the last test the default Qwen2.5-Coder-1.5B-Instruct on a second one;
`scripts/test` builds and fetches both once. These tests check the plumbing that a
scripted fake cannot: that our tool schemas pass llama-server's chat template and come back as
a valid reply, that the agent's command line talks to a real server and keeps stdout for the
answer alone, and that an append-only history is served from the prompt cache.

Left out on purpose: judging what the 0.5B model says (temperature 0 keeps it repeatable, not
right; the 1.5B test judges the file it leaves), and speed (benchmarks print figures; tests do not time).
"""

import json
import os
import subprocess
import sys
import urllib.request

import openai
import pytest

import llama
from llama import ROOT
from prompts import SYSTEM_PROMPT
from tools import TOOLS

TOOL_NAMES = {tool["function"]["name"] for tool in TOOLS}


@pytest.fixture
def client(llama_server):
    return openai.OpenAI(base_url=llama_server.url, api_key="local", max_retries=0, timeout=300)


def ask(client, server, messages, **request):
    """One chat request shaped like the agent's."""
    return client.chat.completions.create(model=server.model, messages=messages, temperature=0,
                                          **{"max_completion_tokens": 48, **request})


def rendered_prompt(server, messages, **request) -> str:
    """The exact text the model reads for this request (llama-server's /apply-template)."""
    request = urllib.request.Request(server.url.removesuffix("/v1") + "/apply-template",
                                     data=json.dumps({"messages": messages, **request}).encode(),
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=60) as response:
        return json.load(response)["prompt"]


def test_request_with_tool_schemas_round_trips(client, llama_server):
    messages = [{"role": "system", "content": SYSTEM_PROMPT},
                {"role": "user", "content": "What is in the file notes.txt?"}]
    response = ask(client, llama_server, messages, tools=TOOLS, tool_choice="auto", parallel_tool_calls=False)

    # The schemas reach the model verbatim: the chat template writes each one into the prompt.
    prompt = rendered_prompt(llama_server, messages, tools=TOOLS)
    assert SYSTEM_PROMPT in prompt
    for tool in TOOLS:
        assert json.dumps(tool) in prompt
    # Whatever the model chose, the reply is well formed: text, or calls to tools we offered with
    # JSON arguments, each with an id to answer it by.
    choice = response.choices[0]
    assert choice.message.role == "assistant"
    assert choice.finish_reason in ("stop", "tool_calls", "length")
    assert choice.message.content or choice.message.tool_calls
    for call in choice.message.tool_calls or []:
        assert call.id and call.function.name in TOOL_NAMES
        assert isinstance(json.loads(call.function.arguments), dict)
    assert response.usage.prompt_tokens > 0 and response.usage.completion_tokens > 0


def test_tool_call_and_result_in_history_are_accepted(client, llama_server):
    """Turn two of an agent run: the assistant's call and our answer to it, matched by id."""
    messages = [
        {"role": "system", "content": SYSTEM_PROMPT},
        {"role": "user", "content": "What is in the file notes.txt?"},
        # the shape the agent appends: the client's message, model_dump(exclude_none=True)
        {"role": "assistant", "content": "", "tool_calls": [
            {"id": "call_1", "type": "function",
             "function": {"name": "read_file", "arguments": json.dumps({"path": "notes.txt"})}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "buy milk [urgent]"},
    ]
    response = ask(client, llama_server, messages, tools=TOOLS, tool_choice="auto")

    assert response.choices[0].message.content or response.choices[0].message.tool_calls
    prompt = rendered_prompt(llama_server, messages, tools=TOOLS)
    assert '"name": "read_file"' in prompt.split("<|im_start|>assistant")[1]  # the call, as history
    assert "buy milk [urgent]" in prompt  # the tool result, as the model reads it


def test_append_only_history_reuses_the_prompt_cache(client, llama_server):
    """The second request repeats the first one's prompt verbatim, so the server skips it."""
    messages = [{"role": "system", "content": SYSTEM_PROMPT},
                {"role": "user", "content": "Write a Python function that reverses a string."}]
    first = ask(client, llama_server, messages, tools=TOOLS, tool_choice="auto")
    message = first.choices[0].message
    messages.append(message.model_dump(exclude_none=True))  # exactly as returned, like the agent
    for call in message.tool_calls or []:  # every call answered, so the history stays valid
        messages.append({"role": "tool", "tool_call_id": call.id, "content": "Error: not run in this test"})
    messages.append({"role": "user", "content": "Now name the function in one word."})
    second = ask(client, llama_server, messages, tools=TOOLS, tool_choice="auto")

    cached = second.usage.prompt_tokens_details.cached_tokens
    assert second.usage.prompt_tokens > first.usage.prompt_tokens
    assert cached >= 0.9 * first.usage.prompt_tokens, (cached, first.usage.prompt_tokens)


def test_agent_answers_through_a_real_server(llama_server, tmp_path):
    """The real command line, as a user runs it, in a folder with no .env."""
    task = "Reply with just the word OK."
    workspace = tmp_path / "ws"
    workspace.mkdir()
    # One turn: a 0.5B model can ramble for the agent's whole reply budget, and every documented
    # ending of a one-turn run is fine here: 0 (an answer) or 3 (it called a tool, or was cut off).
    result = subprocess.run(
        [sys.executable, str(ROOT / "agent.py"), "--base-url", llama_server.url, "--model", llama_server.model,
         "--workspace", str(workspace), "--max-turns", "1", "--plain", "--transcript", str(tmp_path / "run.jsonl"), task],
        cwd=tmp_path, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=600,
        env={**os.environ, "COLUMNS": "200"})  # rich wraps at 80 columns when not on a terminal

    assert result.returncode in (0, 3), result.stderr[-3000:]
    assert task in result.stderr  # the task, the replies and the usage lines go to stderr ...
    if result.returncode == 0:  # ... and stdout carries the final answer alone
        assert result.stdout.strip()
        assert task not in result.stdout and "turn 1/1" not in result.stdout
    else:
        assert result.stdout == ""
    events = [json.loads(line) for line in (tmp_path / "run.jsonl").read_text().splitlines()]
    start, end = events[0], events[-1]
    assert start["config"]["n_ctx"] == llama.CTX  # the start-up check read the real /props
    [response] = [e for e in events if e["event"] == "response"]
    assert response["body"]["model"] and response["body"]["usage"]["prompt_tokens"] > 0
    assert end["exit_code"] == result.returncode


@pytest.fixture(scope="module")
def default_model_server(tmp_path_factory):
    """The default local model, Qwen2.5-Coder-1.5B, on its own server for this module's last test."""
    server = llama.start(tmp_path_factory.mktemp("llama-server-1.5b"), model="1.5b")
    yield server
    llama.stop(server)


CHECK = "test \"$(python hello.py)\" = 'Hello, tooloop!'"  # the check a user would give: the exact output


def test_the_default_model_completes_a_file_writing_task(default_model_server, tmp_path):
    """Qwen2.5-Coder-1.5B through the real command line, as a user with a check runs it: write a
    script, run it, answer. The model writes its calls as text (facts.md), so this goes through
    recovery. The model is sampled, and one run of it often fails (it runs hello.py before writing
    it, or answers in prose: three of three runs failed on 2026-12-06 without a check), so the
    agent is given the check and its attempts, which is how tooloop gets a small model's job done:
    a broken loop, recovery, check or landing fails every attempt. The file is judged again here,
    in the user's workspace, after the run: only a passing attempt's files land there."""
    task = "Create hello.py that prints Hello, tooloop! and run it with python hello.py."
    workspace, log = tmp_path / "ws", tmp_path / "run.jsonl"
    workspace.mkdir()
    result = subprocess.run(
        [sys.executable, str(ROOT / "agent.py"), "--base-url", default_model_server.url,
         "--model", default_model_server.model, "--workspace", str(workspace), "--max-turns", "10",
         "--check", CHECK, "--attempts", "5", "--transcript", str(log), task],
        cwd=tmp_path, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=1800,
        env={**os.environ, "COLUMNS": "200", "TOOLOOP_RUNS": str(tmp_path / "runs")})
    run = subprocess.run([sys.executable, "hello.py"], cwd=workspace, capture_output=True, text=True, timeout=60)
    events = [json.loads(line) for line in log.read_text().splitlines()]
    assert result.returncode == 0, result.stderr[-3000:]
    assert run.stdout == "Hello, tooloop!\n"
    assert [e["passed"] for e in events if e["event"] == "check"][-1] is True
