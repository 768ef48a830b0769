"""Whatever a server, a model or a user sends, tooloop neither crashes, hangs nor lies: the run
goes on, or ends with one line and a documented exit code (issue 48).

Each case runs the real agent (cli.main) and the real openai client against
tests/fake_server.py, which sends malformed streams byte for byte (Raw). Grouped by who sends
it: the server (the stream), the model (its replies), the user (the command line). Servers other
than llama-server (strict about request fields, worded differently) close the file.

Left out: the generated streams of tests/test_stream_fuzz.py, and every quirk already covered
where its feature is tested (tests/test_streaming.py, tests/test_transcript.py).
"""

import itertools
import json
import os
import subprocess
import sys
import time

import pytest

import agent
import cli
import prompts
import tools
import transcript
from fake_server import Raw, Status, answer, call, chunk, interrupted, reply, sse

AGENT = [sys.executable, agent.__file__]
LLAMA_PROPS = {"default_generation_settings": {"n_ctx": 8192}, "chat_template_caps": {"supports_tool_calls": True}}


def stream(*deltas, finish="stop", **fields) -> Raw:
    """A streamed reply from these deltas, then the finish chunk (with `fields`) and [DONE]."""
    return Raw(sse(*(chunk(d) for d in deltas), chunk({}, finish, **fields), "[DONE]"))


def tool_messages(request: dict) -> list[dict]:
    return [m for m in request["messages"] if m["role"] == "tool"]


def one_line(err: str, code: int) -> str:
    """The run's one error line (what it ends with: no traceback), checked as such."""
    assert "Traceback" not in err
    [line] = [line for line in err.splitlines() if line.startswith("error:")]
    assert f"exit code {code}: {cli.EXIT_CODES[code]}" in err
    return line


def exit_code(argv: list[str]) -> int:
    try:
        return cli.main(argv)
    except SystemExit as exit:  # usage errors come from argparse
        return exit.code


@pytest.fixture
def text_file(workspace):
    (workspace / "a.txt").write_text("hello\n")


# --- from the server: the stream ------------------------------------------------------------------

def test_a_server_that_streams_forever_is_cut_off_at_the_reply_size(run_agent, fake):
    endless = Raw(itertools.chain(sse(chunk({"role": "assistant", "content": ""})),
                                  itertools.repeat(sse(chunk({"content": "and so on "}))[0])))
    code, _, err = run_agent(endless, flags=["--reply-chars", "5000"])
    assert code == 7
    deadline = time.monotonic() + 10  # the server finds the client gone at its next write
    while not fake.streams[0]["hung_up"] and time.monotonic() < deadline:
        time.sleep(0.01)
    assert fake.streams[0]["hung_up"]
    assert "went past 5000 characters (--reply-chars)" in one_line(err, 7)


def test_a_line_that_never_ends_is_cut_off_at_a_thousand_bytes_a_character(run_agent, fake):
    endless = Raw(itertools.chain([b'data: {"choices": [{"delta": {"content": "'], itertools.repeat(b"a" * 65_536)))
    code, _, err = run_agent(endless, flags=["--reply-chars", "1000"])  # no line ends, so no chunk ever comes
    assert code == 7
    deadline = time.monotonic() + 10
    while not fake.streams[0]["hung_up"] and time.monotonic() < deadline:
        time.sleep(0.01)
    assert fake.streams[0]["hung_up"] and fake.streams[0]["chunks"] < 100  # about 1 MB was read, then it hung up
    assert "went past 1,000,000 bytes (1000 per character of --reply-chars)" in one_line(err, 7)


def test_a_server_that_streams_forever_slowly_is_cut_off_at_the_reply_time(run_agent, fake):
    slow = Raw(itertools.repeat(sse(chunk({"content": "."}))[0]), delay=0.05)
    started = time.monotonic()
    code, _, err = run_agent(slow, flags=["--reply-seconds", "1"])
    assert code == 7 and time.monotonic() - started < 10
    assert "took longer than one reply may (--reply-seconds)" in one_line(err, 7)


@pytest.mark.parametrize("bad", [b"data: {not json\n\n", b"data: \xff\xfe\xfd\n\n", b"data: [1, 2]\n\n",
                                 b'data: "text"\n\n', b"data: " + b"[" * 200_000 + b"\n\n"],
                         ids=["no JSON", "no UTF-8", "a list", "a string", "nested 200,000 deep"])
