"""The conventions of a command-line tool: --version, the task from stdin or a file, sampling
settings, and the final answer shown once on a terminal but plain on a pipe.

The tests run the real agent against the scripted fake server: in-process (conftest's
`run_agent`), or as a real process when what matters is the process's own stdin, stdout and
terminal (a pseudo-terminal from the pty module stands in for the user's).
"""

import io
import os
import pty
import re
import subprocess
import sys
from pathlib import Path

import pytest

import agent
import cli
from fake_server import answer, call, reply

AGENT = [sys.executable, str(Path(agent.__file__))]


def test_version_is_the_projects(tmp_path):
    pyproject = (Path(agent.__file__).parent / "pyproject.toml").read_text()
    assert cli.__version__ == re.search(r'^version = "(.+)"$', pyproject, re.M)[1]
    proc = subprocess.run([*AGENT, "--version"], capture_output=True, text=True, cwd=tmp_path, timeout=60)
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, f"tooloop {cli.__version__}\n", "")


def test_a_task_of_a_dash_is_read_from_stdin(run_agent, fake, monkeypatch):
    monkeypatch.setattr(sys, "stdin", io.StringIO("Say READY,\nthen stop.\n\n"))
    code, out, _ = run_agent(answer("READY"), task="-", flags=["--plain"])
    assert (code, out) == (0, "READY\n")
    assert fake.requests[0]["messages"][1] == {"role": "user", "content": "Say READY,\nthen stop."}


def test_a_task_file_is_read(run_agent, fake, workspace):
    (workspace.parent / "task.md").write_text("# The task\n\nSay READY.\n")
    code, out, _ = run_agent(answer("READY"), task="", flags=["--plain", "--task-file", "task.md"])
    assert (code, out) == (0, "READY\n")
    assert fake.requests[0]["messages"][1]["content"] == "# The task\n\nSay READY."


@pytest.mark.parametrize("stdin, flags, expected", [
    (" \n\n", ["-"], "tooloop: error: the task from stdin is empty\n"),
    ("", ["--task-file", "-"], "tooloop: error: the task from stdin is empty\n"),
    ("", ["--task-file", "missing.md"], "tooloop: error: cannot read the task from missing.md ([Errno 2] No such "
                                        "file or directory: 'missing.md')\n"),
])
def test_no_task_is_one_line_and_exit_2_before_any_model_call(fake, workspace, stdin, flags, expected):
    proc = subprocess.run([*AGENT, "--base-url", fake.url, "--workspace", str(workspace), *flags],
                          input=stdin, capture_output=True, text=True, cwd=workspace.parent, timeout=60)
    assert (proc.returncode, proc.stdout, proc.stderr) == (2, "", expected)
    assert fake.requests == [] and fake.gets == []


def test_sampling_settings_come_from_flags_then_the_environment_with_todays_defaults(run_agent, fake, monkeypatch):
    run_agent(answer("one"), flags=["--plain"])
    monkeypatch.setenv("TOOLOOP_TEMPERATURE", "0.2")
    monkeypatch.setenv("TOOLOOP_MAX_REPLY_TOKENS", "4096")
    run_agent(answer("two"), flags=["--plain", "--top-p", "0.95"])
    run_agent(answer("three"), flags=["--plain", "--temperature", "0", "--max-reply-tokens", "300"])
    sent = [(r["temperature"], r["top_p"], r["max_completion_tokens"]) for r in fake.requests]
    assert sent == [(0.7, 0.8, 1024), (0.2, 0.95, 4096), (0.0, 0.8, 300)]


def test_the_seed_is_the_turn_number_plus_seed(run_agent, fake, workspace, monkeypatch):
    (workspace / "a.txt").write_text("x\n")
    run_agent(reply(call("read_file", path="a.txt")), answer("one"), flags=["--plain"])
    run_agent(reply(call("read_file", path="a.txt")), answer("two"), flags=["--plain", "--seed", "100"])
    monkeypatch.setenv("TOOLOOP_SEED", "7")
    run_agent(answer("three"), flags=["--plain"])
    assert [r["seed"] for r in fake.requests] == [1, 2, 101, 102, 8]


@pytest.mark.parametrize("flag, why", [
    (["--temperature", "-1"], "--temperature must be 0-2, not '-1'"),
    (["--temperature", "nan"], "--temperature must be 0-2, not 'nan'"),
    (["--top-p", "0"], "--top-p must be above 0 and at most 1, not '0'"),
    (["--top-p", "1.5"], "--top-p must be above 0 and at most 1, not '1.5'"),
    (["--max-reply-tokens", "0"], "--max-reply-tokens must be a whole number above 0, not '0'")])
def test_sampling_settings_out_of_range_are_a_usage_error(run_agent, fake, flag, why, capsys):
    with pytest.raises(SystemExit) as stop:
        run_agent(answer("never"), flags=flag)
    assert stop.value.code == 2 and fake.requests == []
    assert capsys.readouterr().err.endswith(f"tooloop: error: {why}\n")


def test_the_new_settings_are_in_help():
    out = subprocess.run([*AGENT, "--help"], capture_output=True, text=True, check=True, timeout=60).stdout
    for flag in ("--version", "--task-file", "--temperature", "--top-p", "--max-reply-tokens", "--seed", "TOOLOOP_SEED",
                 "TOOLOOP_TEMPERATURE", "TOOLOOP_TOP_P", "TOOLOOP_MAX_REPLY_TOKENS", "reads it from stdin"):
        assert flag in out, flag


def test_no_color_is_documented():
    readme = (Path(agent.__file__).parent / "README.md").read_text()
    assert "| | `NO_COLOR` |" in readme


def plain(shown: str) -> str:
    """What the terminal shows without its colour codes."""
    return re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", shown)


def on_a_terminal(fake, workspace, pipe_stdout: bool) -> tuple[str, str]:
    """Run the agent with stderr on a pseudo-terminal, and stdout there too or on a pipe:
    (what the terminal shows, what the pipe got)."""
    fake.script = [answer("The answer is FORTY-TWO.")]
    main, tty = pty.openpty()
    env = {**os.environ, "COLUMNS": "200", "TERM": "xterm"}
    env.pop("NO_COLOR", None)
    proc = subprocess.Popen([*AGENT, "--base-url", fake.url, "--workspace", str(workspace), "--transcript", "off",
                             "--plain", "what is it?"], stdin=subprocess.DEVNULL, stderr=tty,
                            stdout=subprocess.PIPE if pipe_stdout else tty, cwd=workspace.parent, env=env)
    os.close(tty)
    shown = b""
    while True:
        try:
            chunk = os.read(main, 65536)
        except OSError:  # EIO: the process closed the terminal
            break
        if not chunk:
            break
        shown += chunk
    piped = proc.stdout.read().decode() if pipe_stdout else ""
    assert proc.wait(60) == 0
    os.close(main)
    return shown.decode(errors="replace"), piped


def test_the_answer_is_shown_once_on_a_terminal(fake, workspace):
    shown, _ = on_a_terminal(fake, workspace, pipe_stdout=False)
    # once as the reply streams in, once as the run's answer (formatted), and not a third time plain
    assert plain(shown).count("The answer is FORTY-TWO.") == 2, shown


def test_a_piped_stdout_gets_the_answer_plain_and_the_terminal_still_shows_it(fake, workspace):
    shown, piped = on_a_terminal(fake, workspace, pipe_stdout=True)
    assert piped == "The answer is FORTY-TWO.\n"
    assert plain(shown).count("The answer is FORTY-TWO.") == 2
