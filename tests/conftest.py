"""Shared fixtures: a scripted fake endpoint, and the real agent run in-process against it."""

import signal
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

import cli  # noqa: E402
from fake_server import FakeServer  # noqa: E402

# A test runner started in the background by a script (`scripts/test &`, nohup: no job control)
# gets SIGINT ignored, and every process it starts inherits that, so the Ctrl-C tests would fail
# for the runner's sake. Take Ctrl-C back: a Python handler, reset to the default in children.
signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.fixture(autouse=True)
def own_config(tmp_path_factory, monkeypatch):
    """tooloop's own .env (cli.config_file) is an empty folder's: a developer's ~/.config/tooloop/.env
    never reaches a test."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path_factory.mktemp("config")))


@pytest.fixture
def fake():
    server = FakeServer()
    yield server
    server.close()


@pytest.fixture
def workspace(tmp_path, monkeypatch):
    """An empty workspace folder; the current directory is a sibling, so no stray .env is read."""
    ws = tmp_path / "ws"
    ws.mkdir()
    monkeypatch.chdir(tmp_path)
    return ws


@pytest.fixture
def run_agent(fake, workspace, capsys):
    """Run the real agent's main() against the fake server: returns (exit code, stdout, stderr)."""

    def run(*script, task="do the task", flags=()):
        fake.script = list(script)
        log = workspace.parent / "transcript.jsonl"  # outside the workspace, so tests see only what tools did
        code = cli.main(["--base-url", fake.url, "--workspace", str(workspace), "--transcript", str(log),
                           *flags, task])
        out, err = capsys.readouterr()
        return code, out, err

    return run


# --- end to end: a real llama-server with a real small model (helpers in tests/llama.py) --------

import llama  # noqa: E402


@pytest.fixture(scope="session")
def llama_server(tmp_path_factory):
    """One real llama-server (0.5B model, free loopback port) shared by the whole session."""
    server = llama.start(tmp_path_factory.mktemp("llama-server"))
    yield server
    llama.stop(server)


@pytest.fixture(autouse=True)
def runs_folder(tmp_path_factory, monkeypatch):
    """Each test's attempts are kept in a folder of its own, not in ~/.cache/tooloop/runs."""
    folder = tmp_path_factory.mktemp("runs")
    monkeypatch.setenv("TOOLOOP_RUNS", str(folder))
    return folder


@pytest.fixture
def attempt(runs_folder):
    """attempt(n=1): the last run's copy of the workspace for its n-th attempt, as the run left it.
    The tools and the shell work there; only its regular files land in the workspace (changes.py)."""
    def path(n: int = 1) -> Path:
        runs = [folder for folder in runs_folder.iterdir() if folder.is_dir()]
        assert runs, f"no run kept its attempts in {runs_folder}"
        # the last run's folder is the one changed last: each attempt is created in it after it
        return max(runs, key=lambda folder: folder.stat().st_mtime_ns) / f"attempt-{n}"
    return path
