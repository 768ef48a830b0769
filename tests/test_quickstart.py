"""The README's first command, run for real: as the README writes it, against a scripted model,
and on a machine where the sandbox is missing or broken.

scripts/quickstart and scripts/setup run as subprocesses with a PATH made for each case: bwrap
hidden (the folders that hold it become folders of symlinks to everything else), or a bwrap that
fails as it does where user namespaces are off. apt-get and sudo are always hidden or replaced
by recording stand-ins, so a test never installs anything on the machine. The agent's endpoint
is the scripted FakeServer: it must receive nothing, because setup stops first.

Needs the caches scripts/setup fills (the venv, llama-server, the 0.5B model) for the cases that
get past the sandbox; scripts/test, and CI, run setup before the suite. Left out: a real apt-get
install, and machines without bubblewrap support (there the passing cases fail, saying why).
"""

import os
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

from fake_server import answer, call, reply

ROOT = Path(__file__).resolve().parent.parent
HIDDEN = {"bwrap", "apt-get", "apt", "sudo"}  # no test may install anything system-wide


def path_without(names: set[str], farms: Path) -> list[str]:
    """This process's PATH with `names` gone: a folder holding any of them becomes a folder of
    symlinks to the rest of it."""
    farms.mkdir()
    folders = []
    for n, folder in enumerate(os.environ["PATH"].split(os.pathsep)):
        if not os.path.isdir(folder):
            continue
        if not any(os.path.lexists(os.path.join(folder, name)) for name in names):
            folders.append(folder)
            continue
        farm = farms / str(n)
        farm.mkdir()
        for entry in os.scandir(folder):
            if entry.name not in names:
                (farm / entry.name).symlink_to(entry.path)
        folders.append(str(farm))
    return folders


def script(folder: Path, name: str, text: str) -> None:
    (folder / name).write_text("#!/bin/sh\n" + text)
    (folder / name).chmod(0o755)


@pytest.fixture
def env(tmp_path, fake):
    """The environment of a first run: the agent's endpoint is the fake, nothing set up to skip."""
    environment = {k: v for k, v in os.environ.items() if k not in ("TOOLOOP_NO_SANDBOX", "MODEL")}
    environment.update(OPENAI_BASE_URL=fake.url, TOOLOOP_WORKSPACE=str(tmp_path / "demo"))
    return environment