def test_a_stream_that_is_no_json_is_one_line_and_exit_7(run_agent, fake, bad):
    code, _, err = run_agent(Raw(sse(chunk({"role": "assistant", "content": "Hel"})) + [bad]))
    assert code == 7
    line = one_line(err, 7)
    assert line.startswith(f"error: the reply from the model endpoint at {fake.url}")


@pytest.mark.parametrize("body", [[b"data: [DONE]\n\n"], [], [json.dumps(
    {"id": "x", "object": "chat.completion", "created": 0, "model": "m",
     "choices": [{"index": 0, "message": {"role": "assistant", "content": "Hi"}, "finish_reason": "stop"}]}).encode()]],
                         ids=["only [DONE]", "nothing", "a whole reply, not streamed"])
def test_a_stream_without_a_single_chunk_is_no_empty_answer(run_agent, body):
    code, _, err = run_agent(Raw(body))
    assert code == 7 and "ended before its first chunk" in one_line(err, 7)


def test_an_unknown_finish_reason_is_read_as_stop(run_agent):
    code, out, _ = run_agent(stream({"content": "Paris."}, finish="eos"))
    assert (code, out) == (0, "Paris.\n")


def test_null_choices_and_stray_fields_are_let_go(run_agent):
    bad = Raw(sse(chunk({"content": "Par"}), chunk(choices=None), chunk({"content": 5}), chunk("delta?"),
                  chunk({"content": "is."}), chunk({}, "stop"),
                  chunk(choices=[], usage={"prompt_tokens": "many", "completion_tokens": 3}),
                  chunk(choices=[], timings=[1, 2]), "[DONE]"))
    code, out, err = run_agent(bad)
    assert (code, out) == (0, "Paris.\n") and "Traceback" not in err
    assert "context ?" in err  # the usage that was no numbers is not shown


def test_a_cached_token_count_that_is_no_number_is_dropped(run_agent):
    usage = {"prompt_tokens": 10, "completion_tokens": 2, "prompt_tokens_details": {"cached_tokens": "all"}}
    code, out, err = run_agent(Raw(sse(chunk({"content": "ok"}), chunk({}, "stop"), chunk(choices=[], usage=usage),
                                       chunk(choices=[], timings={"predicted_per_second": "fast"}), "[DONE]")))
    assert (code, out) == (0, "ok\n") and "context 10/?" in err and "cached" not in err


def test_arguments_sent_as_a_json_object_are_read_as_its_text(run_agent, fake, text_file):
    call_delta = {"tool_calls": [{"index": 0, "id": "c1", "type": "function",
                                  "function": {"name": "read_file", "arguments": {"path": "a.txt"}}}]}
    code, _, _ = run_agent(stream(call_delta, finish="tool_calls"), answer("read"))
    assert code == 0
    assistant = fake.requests[1]["messages"][2]
    assert json.loads(assistant["tool_calls"][0]["function"]["arguments"]) == {"path": "a.txt"}
    assert tool_messages(fake.requests[1])[0]["content"] == "hello\n"


def test_a_call_whose_first_index_is_1_runs(run_agent, fake, text_file):
    pieces = [{"tool_calls": [{"index": 1, "id": "c1", "type": "function", "function": {"name": "read_file"}}]},
              {"tool_calls": [{"index": 1, "function": {"arguments": '{"path": '}}]},
              {"tool_calls": [{"index": 1, "function": {"arguments": '"a.txt"}'}}]}]
    code, _, err = run_agent(stream(*pieces, finish="tool_calls"), answer("read"))
    assert code == 0 and "diverged" not in err
    [result] = tool_messages(fake.requests[1])
    assert result == {"role": "tool", "tool_call_id": "c1", "content": "hello\n"}


def test_two_calls_both_with_index_0_are_two_calls(run_agent, fake, text_file):
    pieces = [{"tool_calls": [{"index": 0, "id": f"c{n}", "type": "function",
                               "function": {"name": "read_file", "arguments": '{"path": "a.txt"}'}}]} for n in (1, 2)]
    code, _, _ = run_agent(stream(*pieces, finish="tool_calls"), answer("read twice"), flags=["--plain"])
    assert code == 0
    calls = fake.requests[1]["messages"][2]["tool_calls"]
    assert [(c["id"], c["function"]["name"]) for c in calls] == [("c1", "read_file"), ("c2", "read_file")]
    assert [m["tool_call_id"] for m in tool_messages(fake.requests[1])] == ["c1", "c2"]


