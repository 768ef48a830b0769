"""`--check` and `--file`: the user's check decides when the work is done, and the files the user
names come with the task.

Every test runs the real agent (in-process, conftest's `run_agent`, or as a subprocess) against
the scripted fake server over real HTTP, with real files, and the check as a real command in the
real bubblewrap sandbox. What the model was sent is read from the fake server's requests.
"""

import json
import os
import subprocess
import sys

import pytest

import agent
import cli
import prompts
import sandbox
import tools
from fake_server import answer, call, reply

AGENT = [sys.executable, str(tools.Path(agent.__file__))]


def user_messages(request: dict) -> list[str]:
    return [m["content"] for m in request["messages"] if m["role"] == "user"]


def events(path) -> list[dict]:
    return [json.loads(line) for line in open(path)]


# --- the check decides -----------------------------------------------------------------------

@pytest.fixture(autouse=True)
def one_attempt_of_two_rounds(monkeypatch):
    """These tests are about the rounds within one attempt (tests/test_attempts.py: attempts)."""
    monkeypatch.setenv("TOOLOOP_ATTEMPTS", "1")
    monkeypatch.setenv("TOOLOOP_CHECK_ROUNDS", "2")


WROTE = reply(call("write_file", path="w.txt", content="tried\n"))  # (an attempt that wrote nothing does not count)


def test_a_passing_check_ends_the_run_with_the_answer_and_exit_0(run_agent, fake, workspace):
    code, out, err = run_agent(reply(call("write_file", path="ok.txt", content="yes\n")), answer("Wrote ok.txt."),
                               flags=["--check", "grep -x yes ok.txt"])
    assert code == 0 and out == "Wrote ok.txt.\n"
    assert len(fake.requests) == 2  # the check passed on the first answer: the model is not asked again
    assert "✓ check passed: grep -x yes ok.txt" in err


def test_a_failing_check_sends_its_output_back_and_the_run_goes_on(run_agent, fake, workspace):
    (workspace / "n.txt").write_text("1\n")
    code, out, _ = run_agent(reply(call("read_file", path="n.txt")),
                             answer("Done, the tests pass."),  # a false claim: nothing was written
                             reply(call("read_file", path="n.txt")),  # read again: the first read was discarded
                             reply(call("write_file", path="n.txt", content="2\n")), answer("Now it is 2."),
                             flags=["--check", "cat n.txt; test $(cat n.txt) = 2"])
    assert code == 0 and out == "Now it is 2.\n"
    assert len(fake.requests) == 5  # the false claim did not end the run: the check sent the model back
    # the conversation starts again: the task and the check's failure, without the false claim
    assert [m["role"] for m in fake.requests[2]["messages"]] == ["system", "user"]
    failed = user_messages(fake.requests[2])[-1]
    assert failed.startswith("do the task\n\nThe check `cat n.txt; test $(cat n.txt) = 2` fails, so the task is not "
                             "done yet.")
    assert "Done, the tests pass." not in json.dumps(fake.requests[2])
    assert "exit code: 1\n--- stdout ---\n1\n" in failed  # the check's own output
    assert prompts.FIX_FOUND in failed  # no file written or named yet: the model is told to find it
    assert (workspace / "n.txt").read_text() == "2\n"


def test_a_failed_check_shows_the_files_the_run_wrote_as_they_are_now(run_agent, fake, workspace):
    code, _, _ = run_agent(reply(call("write_file", path="calc.py", content="print(1 + 1)\n")), answer("done"),
                           reply(call("write_file", path="calc.py", content="print(2 + 1)\n")), answer("fixed"),
                           flags=["--check", "python3 calc.py | grep -x 3"])
    assert code == 0
    failed = user_messages(fake.requests[2])[-1]
    assert "The files, as they are now:\n\ncalc.py\n```\nprint(1 + 1)\n```" in failed
    assert failed.endswith("Fix the file at fault: write it whole, with the fix, under its name.")


def test_the_round_limit_ends_the_run_with_exit_6(run_agent, fake, workspace):
    code, out, err = run_agent(WROTE, answer("done"), answer("really done"), answer("never asked"),
                               flags=["--check", "exit 1", "--check-rounds", "2"])
    assert code == 6 and out == ""  # no answer on stdout: the work is not done
    assert len(fake.requests) == 3
    assert cli.EXIT_CODES[6] in err


