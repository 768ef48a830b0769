"""Transcripts, replay, render and --show-request: what the model saw, kept and shown."""

import json
import signal
import subprocess
import sys
import time

import agent
import cli
import transcript
from fake_server import Status, answer, call, reply


AGENT = [sys.executable, agent.__file__]
SECRET = "sk-test-transcript-0123456789"
SCRIPT = [reply(call("write_file", path="f.py", content="print('hi')\n")),
          reply(call("run_shell", command="python3 f.py")), answer("It prints hi.")]


def events(path):
    lines = path.read_text().splitlines()
    return [json.loads(line) for line in lines]  # every line is valid JSON


def test_a_normal_run_is_recorded_event_by_event_without_the_key(run_agent, fake, workspace, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    (workspace / "key.txt").write_text(SECRET)
    code, _, _ = run_agent(reply(call("read_file", path="key.txt")), *SCRIPT)
    log = workspace.parent / "transcript.jsonl"
    recorded = events(log)
    assert [e["event"] for e in recorded] == (["start"] + ["request", "response", "tool"] * 3
                                             + ["request", "response", "changes", "end"])
    assert recorded[0]["task"] == "do the task" and recorded[0]["config"]["max_turns"] == 20
    assert recorded[1]["body"]["tools"] == agent.TOOLS
    assert recorded[-1]["exit_code"] == 0 and recorded[-1]["answer"] == "It prints hi."
    assert recorded[-1]["totals"]["turns"] == 4 and recorded[-1]["totals"]["prompt_tokens"] > 0
    assert SECRET not in log.read_text() and SECRET not in json.dumps(fake.requests)
    assert recorded[3]["result"] == "[redacted]" and fake.requests[1]["messages"][-1]["content"] == "[redacted]"
    # what the run's copy of the workspace changed, and what of it landed in the workspace
    assert recorded[-2]["landed"] == [{"path": "f.py", "kind": "created", "added": 1, "removed": 0}]
    assert recorded[-2]["refused"] == [] and (workspace / "f.py").read_text() == "print('hi')\n"


def test_turn_cap_and_server_failure_are_recorded_with_their_exit_codes(run_agent, workspace):
    log = workspace.parent / "transcript.jsonl"
    run_agent(reply(call("read_file", path="x")), reply(call("read_file", path="y")), flags=["--max-turns", "2"])
    assert events(log)[-1]["event"] == "end" and events(log)[-1]["exit_code"] == 3
    log.unlink()
    run_agent(Status(404, {"error": {"message": "no such model"}}))
    assert [e["event"] for e in events(log)] == ["start", "request", "changes", "end"]
    assert events(log)[-2]["landed"] == [] and events(log)[-1]["exit_code"] == 1


def test_default_transcript_folder_keeps_itself_out_of_git(fake, tmp_path, capsys):
    fake.script = [answer("ok")]
    assert cli.main(["--base-url", fake.url, "--workspace", str(tmp_path), "--plain", "hi"]) == 0
    folder = tmp_path / ".tooloop"
    [log] = folder.glob("*.jsonl")
    assert (folder / ".gitignore").read_text() == "*\n"
    assert events(log)[-1]["exit_code"] == 0


def test_ctrl_c_mid_run_leaves_a_complete_transcript(fake, tmp_path):
    fake.script = [reply(call("write_file", path="a.txt", content="a")), reply(call("run_shell", command="sleep 311"))]
    log = tmp_path / "run.jsonl"
    ws = tmp_path / "ws"
    ws.mkdir()
    proc = subprocess.Popen([*AGENT, "--base-url", fake.url, "--workspace", str(ws), "--transcript", str(log), "go"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=tmp_path)
    deadline = time.time() + 30
    while not subprocess.run(["pgrep", "-f", "sleep 311"], capture_output=True).stdout and time.time() < deadline:
        time.sleep(0.1)
    proc.send_signal(signal.SIGINT)
    proc.communicate(timeout=30)
    assert proc.returncode == 130
    recorded = events(log)
    assert [e["event"] for e in recorded] == ["start", "request", "response", "tool", "request", "response",
                                              "changes", "end"]
    assert recorded[3]["result"] == "wrote 1 bytes (1 lines) to a.txt"
    assert recorded[-2]["landed"] == [] and "interrupted" in recorded[-2]["where"]  # an interrupted run lands nothing
    assert not (ws / "a.txt").exists()
    assert recorded[-1]["exit_code"] == 130


def test_replay_reproduces_the_run_with_no_server(run_agent, workspace, tmp_path):
    run_agent(*SCRIPT)
    log = workspace.parent / "transcript.jsonl"
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    proc = subprocess.run([*AGENT, "--replay", str(log), "--base-url", "http://127.0.0.1:9/v1", "--workspace",
                           str(fresh), "--transcript", str(tmp_path / "replayed.jsonl")],
                          capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "It prints hi.\n"
    assert "replay: 0 divergence(s) from the recording" in proc.stderr
    assert (fresh / "f.py").read_text() == "print('hi')\n"  # the tools ran for real
    tools_then = [(e["name"], e["arguments"], e["result"]) for e in events(log) if e["event"] == "tool"]
    tools_now = [(e["name"], e["arguments"], e["result"]) for e in events(tmp_path / "replayed.jsonl") if e["event"] == "tool"]
    assert tools_now == tools_then and len(tools_now) == 2


def test_replay_divergence_is_reported(fake, workspace, capsys):
    (workspace / "data.txt").write_text("first")
    log = workspace.parent / "t.jsonl"
    fake.script = [reply(call("read_file", path="data.txt")), answer("it says first")]
    assert cli.main(["--base-url", fake.url, "--workspace", str(workspace), "--transcript", str(log), "go"]) == 0
    (workspace / "data.txt").write_text("second")
    capsys.readouterr()
    assert cli.main(["--replay", str(log), "--workspace", str(workspace), "--transcript", "off"]) == 0
    err = capsys.readouterr().err
    assert "replay: 1 divergence(s) from the recording" in err
    assert "recorded: 'first'" in err and "now:      'second'" in err


def test_show_request_prints_schemas_and_every_message(run_agent, fake):
    code, _, err = run_agent(reply(call("run_shell", command="echo 12345")), answer("ok"), flags=["--show-request"])
    assert code == 0
    # the screen holds each request body exactly as sent (and each raw response), as JSON
    shown, decoder, at = [], json.JSONDecoder(), 0
    while (at := err.find("\n{", at)) != -1:
        value, end = decoder.raw_decode(err, at + 1)
        shown.append(value)
        at = end
    requests = [v for v in shown if "messages" in v]
    assert requests == fake.requests  # every message and the tool schemas, byte for byte
    assert requests[-1]["tools"] == agent.TOOLS
    assert [v["choices"][0]["finish_reason"] for v in shown if "choices" in v] == ["tool_calls", "stop"]


def test_render_shows_a_recorded_run_like_the_live_view(run_agent, workspace, capsys):
    run_agent(*SCRIPT)
    capsys.readouterr()
    assert cli.main(["--render", str(workspace.parent / "transcript.jsonl")]) == 0
    err = capsys.readouterr().err
    for text in ("do the task", "→ write_file f.py", "→ run_shell python3 f.py", "exit code: 0", "hi",
                 "turn 3/20 · context", "It prints hi.", "exit code 0: the model gave a final answer"):
        assert text in err
    assert transcript.read(workspace.parent / "transcript.jsonl")[0]["event"] == "start"