def test_a_server_that_goes_silent_mid_reply_is_reported_as_that(run_agent):
    silent = Raw(sse(chunk({"content": "Hel"}), chunk({"content": "lo"})), delay=3)
    code, _, err = run_agent(silent, flags=["--reply-seconds", "1"])
    line = one_line(err, 1)
    assert code == 1 and "Is the server running" not in line
    assert "sent nothing for 1 s in the middle of its reply" in line


# --- from the model -------------------------------------------------------------------------------

def test_arguments_nested_200000_deep_are_an_error_for_the_model(run_agent, fake):
    fake.piece = 50_000
    deep = '{"path": ' + "[" * 200_000 + "]" * 200_000 + "}"
    code, _, err = run_agent(reply(call("read_file", deep)), answer("ok"), flags=["--reply-chars", "1000000"])
    assert code == 0 and "Traceback" not in err
    assert tool_messages(fake.requests[1])[0]["content"] == "Error: the arguments are nested too deeply to read"


def test_a_lone_surrogate_in_a_reply_is_marked_and_the_run_goes_on(run_agent, fake, workspace, text_file):
    code, out, _ = run_agent(reply(call("read_file", path="a.txt"), content="half a pair: \ud800 there"),
                             answer("one more: \udfff"))
    assert code == 0 and out == "one more: \ufffd\n"
    assert fake.requests[1]["messages"][2]["content"] == "half a pair: \ufffd there"  # sent back as UTF-8 can
    recorded = transcript.read(workspace.parent / "transcript.jsonl")
    assert recorded[-1]["answer"] == "one more: \ufffd"


def test_a_reply_with_line_separators_keeps_one_event_a_line(run_agent, workspace):
    code, _, _ = run_agent(answer("one\u2028two\u2029three\x85four"))
    log = workspace.parent / "transcript.jsonl"
    assert code == 0 and [json.loads(line)["event"] for line in log.read_text().splitlines()][-1] == "end"
    assert transcript.read(log)[-1]["answer"] == "one\u2028two\u2029three\x85four"


def test_a_task_that_is_no_text_is_refused_before_any_model_call(fake, workspace, capsys):
    code = exit_code(["--base-url", fake.url, "--workspace", str(workspace), "bytes: \udcff"])  # how Python reads \xff
    assert code == 2 and fake.requests == []
    assert "the task holds bytes that are not text in this terminal's encoding" in capsys.readouterr().err
    code = exit_code(["--base-url", fake.url, "--workspace", str(workspace), "--check", "test \udcff", "go"])
    assert code == 2 and "--check holds bytes" in capsys.readouterr().err


def test_the_transcript_writer_keeps_a_lone_surrogate_as_its_escape(tmp_path):
    log = transcript.writer(tmp_path / "t.jsonl", [])
    log("start", task="a \udcff b", config={})
    log.close()
    assert transcript.read(tmp_path / "t.jsonl")[0]["task"] == "a \udcff b"


def test_one_write_is_bounded_and_the_model_is_told(run_agent, fake, workspace):
    code, _, _ = run_agent(reply(call("write_file", path="big.txt", content="x" * 5000)), answer("ok"),
                           flags=["--max-write", "4096"])
    assert code == 0 and not (workspace / "big.txt").exists()
    assert tool_messages(fake.requests[1])[0]["content"] == (
        "Error: the content is 5000 bytes; one write_file may write at most 4096: write a smaller file, "
        "or make large data with a command")


def test_a_write_of_100_mib_is_refused_by_default(workspace):
    settings = tools.Settings(workspace=workspace)
    result = tools.dispatch("write_file", json.dumps({"path": "big.txt", "content": "x" * (100 << 20)}), settings)
    assert not result.ok and f"at most {tools.MAX_WRITE}" in result.text
    assert list(workspace.iterdir()) == []