def test_an_empty_reply_is_checked_too(run_agent, fake, workspace):
    (workspace / "done.txt").write_text("")
    code, _, _ = run_agent(answer(""), flags=["--check", "test -f done.txt"])
    assert code == 0  # without --check an empty reply is exit 5; with one, the check decides


def test_the_check_holds_under_plain(run_agent, fake, workspace):
    code, _, _ = run_agent(WROTE, answer("done"), answer("done"),
                           flags=["--plain", "--check", "false", "--check-rounds", "2"])
    assert code == 6 and len(fake.requests) == 3


def test_without_a_check_an_answer_is_taken_as_it_is(run_agent, fake, workspace):
    code, out, _ = run_agent(answer("I fixed it, the tests pass."), answer("never asked"))
    assert code == 0 and out == "I fixed it, the tests pass.\n" and len(fake.requests) == 1


def test_the_check_runs_sandboxed_and_cannot_write_outside_the_workspace(run_agent, fake, workspace):
    assert sandbox.available()
    outside = tools.Path.home() / f"tooloop-planted-{os.getpid()}"  # (in the sandbox /tmp is private)
    try:
        code, _, _ = run_agent(WROTE, answer("done"), answer("done"),
                               flags=["--check", f"echo planted > {outside}", "--check-rounds", "2"])
        assert not outside.exists()
    finally:
        outside.unlink(missing_ok=True)
    assert code == 6  # the write failed inside the sandbox, so the check failed
    assert "Read-only file system" in user_messages(fake.requests[2])[-1]


def test_a_check_that_hangs_is_cut_at_its_timeout_and_counts_as_failed(run_agent, fake, workspace):
    code, _, _ = run_agent(WROTE, answer("done"), answer("done"),
                           flags=["--check", "sleep 30", "--timeout", "1", "--check-rounds", "2"])
    assert code == 6
    assert "timed out after 1 s; the command and its children were killed" in user_messages(fake.requests[2])[-1]


def test_a_long_check_output_comes_back_as_head_and_tail(run_agent, fake, workspace):
    command = "seq 1 5000; exit 1"
    run_agent(answer("done"), answer("done"), flags=["--check", command, "--check-rounds", "2"])
    failed = user_messages(fake.requests[1])[-1]
    assert "--- stdout ---\n1\n2\n" in failed and failed.rstrip().splitlines()[-3] != "5000"
    assert "5000" in failed and "characters cut here" in failed
    assert len(failed) < agent.CHECK_OUTPUT + 1000


def test_the_check_is_recorded_rendered_and_replayed(run_agent, fake, workspace, tmp_path):
    code, _, _ = run_agent(answer("done"), reply(call("write_file", path="f.txt", content="x\n")), answer("done"),
                           flags=["--check", "cat f.txt"])
    assert code == 0
    log = workspace.parent / "transcript.jsonl"
    checks = [e for e in events(log) if e["event"] == "check"]
    assert [(e["turn"], e["passed"], e["exit_code"]) for e in checks] == [(1, False, 1), (3, True, 0)]
    assert checks[1]["command"] == "cat f.txt" and checks[1]["result"] == "exit code: 0\n--- stdout ---\nx\n"
    shown = subprocess.run([*AGENT, "--render", str(log)], capture_output=True, text=True, check=True).stderr
    assert "✗ check failed: cat f.txt" in shown and "✓ check passed: cat f.txt" in shown
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    proc = subprocess.run([*AGENT, "--replay", str(log), "--workspace", str(fresh), "--transcript", "off",
                           "--check", "cat f.txt"],  # (a replay runs no command the recording names)
                          capture_output=True, text=True, cwd=tmp_path)
    assert proc.returncode == 0 and "replay: 0 divergence(s) from the recording" in proc.stderr
    assert "✓ check passed: cat f.txt" in proc.stderr  # the recorded check, run again for real


