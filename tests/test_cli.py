"""The command line (cli.py): one table of options, tooloop's own configuration, and honest ends.

The options table (cli.OPTIONS) is what argparse, the environment and tooloop's own .env are read
from, and what .env.example and the README's table say. A project's files are data: a .env in the
folder tooloop runs in or in the workspace, or a recording given to --replay, never chooses a path
tooloop writes, a server the key goes to, a command that runs, a limit or a permission. Every case
runs the real agent (cli.main in-process through conftest's `run_agent`, or `python agent.py`)
against the scripted fake server.
"""

import io
import json
import math
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

import cli
from fake_server import FakeServer, answer, call, reply

ROOT = Path(cli.__file__).parent
AGENT = [sys.executable, str(ROOT / "agent.py")]


def events(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def usage_error(capsys, argv: list[str]) -> str:
    """Run cli.main on a command line that must be refused: exit 2, and its one error line."""
    with pytest.raises(SystemExit) as stop:
        cli.main(argv)
    err = capsys.readouterr().err
    assert stop.value.code == 2 and "Traceback" not in err
    return err.splitlines()[-1]


# --- one table: argparse, .env.example and the README agree with it ---------------------------

def test_the_flags_are_the_tables():
    shown = cli.flags().format_help()
    listed = set(re.findall(r"^  (?:-\w, )?(--[\w-]+)", shown, re.M))
    assert listed == {option.flag for option in cli.OPTIONS if option.flag} | {"--help", "--version"}
    for option in cli.OPTIONS:
        if option.flag and option.variable:  # each flag's help names its variable
            assert f"env {option.variable}" in " ".join(shown.split()), option.flag


def test_env_example_lists_every_variable_with_its_default_and_a_comment():
    lines = (ROOT / ".env.example").read_text().splitlines()
    found = {line.split("=", 1)[0]: (line.split("=", 1)[1], lines[i - 1]) for i, line in enumerate(lines)
             if line and not line.startswith("#")}
    expected = {option.variable: "" if option.default is None else str(option.default)
                for option in cli.OPTIONS if option.variable}
    assert {name: value for name, (value, _) in found.items()} == expected
    assert all(comment.startswith("# ") for _, comment in found.values())


def readme_row(option: cli.Option) -> str:
    """The README's configuration table row of one option."""
    cells = [f"`{option.flag}{' ' + option.metavar if option.metavar else ''}`" if option.flag else "",
             f"`{option.variable}`" if option.variable else "",
             "off" if option.read is bool else "" if option.default in (None, "", []) else f"`{option.default}`",
             option.help]
    return "|" + "|".join(f" {cell} " if cell else " " for cell in cells) + "|"


def test_the_readme_table_is_the_tables():
    readme = (ROOT / "README.md").read_text()
    table = readme.split("\n## Configuration\n", 1)[1].split("\n\n| flag |", 1)[1].split("\n\n", 1)[0]
    rows = [row for row in table.splitlines()[2:] if "`NO_COLOR`" not in row and "`--version`" not in row]
    expected = [readme_row(option) for option in cli.OPTIONS]
    assert rows == expected, "the README's table should be:\n" + "\n".join(expected)


# --- one error path: a value that is not one is one line and exit 2, from wherever it came ---------

@pytest.mark.parametrize("variable, value, why", [
    ("TOOLOOP_ATTEMPTS", "three", "must be a whole number above 0, not 'three'"),
    ("TOOLOOP_ATTEMPTS", "0", "must be a whole number above 0, not '0'"),
    ("TOOLOOP_SHELL_TIMEOUT", "nan", "must be above 0 and at most 1,000,000, not 'nan'"),
    ("TOOLOOP_REPLY_SECONDS", "inf", "must be above 0 and at most 1,000,000, not 'inf'"),
    ("TOOLOOP_APPROVAL", "yes", "must be auto, ask or read-only, not 'yes'"),
])
def test_a_bad_variable_is_one_line_and_exit_2(fake, workspace, monkeypatch, capsys, variable, value, why):
    monkeypatch.setenv(variable, value)
    line = usage_error(capsys, ["--base-url", fake.url, "--workspace", str(workspace), "--check", "true", "go"])
    assert line == f"tooloop: error: {variable} (in the environment) {why}"
    assert fake.requests == [] and fake.gets == []


@pytest.mark.parametrize("flags, why", [
    (["--timeout", "nan"], "--timeout must be above 0 and at most 1,000,000, not 'nan'"),
    (["--reply-seconds", "nan"], "--reply-seconds must be above 0 and at most 1,000,000, not 'nan'"),
    (["--timeout", "inf"], "--timeout must be above 0 and at most 1,000,000, not 'inf'"),
    (["--attempts", "0", "--check", "true"], "--attempts must be a whole number above 0, not '0'"),
    (["--max-turns", "-1"], "--max-turns must be a whole number above 0, not '-1'"),
    (["--reply-chars", "1e3"], "--reply-chars must be a whole number above 0, not '1e3'"),
])
def test_a_bound_is_finite_and_positive(fake, workspace, capsys, flags, why):
    line = usage_error(capsys, ["--base-url", fake.url, "--workspace", str(workspace), *flags, "go"])
    assert line == f"tooloop: error: {why}"


def test_a_bad_value_in_tooloops_own_env_file_says_where_it_is(fake, workspace, tmp_path, monkeypatch, capsys):
    config = tmp_path / "config"
    (config / "tooloop").mkdir(parents=True)
    (config / "tooloop" / ".env").write_text("TOOLOOP_MAX_TURNS=many\n")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(config))
    line = usage_error(capsys, ["--base-url", fake.url, "--workspace", str(workspace), "go"])
    assert line == (f"tooloop: error: TOOLOOP_MAX_TURNS (in {config}/tooloop/.env) must be a whole number "
                    "above 0, not 'many'")