def test_a_reply_with_1000_calls_runs_the_first_few_and_answers_each(run_agent, fake, text_file):
    calls = [call("read_file", path="a.txt") for _ in range(1000)]
    code, _, _ = run_agent(reply(*calls), answer("done"))
    assert code == 0
    results = tool_messages(fake.requests[1])
    assert [m["tool_call_id"] for m in results] == [c["id"] for c in calls]  # each call, one result
    assert [m["content"] for m in results[:agent.MAX_CALLS]] == ["hello\n"] * agent.MAX_CALLS
    assert {m["content"] for m in results[agent.MAX_CALLS:]} == {
        prompts.TOO_MANY_CALLS.format(most=agent.MAX_CALLS)}


@pytest.mark.parametrize("ending", [
    '{"name": "run_shell", "arguments": {"command": "touch ran.txt"}}',  # its fence never closed
    '{"name": "run_shell", "arguments": {"command": "touch ran.txt"}}\n```',  # closed in the last chunk
])
def test_a_call_recovered_from_a_cut_off_reply_does_not_run(run_agent, fake, workspace, ending):
    text = "Creating it.\n```json\n" + ending
    code, _, _ = run_agent(Raw(sse(chunk({"content": text}, "length"), "[DONE]")), answer("ok"))
    assert code == 0 and not (workspace / "ran.txt").exists()
    assert [m["content"] for m in tool_messages(fake.requests[1])] == [prompts.CUT_OFF]


# --- from the user: the command line --------------------------------------------------------------

@pytest.mark.parametrize("content", [b'{"a": 1}\n', b"[1, 2]\n", b'{"event": "start"}\n', b"", b"\xff\n"],
                         ids=["an object", "a list", "a start without its task", "empty", "no text"])
def test_render_and_replay_of_what_is_no_transcript_are_one_line_and_exit_2(fake, workspace, capsys, content):
    path = workspace.parent / "not.jsonl"
    path.write_bytes(content)
    for flag in ("--render", "--replay"):
        assert exit_code(["--base-url", fake.url, "--workspace", str(workspace), flag, str(path)]) == 2
        err = capsys.readouterr().err
        assert "Traceback" not in err and f"{flag}: {path} is not a tooloop transcript" in err
    assert fake.requests == [] and fake.gets == []


def record(run_agent, workspace, *script, flags=()) -> str:
    run_agent(*script, flags=flags)
    return str(workspace.parent / "transcript.jsonl")


def replay(workspace, log: str, *flags) -> tuple[int, str]:
    return exit_code(["--replay", log, "--workspace", str(workspace), "--transcript", "off", *flags])


def test_a_replay_takes_the_turn_cap_of_its_command_line(run_agent, workspace, capsys):
    """A replay takes the recording's replies, never its settings (tests/test_cli.py has the rest):
    the same flags repeat the run; others are named, and may make it diverge."""
    log = record(run_agent, workspace, *[reply(call("run_shell", command=f"echo {i}")) for i in range(3)],
                 flags=["--max-turns", "2"])
    assert replay(workspace, log, "--max-turns", "2") == 3
    assert "replay: 0 divergence(s)" in capsys.readouterr().err
    assert replay(workspace, log) == 1  # the default cap runs past the recorded replies
    err = " ".join(capsys.readouterr().err.split())
    assert "replay: the run was recorded with --max-turns 2; this replay runs with --max-turns 20" in err
    assert "the run diverged from the recording" in err


def test_a_replay_never_turns_the_sandbox_off_and_says_so(run_agent, workspace, capsys):
    log = record(run_agent, workspace, reply(call("run_shell", command="echo hi")), answer("ok"),
                 flags=["--unsafe-no-sandbox"])
    capsys.readouterr()
    warning = ("replay: the run was recorded with --unsafe-no-sandbox; this replay runs with no --unsafe-no-sandbox, "
               "and may diverge")
    assert replay(workspace, log) == 0 and warning in " ".join(capsys.readouterr().err.split())
    assert replay(workspace, log, "--unsafe-no-sandbox") == 0 and "recorded with --unsafe" not in capsys.readouterr().err


def test_a_replay_with_the_recorded_flags_repeats_plain(run_agent, workspace, capsys):
    text = 'Run:\n```json\n{"name": "run_shell", "arguments": {"command": "touch ran.txt"}}\n```'
    log = record(run_agent, workspace, answer(text), flags=["--plain"])
    assert replay(workspace, log, "--plain") == 0 and not (workspace / "ran.txt").exists()
    assert "replay: 0 divergence(s)" in capsys.readouterr().err