def test_a_secret_in_the_check_output_is_never_sent(run_agent, fake, workspace, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-very-secret-key")
    (workspace / "leak.txt").write_text("key: sk-very-secret-key\n")
    run_agent(answer("done"), answer("done"), flags=["--check", "cat leak.txt; exit 1", "--check-rounds", "2"])
    assert "sk-very-secret-key" not in json.dumps(fake.requests)
    assert "sk-very-secret-key" not in (workspace.parent / "transcript.jsonl").read_text()


def test_the_check_and_its_rounds_come_from_the_environment(run_agent, fake, workspace, monkeypatch):
    monkeypatch.setenv("TOOLOOP_CHECK", "false")
    monkeypatch.setenv("TOOLOOP_CHECK_ROUNDS", "1")
    code, _, _ = run_agent(WROTE, answer("done"), answer("never asked"))
    assert code == 6 and len(fake.requests) == 2


def test_check_rounds_must_be_positive(run_agent):
    try:
        run_agent(answer("ok"), flags=["--check", "true", "--check-rounds", "0"])
    except SystemExit as exit:
        assert exit.code == 2
    else:
        raise AssertionError("--check-rounds 0 was accepted")


# --- files the user names ----------------------------------------------------------------------

def test_a_named_file_reaches_the_first_request_and_may_be_written_without_a_read(run_agent, fake, workspace):
    (workspace / "stats.py").write_text("def median(xs):\n    return xs[0]\n")
    code, _, _ = run_agent(reply(call("write_file", path="stats.py", content="def median(xs):\n    return 2\n")),
                           answer("fixed"), task="Fix median.", flags=["--file", "stats.py"])
    assert code == 0
    first = user_messages(fake.requests[0])[0]
    assert first == ("Fix median." + prompts.WITH_FILES.format(
        files="\n\nstats.py\n```\ndef median(xs):\n    return xs[0]\n```"))
    assert [m["content"] for m in fake.requests[1]["messages"] if m["role"] == "tool"] == [
        "wrote 29 bytes (2 lines) to stats.py"]
    assert (workspace / "stats.py").read_text() == "def median(xs):\n    return 2\n"


def test_a_named_file_is_shown_again_after_a_failed_check(run_agent, fake, workspace):
    (workspace / "a.py").write_text("print('old')\n")
    run_agent(answer("done"), answer("done"), flags=["--file", "a.py", "--check", "false", "--check-rounds", "2"])
    assert "\n\na.py\n```\nprint('old')\n```" in user_messages(fake.requests[1])[-1]


def test_a_large_named_file_comes_as_its_head_and_counts_as_read_in_part(run_agent, fake, workspace):
    (workspace / "big.txt").write_text("line\n" * 3000)
    code, _, _ = run_agent(reply(call("write_file", path="big.txt", content="short\n")), answer("done"),
                           flags=["--file", "big.txt"])
    first = user_messages(fake.requests[0])[0]
    assert "\n[lines 1-1200 of 3000 in big.txt. To read on: read_file with start=1201." in first
    assert len(first) < tools.READ_CAP + 1000
    [result] = [m["content"] for m in fake.requests[1]["messages"] if m["role"] == "tool"]
    assert "has 3000 lines and you have read only some of them" in result  # it would lose what was never shown
    assert (workspace / "big.txt").read_text() == "line\n" * 3000


def run_cli(fake, workspace, *flags):
    return subprocess.run([*AGENT, "--base-url", fake.url, "--workspace", str(workspace), "--transcript", "off",
                           *flags, "do the task"], capture_output=True, text=True, timeout=120, cwd=workspace.parent,
                          env={**os.environ, "COLUMNS": "1000"})


def test_a_missing_named_file_is_one_line_and_exit_2_before_any_model_call(fake, workspace):
    fake.script = [answer("never asked")]
    proc = run_cli(fake, workspace, "--file", "nope.py")
    assert proc.returncode == 2 and proc.stdout == ""
    [line] = proc.stderr.splitlines()
    assert line.startswith("error: --file nope.py: FileNotFoundError")
    assert fake.requests == [] and fake.gets == []


def test_an_unreadable_named_file_is_one_line_and_exit_2(fake, workspace, tmp_path):
    (workspace / "blob.bin").write_bytes(b"\0\1\2" * 10)
    (tmp_path / "secret.txt").write_text("outside")
    for path, why in (("blob.bin", "looks binary"), (str(tmp_path / "secret.txt"), "is outside the workspace"),
                      (".git/config", "")):
        proc = run_cli(fake, workspace, "--file", path)
        assert proc.returncode == 2 and fake.requests == [], path
        [line] = proc.stderr.splitlines()
        assert line.startswith(f"error: --file {path}: ") and why in line, line