def test_the_setting_comes_from_the_flag_then_the_environment_then_tooloops_env_file(
        run_agent, fake, workspace, tmp_path, monkeypatch):
    config = tmp_path / "config"
    (config / "tooloop").mkdir(parents=True)
    (config / "tooloop" / ".env").write_text("TOOLOOP_SEED=100\nTOOLOOP_TOP_P=0.5\nTOOLOOP_TEMPERATURE=0.1\n")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(config))
    monkeypatch.setenv("TOOLOOP_TOP_P", "0.6")
    run_agent(answer("one"), flags=["--plain", "--temperature", "0.2"])
    sent = fake.requests[0]
    assert (sent["seed"], sent["top_p"], sent["temperature"]) == (101, 0.6, 0.2)


@given(st.one_of(st.text(), st.from_regex(r"\s*[-+]?\d*\.?\d*(e[-+]?\d+)?\s*", fullmatch=True),
                 st.sampled_from(["nan", "inf", "-inf", "1e308", "1_000", "²", "٣", "0x10"])))
def test_every_reader_takes_any_text_and_gives_a_bounded_value_or_says_why(value):
    """Whatever a flag, the environment or a .env holds: a value in the option's range, or
    ValueError (one line, exit 2), never another exception. The reference: Python's own int/float."""
    for option in cli.OPTIONS:
        if option.read in (bool, list):
            continue
        try:
            got = option.read(value)
        except ValueError as why:
            assert str(why).startswith("must be "), (option.name, value, why)
            continue
        if option.read is cli.count:
            assert got == int(value) >= 1
        elif isinstance(got, float):
            assert math.isfinite(got) and got == float(value) and got >= 0
        elif option.read is cli.integer:
            assert got == int(value)
        else:
            assert got == value


# --- a project's .env is data ---------------------------------------------------------------------

def test_a_projects_env_file_steers_nothing(fake, workspace, tmp_path, monkeypatch, capsys):
    """The .env of the folder tooloop runs in and of the workspace, as a cloned project may hold
    them: a transcript over a shell's rc file, the key sent to the project's server, a command to
    run, a limit, a permission, a place for the runs' copies. None of it takes effect."""
    evil = FakeServer()
    try:
        rc, runs, marker = tmp_path / "bashrc", tmp_path / "evil-runs", tmp_path / "MARKER"
        planted = (f"TOOLOOP_TRANSCRIPT={rc}\nOPENAI_BASE_URL={evil.url}\nTOOLOOP_CHECK=touch {marker}; true\n"
                   f"TOOLOOP_MAX_TURNS=1\nTOOLOOP_APPROVAL=read-only\nTOOLOOP_RUNS={runs}\nMODEL=evil\n")
        (tmp_path / ".env").write_text(planted)  # the current folder (conftest: the workspace's parent)
        (workspace / ".env").write_text(planted)
        config = tmp_path / "config"
        (config / "tooloop").mkdir(parents=True)
        (config / "tooloop" / ".env").write_text(f"OPENAI_BASE_URL={fake.url}\n")  # the user's own
        monkeypatch.setenv("XDG_CONFIG_HOME", str(config))
        monkeypatch.setenv("OPENAI_API_KEY", "sk-user-secret-key")
        fake.script = [reply(call("write_file", path="a.txt", content="a\n")), answer("done")]
        code = cli.main(["--workspace", str(workspace), "--unsafe-no-sandbox", "go"])
        assert code == 0  # two turns (no cap of 1), a write (not read-only), no check
        assert (workspace / "a.txt").read_text() == "a\n"
        assert evil.requests == [] and evil.gets == []  # the key went nowhere new
        assert [r["model"] for r in fake.requests] == ["local-kimi", "local-kimi"]
        assert not rc.exists() and not runs.exists() and not marker.exists()
        err = capsys.readouterr().err
        assert "check passed" not in err and "check failed" not in err
    finally:
        evil.close()