def test_a_replay_with_the_recorded_flags_repeats_approval_and_timeout(run_agent, workspace, capsys):
    log = record(run_agent, workspace, reply(call("write_file", path="w.txt", content="w")), answer("ok"),
                 flags=["--approval", "read-only"])
    assert replay(workspace, log, "--approval", "read-only") == 0 and not (workspace / "w.txt").exists()
    assert "replay: 0 divergence(s)" in capsys.readouterr().err
    os.remove(log)  # (a transcript file holds one run: the next would be appended)
    log = record(run_agent, workspace, reply(call("run_shell", command="sleep 3; echo late")), answer("ok"),
                 flags=["--timeout", "1"])
    assert replay(workspace, log, "--timeout", "1") == 0
    assert "replay: 0 divergence(s)" in capsys.readouterr().err


def test_a_replay_of_a_run_with_no_reply_is_refused(fake, run_agent, workspace, capsys):
    log = record(run_agent, workspace, Status(404, {"error": {"message": "no such model"}}))
    capsys.readouterr()
    assert replay(workspace, log) == 2
    assert "holds no model reply to replay" in capsys.readouterr().err


def test_the_whole_machine_as_workspace_is_refused_before_any_model_call(fake, capsys):
    assert exit_code(["--base-url", fake.url, "--workspace", "/", "--check", "true", "go"]) == 2
    assert "the workspace cannot be /" in capsys.readouterr().err
    assert fake.requests == [] and fake.gets == []


def test_quiet_with_approval_ask_is_refused(fake, workspace, capsys, monkeypatch):
    assert exit_code(["--base-url", fake.url, "--workspace", str(workspace), "--quiet", "--approval", "ask", "go"]) == 2
    monkeypatch.setenv("TOOLOOP_APPROVAL", "ask")
    assert exit_code(["--base-url", fake.url, "--workspace", str(workspace), "--quiet", "go"]) == 2
    assert "--quiet hides the questions of --approval ask" in capsys.readouterr().err
    assert fake.requests == []


def test_two_runs_in_the_same_second_write_two_transcripts(fake, workspace, capsys):
    fake.script = [answer("one"), answer("two")]
    started = time.time()
    for _ in range(2):
        assert cli.main(["--base-url", fake.url, "--workspace", str(workspace), "--no-probe", "go"]) == 0
    logs = sorted((workspace / ".tooloop").glob("*.jsonl"))
    assert len(logs) == 2 and time.time() - started < 1.5
    assert [transcript.read(log)[-1]["answer"] for log in logs] in (["one", "two"], ["two", "one"])
    with pytest.raises(FileExistsError):  # and a name that is taken is never shared
        transcript.writer(logs[0], [], exclusive=True)


