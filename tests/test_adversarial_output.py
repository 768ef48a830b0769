"""Adversarial suite, part two: what a run shows and records, not what it lets the model do.

Each case scripts the fake endpoint (tests/fake_server.py) with replies or HTTP errors, runs the
real agent (cli.main in-process; stdin is a StringIO where the approval prompt asks) with real
files, and checks exactly what reached the screen, the transcript and the model. The classes:

- credentials in the base URL (http://user:password@host/v1) reach no transcript, no line on
  the screen and no tool result;
- text from the model, the server or a file cannot drive the terminal: control characters and
  Unicode format characters (U+202E, U+200B, U+2066) are printed escaped, in server errors and
  in the approval prompt too;
- the approval prompt names the file a write will really replace, once links are followed;
- a FIFO planted under a transcript's name neither hangs the run nor receives the transcript;
- the end of a run lists what the harness removed after commands (files planted for host tools).

tests/test_adversarial.py covers escapes (what the model may do); this file covers what the user
is shown. The number of cases is printed at the end as `adversarial output cases: N`.

Left out on purpose: how a real terminal renders what gets through (these check the bytes).
"""

import contextlib
import io
import json
import os
import socket
import stat
import sys
import time
from pathlib import Path

import pytest

import cli
import sandbox
from fake_server import Status, answer, call, reply
from test_adversarial import fails_if_blocked


PASSWORD = f"hunter2-{os.getpid()}-pw"
needs_bwrap = pytest.mark.skipif(not sandbox.available(), reason="bubblewrap is missing or does not work here")
CASES: list[str] = []


@pytest.fixture(scope="module", autouse=True)
def count_cases(request):
    """Print how many cases ran, past pytest's output capture."""
    yield
    capture = request.config.pluginmanager.getplugin("capturemanager")
    with capture.global_and_fixture_disabled() if capture else contextlib.nullcontext():
        print(f"\nadversarial output cases: {len(CASES)}")


@pytest.fixture(autouse=True)
def counted(request):
    CASES.append(request.node.nodeid)


def done() -> list[dict]:
    """The model's final answer."""
    return [answer("done")]


def shell(command: str) -> dict:
    return call("run_shell", command=command)


def tool_results(request: dict) -> list[str]:
    return [m["content"] for m in request["messages"] if m["role"] == "tool"]