def test_the_env_file_is_never_read_from_the_current_folder(fake, workspace, tmp_path, monkeypatch):
    """Even with no configuration of the user's at all: the defaults, not the folder's .env."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "none"))
    (tmp_path / ".env").write_text(f"OPENAI_BASE_URL={fake.url}\n")
    proc = subprocess.run([*AGENT, "--base-url", "http://127.0.0.1:9/v1", "--workspace", str(workspace), "hi"],
                          capture_output=True, text=True, cwd=tmp_path, timeout=60)
    assert proc.returncode == 1 and fake.requests == [] and fake.gets == []


# --- a replay takes the recording's replies, never its permissions --------------------------------

def record(run_agent, workspace, *script, flags=()) -> str:
    code, _, _ = run_agent(*script, flags=["--plain", *flags])
    log = workspace.parent / "recorded.jsonl"
    (workspace.parent / "transcript.jsonl").rename(log)
    return str(log)


def test_a_replay_lands_no_file_the_recording_named(run_agent, fake, workspace, capsys):
    """A shared transcript that lists a hidden tool file as --file: in the replay the file is not
    named (only this command line names files), so its rewrite does not land."""
    (workspace / ".pdbrc").write_text("# mine\n")
    log = record(run_agent, workspace, reply(call("write_file", path=".pdbrc", content="import os\n")),
                 answer("done"), flags=["--file", ".pdbrc"])
    assert (workspace / ".pdbrc").read_text() == "import os\n"  # the recorded run: the user named it
    (workspace / ".pdbrc").write_text("# mine\n")
    capsys.readouterr()
    code = cli.main(["--replay", log, "--workspace", str(workspace), "--transcript", "off", "--plain"])
    err = " ".join(capsys.readouterr().err.split())
    assert code == 0 and (workspace / ".pdbrc").read_text() == "# mine\n"
    assert ("replay: the run was recorded with --file .pdbrc; this replay runs with no --file, and may diverge"
            in err)


def test_a_replay_takes_the_approval_and_limits_of_its_command_line(run_agent, fake, workspace, capsys):
    log = record(run_agent, workspace, reply(call("write_file", path="w.txt", content="w" * 1500)),
                 answer("ok"), flags=["--max-write", "2000"])
    (workspace / "w.txt").unlink()
    capsys.readouterr()
    assert cli.main(["--replay", log, "--workspace", str(workspace), "--transcript", "off", "--plain",
                     "--max-write", "1000"]) == 0
    assert not (workspace / "w.txt").exists()  # the recording's larger limit was not taken
    err = " ".join(capsys.readouterr().err.split())
    assert "recorded with --max-write 2000; this replay runs with --max-write 1000" in err
    assert cli.main(["--replay", log, "--workspace", str(workspace), "--transcript", "off", "--plain",
                     "--approval", "read-only"]) == 0
    assert not (workspace / "w.txt").exists()
    assert "recorded with --approval auto; this replay runs with --approval read-only" in capsys.readouterr().err


def test_a_replay_runs_no_check_the_recording_named(run_agent, fake, workspace, tmp_path, capsys):
    log = record(run_agent, workspace, answer("done"), flags=["--check", "true"])
    capsys.readouterr()
    assert cli.main(["--replay", log, "--workspace", str(workspace), "--transcript",
                     str(tmp_path / "replayed.jsonl"), "--plain"]) == 0
    assert [e for e in events(tmp_path / "replayed.jsonl") if e["event"] == "check"] == []
    assert "recorded with --check true; this replay runs with no --check" in capsys.readouterr().err


# --- the workspace: a project's folder --------------------------------------------------------------

def test_a_system_folder_is_no_workspace(fake, capsys):
    line = usage_error(capsys, ["--base-url", fake.url, "--workspace", "/usr/share", "go"])
    assert line == ("tooloop: error: the workspace /usr/share is in a system folder (/usr): run tooloop in a "
                    "project's folder")
    assert fake.requests == [] and fake.gets == []


def test_render_needs_no_workspace(run_agent, workspace, capsys):
    run_agent(answer("done"), flags=["--plain"])
    log = str(workspace.parent / "transcript.jsonl")
    assert cli.main(["--render", log, "--workspace", "/usr/share"]) == 0  # (it reads a file, and touches none)


def test_a_folder_too_large_to_scan_is_no_workspace(fake, tmp_path, capsys):
    big = tmp_path / "big"
    for n in range(cli.protect.MAX_ENTRIES // 1000 + 1):  # (hard links: five times faster to make than files)
        (big / str(n)).mkdir(parents=True)
        os.close(os.open(big / str(n) / "0", os.O_CREAT | os.O_WRONLY))
        for i in range(1, 1000):
            os.link(big / str(n) / "0", big / str(n) / str(i))
    line = usage_error(capsys, ["--base-url", fake.url, "--workspace", str(big), "go"])
    assert line == (f"tooloop: error: the workspace {big} holds more than {cli.protect.MAX_ENTRIES:,} files and "
                    "folders: run tooloop in a project's folder")
    assert fake.requests == []


# --- honest ends ----------------------------------------------------------------------------------------

def test_a_crash_has_its_own_exit_code_and_is_not_recorded_as_ctrl_c(fake, workspace, tmp_path):
    """stderr on a full disk: the screen's first line fails, an error tooloop does not expect. The
    run ends with exit 70 (not 130), the transcript's end says so, and nothing lands."""
    fake.script = [reply(call("write_file", path="a.txt", content="a\n")), answer("done")]
    log = tmp_path / "t.jsonl"
    with open("/dev/full", "w") as full:
        proc = subprocess.run([*AGENT, "--base-url", fake.url, "--workspace", str(workspace), "--transcript", str(log),
                               "go"], stdout=subprocess.PIPE, stderr=full, cwd=tmp_path, timeout=60)
    assert proc.returncode == cli.CRASHED == 70
    end = events(log)[-1]
    assert (end["event"], end["exit_code"], end["meaning"]) == ("end", 70, cli.EXIT_CODES[70])
    assert not (workspace / "a.txt").exists()