def test_ctrl_c_during_the_sandbox_probe_is_exit_130(fake, workspace, tmp_path):
    folder, started = tmp_path / "bin", tmp_path / "probing"
    folder.mkdir()
    (folder / "bwrap").write_text(f"#!/bin/sh\ntouch {started}\nsleep 30\n")  # a probe that hangs
    (folder / "bwrap").chmod(0o755)
    env = {"PATH": f"{folder}:{os.path.dirname(sys.executable)}:/usr/bin:/bin", "OPENAI_API_KEY": "local"}
    proc = subprocess.Popen([*AGENT, "--base-url", fake.url, "--workspace", str(workspace), "go"], env=env,
                            cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    code, _, err = interrupted(proc, started.exists)
    assert code == 130 and "interrupted" in err and "Traceback" not in err
    assert fake.requests == []


def test_ctrl_c_during_the_file_reads_is_exit_130(fake, workspace, tmp_path):
    (workspace / "a.txt").write_text("hello\n")
    files = ["--file", "a.txt"] * 4_000  # seconds of reads: the Ctrl-C lands among them
    runs = tmp_path / "runs"
    proc = subprocess.Popen([*AGENT, "--base-url", fake.url, "--workspace", str(workspace), "--approval", "read-only",
                             "--no-probe", "--transcript", "off", *files, "go"], env={**os.environ, "TOOLOOP_RUNS": str(runs)},
                            cwd=workspace, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    # the copy the run works on is made just before the reads (an open file is too brief to catch)
    code, _, err = interrupted(proc, lambda: any(runs.glob("*/attempt-1/a.txt")))
    assert code == 130 and "interrupted" in err and "Traceback" not in err
    assert fake.requests == []


def test_after_a_failed_check_a_file_read_before_counts_as_unread(run_agent, fake, workspace):
    (workspace / "n.txt").write_text("1\n")
    code, _, _ = run_agent(reply(call("read_file", path="n.txt")), answer("done"),
                           reply(call("write_file", path="n.txt", content="2\n")), answer("done"),
                           answer("done"), answer("done"),  # (attempt 1 changed no file: attempt 2 is begun)
                           flags=["--check", "false", "--attempts", "1", "--check-rounds", "2"])
    assert code == 6 and (workspace / "n.txt").read_text() == "1\n"
    [result] = tool_messages(fake.requests[3])
    assert "'n.txt' exists and you have not read it yet" in result["content"]


def test_after_a_failed_check_a_named_file_still_counts_as_read(run_agent, fake, workspace):
    (workspace / "n.txt").write_text("1\n")
    code, _, _ = run_agent(answer("done"), reply(call("write_file", path="n.txt", content="2\n")), answer("done"),
                           flags=["--check", "grep -x 2 n.txt", "--file", "n.txt"])
    assert code == 0 and (workspace / "n.txt").read_text() == "2\n"


# --- servers other than llama-server (issue 47) ---------------------------------------------------

def test_a_strict_server_gets_no_llama_server_fields_and_no_reasoning_back(run_agent, fake, text_file):
    fake.strict = True
    code, out, err = run_agent(reply(call("read_file", path="a.txt"), reasoning_content="Look at a.txt first."),
                               answer("It says hello."))
    assert (code, out) == (0, "It says hello.\n"), err
    assert "timings_per_token" not in fake.requests[0]
    assert "reasoning_content" not in json.dumps(fake.requests[1]["messages"])


def test_llama_server_gets_its_fields_and_the_reasoning_back(run_agent, fake, text_file):
    fake.extra_routes["/props"] = (200, LLAMA_PROPS)
    code, _, _ = run_agent(reply(call("read_file", path="a.txt"), reasoning_content="Look at a.txt first."),
                           answer("It says hello."))
    assert code == 0 and fake.requests[0]["timings_per_token"] is True
    assert fake.requests[1]["messages"][2]["reasoning_content"] == "Look at a.txt first."


@pytest.mark.parametrize("overflow", [
    Status(400, {"error": {"message": "This model's maximum context length is 2048 tokens. However, your messages "
                                      "resulted in 3000 tokens. Please reduce the length of the messages.",
                           "type": "invalid_request_error", "param": "messages", "code": "context_length_exceeded"}}),
    Status(400, {"object": "error", "message": "This model's maximum context length is 2048 tokens. However, you "
                                               "requested 3000 tokens (2000 in the messages, 1000 in the completion).",
                 "type": "BadRequestError", "param": None, "code": 400}),
], ids=["OpenAI", "vLLM"])
def test_other_servers_overflow_errors_compact_the_history(run_agent, fake, workspace, overflow):
    (workspace / "big.txt").write_text("".join(f"line {i:04d} of the middle\n" for i in range(220)))
    code, out, err = run_agent(reply(call("read_file", path="big.txt")), overflow, answer("read it"))
    assert (code, out) == (0, "read it\n")
    assert "context full (3000 of 2048 tokens)" in err
    assert len(json.dumps(fake.requests[2]["messages"])) < len(json.dumps(fake.requests[1]["messages"]))


def test_an_overflow_whose_numbers_are_no_numbers_still_compacts(run_agent, fake, workspace):
    (workspace / "big.txt").write_text("".join(f"line {i:04d} of the middle\n" for i in range(220)))
    overflow = Status(400, {"error": {"code": 400, "type": "exceed_context_size_error", "message": "too long",
                                      "n_prompt_tokens": "many", "n_ctx": 0}})
    code, out, err = run_agent(reply(call("read_file", path="big.txt")), overflow, answer("read it"))
    assert (code, out) == (0, "read it\n") and "context full (? of ? tokens)" in err