def events(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def with_password(url: str) -> str:
    return url.replace("http://", f"http://me:{PASSWORD}@")


# --- credentials in the base URL -------------------------------------------------------------

def test_credentials_in_a_reachable_base_url_reach_no_transcript_screen_or_tool_result(fake, workspace, capsys):
    """Class: secrets in the base URL. The start-up check and the chat requests go through with
    them; the transcript and the screen show the URL as ***@host; a file that holds the URL
    reaches the model with the credentials redacted."""
    url, log = with_password(fake.url), workspace.parent / "run.jsonl"
    (workspace / "config.txt").write_text(f"url = {url}\n")
    fake.extra_routes["/props"] = (200, {"default_generation_settings": {"n_ctx": 8192}})
    fake.script = [reply(call("read_file", path="config.txt")), answer("done")]
    code = cli.main(["--base-url", url, "--workspace", str(workspace), "--transcript", str(log), "go"])
    out, err = capsys.readouterr()
    assert code == 0 and out == "done\n"
    assert fake.gets == ["/props"]  # the check reached the server with the credentials in the URL
    hidden = fake.url.replace("http://", "http://***@")
    [start] = [e for e in events(log) if e["event"] == "start"]
    assert start["config"]["base_url"] == hidden and start["config"]["n_ctx"] == 8192
    assert tool_results(fake.requests[-1]) == [f"url = {fake.url.replace('http://', 'http://[redacted]@')}\n"]
    for text in (log.read_text(), out, err, json.dumps(fake.requests)):
        assert PASSWORD not in text and f"me:{PASSWORD}" not in text


@pytest.mark.parametrize("flags", [[], ["--no-probe"]], ids=["start-up check", "first chat request"])
def test_credentials_in_an_unreachable_base_url_are_not_in_the_error_line(workspace, capsys, flags):
    """Class: secrets in the base URL. The one error line names the host, never the password;
    the transcript's start and end events hold no trace of it either."""
    with socket.socket() as s:  # bound, then closed: nothing listens there
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    log = workspace.parent / "run.jsonl"
    code = cli.main(["--base-url", f"http://me:{PASSWORD}@127.0.0.1:{port}/v1", "--workspace", str(workspace),
                       "--transcript", str(log), *flags, "go"])
    out, err = capsys.readouterr()
    assert code == 1 and out == ""
    [line] = [line for line in err.splitlines() if line.startswith("error:")]
    assert line.startswith(f"error: cannot reach the model endpoint at http://***@127.0.0.1:{port}/v1 (")
    assert PASSWORD not in err and PASSWORD not in log.read_text()
    assert [e["event"] for e in events(log)] == (["changes", "end"] if flags == [] else
                                                 ["start", "request", "changes", "end"])
    assert [e for e in events(log) if e["event"] == "changes"][0]["landed"] == []


# --- terminal escapes from the server and in the approval prompt ------------------------------

ESCAPES = "\x1b[2J\x1b]0;pwned\x07 \u202egnp.exe \u200b\u2066x\u2069"
ESCAPED = "\\x1b[2J\\x1b]0;pwned\\x07 \\u202egnp.exe \\u200b\\u2066x\\u2069"


@pytest.mark.parametrize("status", [400, 500])
def test_a_server_error_body_cannot_drive_the_terminal(run_agent, fake, status):
    """Class: terminal escapes from the server. The error message in an HTTP error body is
    printed with its control and format characters escaped, in the one error line."""
    code, out, err = run_agent(Status(status, {"error": {"message": f"bad request {ESCAPES}"}}), answer("never"))
    assert code == 1 and out == ""
    assert f"error: the model endpoint at {fake.url} answered HTTP {status}: bad request {ESCAPED}" in err.splitlines()
    assert not {"\x1b", "\x07", "\u202e", "\u200b", "\u2066"} & set(err)


def test_the_approval_prompt_escapes_control_and_format_characters(run_agent, fake, workspace, monkeypatch):
    """Class: terminal escapes in the approval prompt. A command holding U+202E (which shows
    "exe.txt" as "txt.exe"), U+200B and ESC is shown escaped where the user is asked."""
    monkeypatch.setattr(sys, "stdin", io.StringIO("n\n"))
    code, _, err = run_agent(reply(shell(f"echo {ESCAPES}")), *done(), flags=["--approval", "ask"])
    assert code == 0
    assert tool_results(fake.requests[-1]) == ["Error: permission denied: the user declined this run_shell call"]
    assert f"$ echo {ESCAPED}\nallow? " in err
    assert not {"\x1b", "\x07", "\u202e", "\u200b", "\u2066"} & set(err)


# --- the approval prompt names the real target of a write -------------------------------------

@needs_bwrap
@pytest.mark.parametrize("plant, path, shown", [
    ("echo old > real.txt && ln -s real.txt notes.txt", "notes.txt", "write notes.txt (a link to real.txt)"),
    ("mkdir real && echo old > real/a.txt && ln -s real dir", "dir/a.txt", "write dir/a.txt (a link to real/a.txt)"),
    ("echo old > notes.txt", "notes.txt", "write notes.txt"),
])
def test_the_approval_prompt_names_the_file_a_write_really_replaces(run_agent, fake, workspace, monkeypatch,
                                                                    plant, path, shown):
    """Class: the approval prompt shows the real target. A link planted by an earlier command
    makes a write to one name replace another file; the prompt says which, before asking."""
    monkeypatch.setattr(sys, "stdin", io.StringIO("y\ny\n"))
    code, _, err = run_agent(reply(shell(plant)), reply(call("read_file", path=path)),
                             reply(call("write_file", path=path, content="new\n")), *done(),
                             flags=["--approval", "ask", "--plain"])
    assert code == 0
    assert tool_results(fake.requests[-1])[-1] == f"wrote 4 bytes (1 lines) to {path}"
    lines = [line.rstrip() for line in err.splitlines()]  # (rich pads the diff's lines)
    at = lines.index(shown)  # the name, then the diff, then the question
    assert lines[at + 1:at + 6] == [f"--- a/{path}", f"+++ b/{path}", "@@ -1 +1 @@", "-old", "+new"]
    assert lines[at + 7].startswith("allow? ")
    real = shown.rpartition("(a link to ")[2].removesuffix(")") if "(a link to " in shown else path
    assert (workspace / real).read_text() == "new\n"  # the file really replaced lands; a planted link does not
    assert not (workspace / path).is_symlink() and not (workspace / path.split("/")[0]).is_symlink()


# --- transcripts: planted FIFOs ----------------------------------------------------------------

@pytest.mark.parametrize("reader", [False, True], ids=["no reader: would hang", "a reader: would receive it"])
def test_fifos_under_every_transcript_name_neither_hang_nor_receive_the_run(fake, workspace, capsys, monkeypatch,
                                                                             reader):
    """Class: transcript files that hang or redirect a run. FIFOs stand under every name of the
    form .tooloop/<time>.jsonl for the next minute. Without a reader an open for writing would
    block for ever; with one, the transcript would flow to whoever reads. A transcript's name has
    a random part, and is opened only as a new file, so the run goes on with a file of its own,
    the FIFOs stay as they were, and nothing reaches the reader."""
    monkeypatch.chdir(workspace)
    folder = workspace / ".tooloop"
    folder.mkdir()
    now, readers, fifos = time.time(), [], set()
    for second in range(-2, 60):
        fifo = folder / time.strftime("%Y%m%d-%H%M%S.jsonl", time.localtime(now + second))
        os.mkfifo(fifo)
        fifos.add(fifo)
        if reader:
            readers.append(os.open(fifo, os.O_RDONLY | os.O_NONBLOCK))
    fake.script = [answer("done")]
    with fails_if_blocked(20):
        code = cli.main(["--base-url", fake.url, "--no-probe", "go"])
    capsys.readouterr()
    assert code == 0
    [log] = set(folder.glob("*.jsonl")) - fifos
    assert stat.S_ISREG(log.lstat().st_mode) and '"event": "end"' in log.read_text()
    for fd in readers:
        with contextlib.suppress(BlockingIOError):
            assert os.read(fd, 1 << 16) == b""
        os.close(fd)
    assert all(stat.S_ISFIFO(p.lstat().st_mode) for p in fifos)


def test_a_fifo_under_the_named_transcript_is_refused(fake, workspace, capsys):
    """The same FIFO under a name the user gave (--transcript): one line, exit 2, no model call."""
    os.mkfifo(workspace / "log.jsonl")
    fake.script = [answer("done")]
    with fails_if_blocked(20):
        code = cli.main(["--base-url", fake.url, "--no-probe", "--workspace", str(workspace),
                           "--transcript", str(workspace / "log.jsonl"), "go"])
    _, err = capsys.readouterr()
    assert code == 2 and fake.requests == []
    assert f"error: cannot write the transcript {workspace / 'log.jsonl'}" in err


# --- the end of the run lists what the harness removed ----------------------------------------

@needs_bwrap
@pytest.mark.parametrize("flags", [[], ["--quiet"]])
def test_the_end_of_the_run_lists_what_the_harness_removed(run_agent, fake, workspace, flags):
    """Class: files planted for host tools. A command makes .git in a workspace that has none
    (git would run its hooks on the host); the harness removes it, and the run ends with one
    warning block saying so, even with --quiet, and a `removed` event in the transcript."""
    plant = "mkdir -p .git/hooks && printf '#!/bin/sh\\n' > .git/hooks/pre-commit"
    code, out, err = run_agent(reply(shell(plant)), *done(), flags=flags)
    assert code == 0 and out == "done\n"
    assert not (workspace / ".git").exists()
    entry = f"removed .git/, made by the command: {plant}"
    assert err.endswith(f"warning: tooloop undid what commands in this run left for host tools to run:\n"
                        f"  {entry}\n")
    log = events(workspace.parent / "transcript.jsonl")
    assert [e["removed"] for e in log if e["event"] == "removed"] == [[entry]]
    assert [e["event"] for e in log][-2:] == ["removed", "end"]