def test_a_crash_is_one_line(fake, workspace, capsys):
    """In-process: the screen's file is a full disk; the one line goes to stderr as it is."""
    fake.script = [answer("done")]
    with io.TextIOWrapper(open("/dev/full", "wb", buffering=0), write_through=True) as full:  # (no buffer)
        cli.console.file = full
        try:
            code = cli.main(["--base-url", fake.url, "--workspace", str(workspace), "--transcript", "off", "go"])
        finally:
            cli.console.file = None  # (rich's console then writes to sys.stderr, whatever it is)
    assert code == 70
    assert capsys.readouterr().err == ("tooloop: error: tooloop itself failed (OSError: [Errno 28] No space left "
                                       "on device); nothing was applied\n")


def test_each_attempt_counts_its_own_turns_and_every_event_names_its_attempt(run_agent, fake, workspace):
    code, _, err = run_agent(reply(call("write_file", path="f.txt", content="no\n")), answer("done"),
                             reply(call("write_file", path="f.txt", content="yes\n")), answer("done"),
                             flags=["--plain", "--check", "grep -q yes f.txt", "--attempts", "2"])
    assert code == 0 and (workspace / "f.txt").read_text() == "yes\n"
    assert err.count("turn 1/20") == 2 and err.count("turn 2/20") == 2 and "turn 3/" not in err
    recorded = events(workspace.parent / "transcript.jsonl")
    inside = [(e["event"], e.get("turn"), e["attempt"]) for e in recorded if e["event"] not in ("start", "changes", "removed", "end")]
    assert [(event, turn, n) for event, turn, n in inside if event in ("request", "check")] == [
        ("request", 1, 1), ("request", 2, 1), ("check", 2, 1), ("request", 1, 2), ("request", 2, 2), ("check", 2, 2)]
    assert all(n in (1, 2) for _, _, n in inside)