def run(command: list[str], env: dict, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(command, env=env, cwd=cwd, capture_output=True, text=True, timeout=900)


def assert_stopped_before_anything_else(r: subprocess.CompletedProcess, fake, tmp_path: Path, why: str) -> None:
    assert r.returncode == 1, r.stderr
    [line] = r.stderr.splitlines()  # one line, nothing before or after it
    assert line.startswith(f"setup: the sandbox does not work here ({why}"), line
    assert "TOOLOOP_NO_SANDBOX=1" in line and "--unsafe-no-sandbox" in line  # what to do about it
    assert "building" not in r.stdout + r.stderr  # stopped before the minutes-long steps
    assert fake.requests == [] and fake.gets == []  # and before any model call
    assert not (tmp_path / "demo").exists()  # the agent never started


def test_quickstart_without_bwrap_and_no_way_to_install_it_stops_in_one_line(env, fake, tmp_path):
    env["PATH"] = os.pathsep.join(path_without(HIDDEN, tmp_path / "path"))
    r = run([str(ROOT / "scripts" / "quickstart"), "Write fizzbuzz.py and run it"], env, tmp_path)
    assert_stopped_before_anything_else(r, fake, tmp_path, "bwrap not found on PATH; setup cannot install it here")


def test_quickstart_with_a_bwrap_that_fails_stops_in_one_line_saying_why(env, fake, tmp_path):
    broken = tmp_path / "broken"
    broken.mkdir()
    script(broken, "bwrap", "echo 'bwrap: No permissions to create a new namespace' >&2\nexit 1\n")
    env["PATH"] = os.pathsep.join([str(broken), *path_without(HIDDEN, tmp_path / "path")])
    r = run([str(ROOT / "scripts" / "quickstart"), "Write fizzbuzz.py and run it"], env, tmp_path)
    assert_stopped_before_anything_else(r, fake, tmp_path,
                                        "bwrap fails here: bwrap: No permissions to create a new namespace")


@pytest.fixture
def recording_apt(tmp_path):
    """A folder with apt-get and sudo stand-ins that log their arguments; the apt-get "installs"
    bubblewrap by linking the real bwrap next to itself."""
    real = shutil.which("bwrap")
    assert real, "these tests need bubblewrap installed (scripts/setup installs it)"
    folder = tmp_path / "apt"
    folder.mkdir()
    log = tmp_path / "apt.log"
    script(folder, "apt-get", f'echo "$*" >> {log}\n'
                              f'case "$*" in *"install -y -qq bubblewrap"*) ln -sf {real} {folder}/bwrap ;; esac\n')
    script(folder, "sudo", f'echo "sudo $*" >> {log}\n[ "$1" = -n ] && shift\nexec "$@"\n')
    return folder, log


def test_setup_installs_bubblewrap_when_it_is_missing_and_goes_on(recording_apt, env, tmp_path):
    folder, log = recording_apt
    env["PATH"] = os.pathsep.join([str(folder), *path_without(HIDDEN, tmp_path / "path")])
    r = run([str(ROOT / "scripts" / "setup"), "--model", "0.5b"], env, tmp_path)
    assert r.returncode == 0, r.stderr
    assert "setup: installing bubblewrap" in r.stderr
    assert [line for line in log.read_text().splitlines() if not line.startswith("sudo")] == [
        "update -qq", "install -y -qq bubblewrap"]
    assert Path(r.stdout.strip()).name.startswith("python")  # then the venv, printed for the caller


def test_setup_with_a_working_bwrap_installs_nothing(recording_apt, env, tmp_path):
    folder, log = recording_apt
    env["PATH"] = os.pathsep.join([str(folder), env["PATH"]])
    r = run([str(ROOT / "scripts" / "setup"), "--model", "0.5b"], env, tmp_path)
    assert r.returncode == 0, r.stderr
    assert not log.exists()  # neither apt-get nor sudo ran
    python = Path(r.stdout.strip())
    assert subprocess.run([python, "-c", "import agent, sandbox"], cwd=ROOT).returncode == 0


def test_setup_can_be_told_to_go_on_without_the_sandbox(env, fake, tmp_path):
    # for machines where bubblewrap cannot work: the agent then runs with --unsafe-no-sandbox
    env["PATH"] = os.pathsep.join(path_without(HIDDEN, tmp_path / "path"))
    env["TOOLOOP_NO_SANDBOX"] = "1"
    r = run([str(ROOT / "scripts" / "setup"), "--model", "0.5b"], env, tmp_path)
    assert r.returncode == 0, r.stderr
    assert "sandbox" not in r.stderr


def test_setup_usage_is_checked_before_anything_runs(env, tmp_path):
    r = run([str(ROOT / "scripts" / "setup"), "--model", "7b"], env, tmp_path)
    assert (r.returncode, r.stderr) == (2, "usage: scripts/setup [--model 1.5b|0.5b|all]   (default 1.5b)\n")


def first_command() -> list[str]:
    """The README's first command, as a newcomer copies it from the Quick start."""
    section = (ROOT / "README.md").read_text().split("## Quick start", 1)[1].split("\n## ", 1)[0]
    line = next(line for line in section.splitlines() if line.startswith("    scripts/quickstart "))
    return shlex.split(line)


FIZZBUZZ = "for i in range(1, 21):\n    print('FizzBuzz' if i % 15 == 0 else 'Fizz' if i % 3 == 0 else 'Buzz' if i % 5 == 0 else i)\n"


def test_the_first_command_shows_its_check_choosing_among_attempts(env, fake, tmp_path):
    # a model that answers with a plan first (seen from the 1.5B model), then, in a fresh attempt, does the work
    fake.extra_routes["/health"] = (200, {"status": "ok"})  # scripts/serve.py reuses a server that is up
    fake.extra_routes["/v1/models"] = (200, {"data": [{"id": "qwen2.5-coder-1.5b"}]})
    fake.script = [answer("I will write fizzbuzz.py and then run it."),
                   reply(call("write_file", path="fizzbuzz.py", content=FIZZBUZZ)),
                   reply(call("run_shell", command="python3 fizzbuzz.py")), answer("fizzbuzz.py prints 1 to 20.")]
    command = first_command()
    assert command[0] == "scripts/quickstart" and "--check" in command and "fizzbuzz.py" in command[-1]
    env["COLUMNS"] = "1000"
    r = run([str(ROOT / command[0]), *command[1:]], env, tmp_path)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "demo" / "fizzbuzz.py").read_text() == FIZZBUZZ
    shown = r.stderr[r.stderr.index("check failed"):]  # what the newcomer watches, in this order
    for step in ("attempt 1 changed no file, so it does not count", "attempt 2 (counted as 1 of 6)",
                 "→ write_file fizzbuzz.py", "check passed", "+ created fizzbuzz.py",
                 "exit code 0: attempt 2 passed the check (2 attempts in", "1 wrote nothing, 1 passed); created fizzbuzz.py"):
        assert step in shown, step
        shown = shown[shown.index(step):]
