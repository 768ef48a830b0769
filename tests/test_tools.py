"""protect.py's rules, called directly: which names count, how .git/config's core.hooksPath is read,
and what tools.run_shell records in Settings.state.removed for the user.

The adversarial suite (tests/test_adversarial.py) drives the same rules through the whole agent;
these cases pin the details it does not reach: config spellings, templates, entries for the user.
"""

import json
import subprocess

import pytest

import protect
import sandbox
import tools


@pytest.mark.parametrize("name, expected", [
    (".git", "protected"), (".GIT", "protected"), ("__pycache__", "protected"), ("m.cpython-311.PYC", "protected"),
    (".husky", "protected"), (".zshenv", "protected"), (".tooloop", "protected"),
    (".env", "secret"), (".ENV.production", "secret"), (".envrc", "secret"),
    (".env.example", None), ("env", None), ("git", None), ("app.py", None),
    (".netrc", "secret"), (".NPMRC", "secret"), (".pypirc", "secret"), (".git-credentials", "secret"),
    (".aws", "secret"), (".ssh", "secret"), ("gcloud", None), (".npmrc.bak", None),
])
def test_kind(name, expected):
    assert protect.kind(name) == expected


def test_kind_in_a_folder():
    assert protect.kind("gcloud", ".config") == protect.kind("gh", ".CONFIG") == "secret"
    assert protect.kind("gcloud", "src") is None


@pytest.mark.parametrize("text, expected", [
    ("https://bot:ghp_abc@example.org/a.git", "https://[redacted]@example.org/a.git"),
    ("git+https://tok@host/x and ftp://u:p@h/", "git+https://[redacted]@host/x and ftp://[redacted]@h/"),
    ("postgres://app:hunter2@db:5432/app", "postgres://[redacted]@db:5432/app"),
    ("https://example.org/a@b and mail me@example.org", "https://example.org/a@b and mail me@example.org"),
    ("git@github.com:org/repo.git", "git@github.com:org/repo.git"),  # no credentials in an scp-like address
])
def test_urls_with_credentials_are_redacted(text, expected):
    assert tools.redact(text, []) == expected


@pytest.mark.parametrize("config, expected", [
    ("[core]\n\thooksPath = tools/hooks\n", "tools/hooks"),
    ("[Core]\n\tHOOKSPATH=Tools/Hooks ; a comment\n", "tools/hooks"),
    ('[core] hooksPath = "my hooks"\n', "my hooks"),  # a setting on the header's line, quoted
    ("[core]\n\thooksPath = a\n\thooksPath = b\n", "b"),  # the last one wins
    ('[core "x"]\n\thooksPath = a\n[alias]\n\thooksPath = b\n', None),  # other sections
    ("[core]\n\thooksPath = /etc/hooks\n", None),  # outside the workspace: nothing to protect here
    ("[core]\n\thooksPath = .\n", None),  # the workspace itself: left out
    ("[core]\n\tbare = false\n", None),
])
def test_hooks_folder_reads_the_config_as_text(tmp_path, config, expected):
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "config").write_text(config)
    assert protect.hooks_folders(tmp_path.resolve()) == ({expected} if expected else set())


def test_hooks_folder_agrees_with_git(tmp_path):
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    subprocess.run(["git", "-C", str(tmp_path), "config", "core.hooksPath", "ci/Hooks"], check=True)
    assert protect.hooks_folders(tmp_path.resolve()) == {"ci/hooks"}


@pytest.mark.parametrize("path, expected", [
    ("a" * 255, None),
    ("a" * 256, "a name in the path is 256 bytes long; the limit is 255"),
    ("é" * 128, "a name in the path is 256 bytes long; the limit is 255"),  # bytes, not characters
    ("d/" * 2047 + "d", None),
    ("d/" * 2048, "the path is 4096 bytes long; the limit is 4095"),
    ("x\udc80", "the path 'x\\udc80' is not valid UTF-8 text"),
    ("x\0y", "the path contains a NUL byte"),
])
def test_malformed(path, expected):
    assert protect.malformed(path) == expected


@pytest.mark.skipif(not sandbox.available(), reason="bubblewrap is missing or does not work here")
def test_removals_are_recorded_for_the_user(tmp_path):
    settings = tools.Settings(workspace=tmp_path)
    command = "mkdir -p sub && git init -q sub && touch .bashrc && echo ok"
    result = tools.dispatch("run_shell", json.dumps({"command": command}), settings)
    assert result.text == ("exit code: 0\n--- stdout ---\nok\n\ntooloop removed what this command created where "
                           "host tools would run it: .bashrc, sub/.git/ (commands may not plant these)")
    assert settings.state.removed == [f"removed .bashrc, made by the command: {command}",
                                f"removed sub/.git/, made by the command: {command}"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["sub"]
    again = tools.dispatch("run_shell", json.dumps({"command": "ls -A sub"}), settings)
    assert again.text == "exit code: 0" and len(settings.state.removed) == 2  # nothing new: nothing said


@pytest.mark.skipif(not sandbox.available(), reason="bubblewrap is missing or does not work here")
def test_existing_protected_paths_stay_and_unreadable_folders_are_removed(tmp_path):
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    settings = tools.Settings(workspace=tmp_path)
    command = "mkdir -p .githooks/deep && touch .githooks/deep/pre-commit && chmod 000 .githooks/deep .githooks"
    result = tools.dispatch("run_shell", json.dumps({"command": command}), settings)
    assert result.text.endswith("host tools would run it: .githooks/ (commands may not plant these)")
    assert sorted(p.name for p in tmp_path.iterdir()) == [".git"]
    assert (tmp_path / ".git" / "HEAD").read_text() == "ref: refs/heads/main\n"


@pytest.mark.skipif(not sandbox.available(), reason="bubblewrap is missing or does not work here")
def test_a_ctrl_c_during_a_command_still_removes_what_it_planted(tmp_path):
    import os
    import signal
    import threading
    settings = tools.Settings(workspace=tmp_path)
    threading.Timer(2.0, os.kill, (os.getpid(), signal.SIGINT)).start()  # the user, while the command runs
    with pytest.raises(KeyboardInterrupt):
        tools.run_shell("git init -q . && sleep 60", settings=settings)
    assert list(tmp_path.iterdir()) == []
    assert settings.state.removed == ["removed .git/, made by the command: git init -q . && sleep 60"]


def test_syntax_error_says_why_for_sources_too_deep_to_compile():
    assert tools.syntax_error("x = 1\n") is None
    assert tools.syntax_error("x = (\n") == "'(' was never closed, line 1: x = ("
    assert tools.syntax_error("-" * 100_000 + "1") == "MemoryError"  # raised, not returned, before
    assert "recursion" in tools.syntax_error("1" + "+1" * 1_000_000)
