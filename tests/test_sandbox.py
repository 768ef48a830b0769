"""Escape attempts against sandbox.py, run for real.

Each case runs a command the way tools.run_shell does (Popen of wrap(), environment() and
limit_resources, own process group, capped pipes, SIGKILL to the group on timeout), checks
that the attack failed, and, through the `ws` fixture, that nothing outside the workspace
changed: not its siblings, not its .git, not /, /etc, /usr, the home folder, the Python
prefix, the host's /tmp or the kernel's core_pattern.

Left out: the agent loop and the file tools (the adversarial end-to-end suite drives those
through a scripted model), and timed assertions: the overhead is printed, not asserted.
"""

import errno
import os
import resource
import shlex
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

import sandbox

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed")

CAP = 100_000  # bytes of each pipe the helper keeps
MARK = f"tooloop-escape-{os.getpid()}"  # in every path and command line an attack leaves
SECRET = "sk-test-secret-4242"
STABLE = ["/", "/etc", "/etc/passwd", "/etc/shadow", "/usr", "/usr/bin", "/usr/local/bin"]  # mtimes compared
WATCHED = ["/", "/etc", "/usr", "/usr/bin", "/tmp", str(Path.home()), sys.prefix, os.path.join(sys.prefix, "bin")]


def run(command: str, ws: Path, timeout: float = 20) -> SimpleNamespace:
    """Run one command as tools.run_shell will: the helper this whole file leans on."""
    start = time.monotonic()
    proc = subprocess.Popen(
        sandbox.wrap(command, ws), env=sandbox.environment(), preexec_fn=sandbox.limit_resources,
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        start_new_session=True, cwd=ws,
    )
    out, err = bytearray(), bytearray()
    readers = [threading.Thread(target=drain, args=pair) for pair in ((proc.stdout, out), (proc.stderr, err))]
    for reader in readers:
        reader.start()
    try:
        proc.wait(timeout)
        timed_out = False
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        timed_out = True
    for reader in readers:
        reader.join(10)
        assert not reader.is_alive(), "a pipe stayed open after the sandbox ended"
    return SimpleNamespace(code=proc.returncode, out=out.decode(errors="replace"),
                           err=err.decode(errors="replace"), timed_out=timed_out,
                           seconds=time.monotonic() - start)


def drain(pipe, kept: bytearray) -> None:
    """Keep the first CAP bytes but read to the end, so a chatty command never blocks."""
    while chunk := pipe.read1(65536):
        kept += chunk[: max(0, CAP - len(kept))]
    pipe.close()


def host_state(tmp_path: Path, ws: Path) -> dict:
    """What an escape would change: everything under tmp_path but the workspace (its .git
    included), stable host folders and files, files named with MARK in watched folders
    (other work on this machine may touch those folders concurrently), core_pattern."""
    state = {}
    for path in [tmp_path, *tmp_path.rglob("*"), *map(Path, STABLE)]:
        if path.is_relative_to(ws) and not path.is_relative_to(ws / ".git"):
            continue
        st = path.lstat()
        state[str(path)] = (st.st_mode, st.st_size, st.st_mtime_ns)
    state["marked"] = sorted(str(p) for folder in WATCHED for p in Path(folder).glob(f"*{MARK}*"))
    state["core_pattern"] = Path("/proc/sys/kernel/core_pattern").read_text()
    return state


def survivors(marker: str, wait: float = 5) -> list[str]:
    """Host processes whose command line holds `marker`, after giving them `wait` s to die."""
    deadline = time.monotonic() + wait
    while True:
        found = []
        for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
            try:
                text = cmdline.read_bytes()
            except OSError:
                continue  # exited while we looked
            if marker.encode() in text:
                found.append(text.replace(b"\0", b" ").decode(errors="replace"))
        if not found or time.monotonic() > deadline:
            return found
        time.sleep(0.02)


@pytest.fixture
def ws(tmp_path):
    """A git workspace, a sibling folder with a secret in it, and at teardown the check
    that nothing outside the workspace changed."""
    ws = tmp_path / "ws"
    ws.mkdir()
    subprocess.run(["git", "init", "-q", str(ws)], check=True)
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "secret.txt").write_text("outside-secret")
    before = host_state(tmp_path, ws)
    yield ws
    assert host_state(tmp_path, ws) == before


# --- the filesystem -------------------------------------------------------------------------

def test_touch_etc_fails(ws):
    r = run(f"touch /etc/{MARK}", ws)
    assert r.code != 0 and "Read-only file system" in r.err


@pytest.mark.parametrize("target", [
    "/usr/{m}", "/{m}", "/root/{m}", "{home}/{m}", "{prefix}/{m}", "{prefix}/bin/{m}",
    "{tmp}/{m}", "{tmp}/outside/{m}", "{tmp}/outside/secret.txt",
])
def test_writes_outside_the_workspace_fail(ws, target):
    path = target.format(m=MARK, home=Path.home(), prefix=sys.prefix, tmp=ws.parent)
    r = run(f"echo pwned > {path}", ws)
    # the folders around a workspace in /tmp exist inside only on the private /tmp, where
    # writing is allowed; the fixture checks that nothing reached the host either way
    assert r.code != 0 or Path(path).is_relative_to("/tmp"), r


def in_fresh_tmp(ws: Path) -> list[str]:
    """What a fresh sandbox /tmp holds: nothing, or the way to a workspace that is in /tmp."""
    return [ws.resolve().parts[2]] if ws.resolve().is_relative_to("/tmp") else []


def test_tmp_is_private(ws):
    r = run(f"echo inside > /tmp/{MARK} && cat /tmp/{MARK} && ls /tmp", ws)
    assert r.code == 0 and r.out.split() == ["inside", *sorted([MARK, *in_fresh_tmp(ws)])]
    assert not Path("/tmp", MARK).exists()  # never reached the host's /tmp


def test_files_outside_the_workspace_are_invisible(ws):
    r = run(f"cat {ws.parent}/outside/secret.txt", ws)
    assert r.code != 0 and "outside-secret" not in r.out
    r = run("ls -A /", ws)
    assert not set(r.out.split()) & {"home", "var", "run", "srv", "opt", "mnt", "media", "work", "sys", "boot"}
    r = run(f"ls -A {Path.home()}", ws)  # the real home holds at most the way to the bound Python and toolchains
    bound = [*sandbox._interpreter_dirs(), *sandbox._home_toolchains()[0].values()]
    assert set(r.out.split()) <= {Path(d).relative_to(Path.home()).parts[0] for d in bound
                                  if Path(d).is_relative_to(Path.home())}


@pytest.mark.parametrize("command", [
    "mount -o remount,rw /", "mount -o remount,rw /usr", "mount -t tmpfs none /etc",
    f"mount --bind {os.getcwd()} /mnt",
])
def test_mount_fails(ws, command):
    r = run(f"{command}; touch /usr/{MARK}", ws)
    assert r.code != 0 and "Read-only file system" in r.err


@pytest.mark.parametrize("command", [
    "cat /etc/shadow", "cat /etc/gshadow", "ln -s /etc/shadow s && cat s",
    "python -c \"print(open('/etc/shadow').read())\"", "cp /etc/shadow copy; cat copy",
])
def test_etc_shadow_unreadable(ws, command):
    r = run(command, ws)
    assert r.code != 0 and "root:" not in r.out, r


def test_etc_is_otherwise_usable(ws):
    r = run("id -un && getent passwd root && ls /etc/ssl/certs | head -1", ws)
    assert r.code == 0 and r.out.startswith("root\nroot:x:0:0:")


def test_kernel_settings_are_read_only(ws):
    # writes the value back unchanged: if this ever succeeds, the host is still unharmed
    r = run("cat /proc/sys/kernel/core_pattern > /proc/sys/kernel/core_pattern", ws)
    assert r.code != 0 and "Read-only file system" in r.err


def test_no_sys_run_or_host_devices(ws):
    r = run("ls /sys /run /var/run /dev/vda /dev/sda /dev/mem /var/run/docker.sock; ls /dev", ws)
    assert r.err.count("No such file or directory") == 7
    assert set(r.out.split()) <= {"core", "fd", "full", "null", "ptmx", "pts", "random", "shm",
                                  "stderr", "stdin", "stdout", "tty", "urandom", "zero"}


def test_git_is_read_only_but_the_workspace_is_writable(ws):
    attacks = ["touch .git/hooks/pre-commit", "echo x >> .git/config", "rm -rf .git",
               "mv .git moved", "chmod -R 777 .git", "ln -s /tmp .git/evil"]
    r = run(" ; ".join(f"{a} && echo ESCAPED" for a in attacks) + " ; echo hello > file.txt", ws)
    assert "ESCAPED" not in r.out
    assert (ws / "file.txt").read_text() == "hello\n"
    assert r.err.count("Read-only file system") + r.err.count("Device or resource busy") >= len(attacks)


def test_protected_paths_are_read_only_and_secrets_read_as_nothing(ws):
    # protect.mounts: what exists is mounted over; nothing is made for the names that do not exist
    (ws / ".env").write_text("TOKEN=s3cret\n")
    (ws / ".husky").mkdir()
    (ws / ".husky" / "pre-commit").write_text("npm test\n")
    r = run("cat .env; base64 .env; echo x >> .husky/pre-commit; mkdir app && touch app/ok; ls -A", ws)
    assert "s3cret" not in r.out + r.err and "VE9LRU" not in r.out  # nor its base64
    assert "cat: .env: Permission denied" in r.err and "cannot create .husky/pre-commit: Read-only file system" in r.err
    assert r.out == ".env\n.git\n.husky\napp\n"
    assert (ws / ".husky" / "pre-commit").read_text() == "npm test\n" and (ws / "app" / "ok").exists()
    assert sorted(os.listdir(ws)) == [".env", ".git", ".husky", "app"]


def test_credential_files_and_folders_read_as_nothing(ws):
    # protect.SECRETS beyond .env: a file is /dev/null, a folder (.aws, .config/gcloud) an empty one
    (ws / ".netrc").write_text("machine h login u password s3cret\n")
    (ws / ".aws").mkdir()
    (ws / ".aws" / "credentials").write_text("aws_secret_access_key = s3cret\n")
    (ws / ".config" / "gcloud").mkdir(parents=True)
    (ws / ".config" / "gcloud" / "token.json").write_text('{"t": "s3cret"}\n')
    r = run("cat .netrc; ls -A .aws .config/gcloud; cat .aws/credentials; touch .aws/x; grep -rs s3cret . ; echo end", ws)
    assert "s3cret" not in r.out + r.err
    assert r.out == ".aws:\n\n.config/gcloud:\nend\n"
    assert "cat: .netrc: Permission denied" in r.err and "cannot touch '.aws/x': Read-only file system" in r.err
    assert (ws / ".aws" / "credentials").read_text() == "aws_secret_access_key = s3cret\n"


def test_a_planted_git_symlink_does_not_unmask_etc(ws):
    # a workspace without a .git, where one call plants .git -> ../../../etc for the next
    plain = ws / "plain"
    plain.mkdir()
    r1 = run(f"ln -s {os.path.relpath('/etc', plain)} .git && ls .git/passwd", plain)
    assert r1.code == 0
    r2 = run("cat /etc/shadow; cat .git/shadow", plain)
    assert "root:" not in r2.out and r2.err.count("Permission denied") == 2


def test_workspace_is_its_real_path_and_the_cwd(ws):
    r = run("pwd", ws)
    assert r.out.strip() == str(ws.resolve())


def test_the_workspace_cannot_be_root():
    with pytest.raises(ValueError):
        sandbox.wrap("true", Path("/"))


# --- the environment ------------------------------------------------------------------------

@pytest.mark.parametrize("command", [
    "env", "cat /proc/self/environ", "cat /proc/1/environ", "cat /proc/*/environ",
    "ps eww -e", f"cat /proc/{os.getpid()}/environ", "python -c 'import os; print(os.environ)'",
])
def test_parent_environment_does_not_leak(ws, monkeypatch, command):
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    monkeypatch.setenv("TOOLOOP_API_KEY", SECRET)
    r = run(command, ws)
    assert SECRET not in r.out + r.err and "API_KEY" not in r.out
    assert SECRET not in str(sandbox.environment())


def test_home_is_private_and_writable(ws):
    r = run("echo $HOME && touch ~/.cache-test && ls -A ~", ws)
    assert r.code == 0 and r.out.split() == ["/tmp", *sorted([".cache-test", *in_fresh_tmp(ws)])]


# --- the network and host sockets -----------------------------------------------------------

@pytest.fixture
def listener():
    """A TCP port on the host's loopback that nothing in the sandbox should reach."""
    server = socket.create_server(("127.0.0.1", 0))
    server.setblocking(False)
    yield server
    with pytest.raises(BlockingIOError):
        server.accept()  # no connection ever arrived
    server.close()


def test_tcp_to_host_loopback_fails(ws, listener):
    port = listener.getsockname()[1]
    r = run(f"python -c \"import socket; socket.create_connection(('127.0.0.1', {port}), 3)\"", ws)
    assert r.code != 0 and "ConnectionRefusedError" in r.err


def test_bash_dev_tcp_fails(ws, listener):
    port = listener.getsockname()[1]
    r = run(f"bash -c 'echo hi > /dev/tcp/127.0.0.1/{port}' && echo CONNECTED", ws)
    assert "CONNECTED" not in r.out and "Connection refused" in r.err


@pytest.mark.parametrize("command", [
    "python -c \"import socket; print(socket.getaddrinfo('pypi.org', 443))\"",
    "getent hosts pypi.org",
    "curl -sS --max-time 5 https://pypi.org/simple/ -o /dev/null",
    "python -c \"import socket; socket.create_connection(('151.101.0.223', 443), 3)\"",
])
def test_internet_and_dns_fail(ws, command):
    r = run(command, ws)
    assert r.code != 0, r


def test_host_unix_sockets_unreachable(ws, tmp_path_factory):
    path = tmp_path_factory.mktemp("host") / "host.sock"
    named, abstract = socket.socket(socket.AF_UNIX), socket.socket(socket.AF_UNIX)
    named.bind(str(path))
    abstract.bind(f"\0{MARK}")  # abstract sockets belong to the network namespace
    for s in (named, abstract):
        s.listen()
        s.setblocking(False)
    try:
        script = ("import socket, sys\n"
                  f"for name in [{str(path)!r}, '\\0{MARK}']:\n"
                  "    try: socket.socket(socket.AF_UNIX).connect(name); print('CONNECTED', name)\n"
                  "    except OSError as e: print('refused', e.errno)\n")
        r = run(f"python -c {shlex.quote(script)}", ws)
        assert "CONNECTED" not in r.out and r.out.count("refused") == 2
        for s in (named, abstract):
            with pytest.raises(BlockingIOError):
                s.accept()
    finally:
        named.close()
        abstract.close()
        path.unlink()


# --- privileges -----------------------------------------------------------------------------

@pytest.mark.parametrize("command", ["mknod disk b 8 0", "mknod /tmp/mem c 1 1", "mkfifo /usr/fifo"])
def test_mknod_fails(ws, command):
    r = run(command, ws)
    assert r.code != 0 and not (ws / "disk").exists()


@pytest.mark.parametrize("command", [
    "unshare -U true", "unshare -r true", "unshare -m true", "unshare -n true", "unshare -p -f true",
])
def test_unshare_fails(ws, command):
    r = run(command, ws)
    assert r.code != 0, r


def test_no_capabilities(ws):
    r = run("grep -E '^Cap(Eff|Prm|Bnd|Amb)' /proc/self/status", ws)
    assert [line.split()[1] for line in r.out.splitlines()] == ["0000000000000000"] * 4


def test_host_processes_are_invisible_and_unkillable(ws):
    victim = subprocess.Popen(["sleep", "60"])
    try:
        r = run(f"kill -9 {victim.pid}; ps -e -o pid= | wc -l", ws)
        assert "No such process" in r.err
        assert int(r.out.split()[-1]) < 6  # bwrap's init, sh, ps, wc
        assert victim.poll() is None
    finally:
        victim.kill()
        victim.wait()


# --- processes and resources ----------------------------------------------------------------

@pytest.mark.parametrize("n, command", list(enumerate([
    "sleep {s} &",
    "sleep {s} >/dev/null 2>&1 &",
    "setsid sleep {s} &",
    "setsid -f sleep {s} >/dev/null 2>&1",
    "nohup sleep {s} >/dev/null 2>&1 &",
    "(sleep {s} &) &",
    "python -c 'import os, subprocess; os.fork() or (os.setsid(), subprocess.Popen([\"sleep\", \"{s}\"], "
    "stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))'",
])))
def test_background_processes_do_not_survive(ws, n, command):
    seconds = f"300.{os.getpid()}{n}"  # unique, so we can find it in the process table
    r = run(command.format(s=seconds) + "\necho started", ws)
    assert r.code == 0 and "started" in r.out and not r.timed_out  # the call ends with the shell
    assert survivors(seconds) == []


def test_endless_printer_is_killed_with_capped_output(ws):
    r = run(f"yes {MARK}", ws, timeout=2)
    assert r.timed_out and len(r.out) == CAP and r.out.startswith(MARK)
    assert survivors(MARK) == []


def test_2gib_allocation_fails(ws):
    r = run("python -c 'b = bytearray(256 << 20); print(\"256 MiB ok\"); b = bytearray(2 << 30)'", ws)
    assert "256 MiB ok" in r.out and "MemoryError" in r.err


def test_file_size_bomb_stops_at_the_limit(ws):
    limit = sandbox.RLIMITS[resource.RLIMIT_FSIZE]
    r = run("dd if=/dev/zero of=big bs=1M count=1024; dd if=/dev/zero of=/tmp/big bs=1M count=1024; "
            "stat -c %s /tmp/big", ws)
    assert (ws / "big").stat().st_size == limit
    assert r.out.split() == [str(limit)]  # the copy in /tmp stopped there too


def test_open_files_are_limited(ws):
    r = run("python -c \"fs = [open('/dev/null') for _ in range(5000)]\"", ws)
    assert "Too many open files" in r.err


def fork_bound_active() -> bool:
    return os.geteuid() != 0 or "pids" in sandbox._cgroups()


FORK_LOOP = f"""
import os, time  # {MARK}
n = 0
try:
    while n < 2000:
        if os.fork() == 0:
            time.sleep(60)
            os._exit(0)
        n += 1
except OSError as e:
    print("refused", e.errno)
print("forked", n)
"""


@pytest.mark.skipif(not fork_bound_active(), reason="no task limit can be set here (root without a pids cgroup)")
def test_fork_loop_is_bounded(ws):
    r = run(f"python -c {shlex.quote(FORK_LOOP)}", ws)
    assert f"refused {errno.EAGAIN}" in r.out
    assert int(r.out.split()[-1]) < sandbox.MAX_TASKS
    assert survivors(MARK) == []


@pytest.mark.skipif(not fork_bound_active(), reason="no task limit can be set here (root without a pids cgroup)")
def test_fork_bomb_is_contained(ws):
    r = run(f"bomb() {{ bomb | bomb & }}; bomb; sleep 3  # {MARK}", ws, timeout=10)
    assert "Cannot fork" in r.err or "Resource temporarily unavailable" in r.err
    assert survivors(MARK) == []


@pytest.mark.skipif("memory" not in sandbox._cgroups(), reason="no memory cgroup can be made here")
def test_total_memory_is_bounded(ws):
    # six processes of 800 MiB each: every one is under the data limit, together
    # they are over MAX_MEMORY, so the kernel kills some of them inside the sandbox
    one = "python -c 'import time; b = bytearray(800 << 20); time.sleep(3); print(\"held\")'"
    r = run(f"for i in 1 2 3 4 5 6; do {one} & done; wait", ws, timeout=60)
    assert 0 < r.out.count("held") < 6


def test_limits_inside(ws):
    r = run("ulimit -t; ulimit -d; ulimit -v; ulimit -f; ulimit -n; ulimit -c", ws)
    assert r.out.split() == ["300", str(1 << 20), "unlimited", str(64 << 20 >> 9), "1024", "0"]


# --- what must still work -------------------------------------------------------------------

def test_users_python_runs_and_writes_to_the_workspace(ws):
    r = run(f"{sys.executable} -c \"open('out.txt', 'w').write('written')\" && "
            "python -c 'import os, sys; print(os.path.realpath(sys.executable))'", ws)
    assert r.code == 0 and (ws / "out.txt").read_text() == "written"
    assert r.out.strip() == os.path.realpath(sys.executable)  # `python` on PATH is the user's


@pytest.mark.parametrize("command, expected", [
    ("printf 'int main(){puts(\"compiled\");}' > t.c && gcc -w t.c -o t && ./t", "compiled"),
    ("git status --short && echo git-ok", "git-ok"),
    ("python -m pip --version >/dev/null && echo pip-ok", "pip-ok"),
    ("python -c 'import multiprocessing as m; print(sum(m.Pool(2).map(abs, [-1, -2])))'", "3"),
    ("node -e 'console.log(6 * 7)'", "42"),
])
def test_toolchains_work(ws, command, expected):
    if command.split()[0] in ("node",) and not shutil.which("node"):
        pytest.skip("node is not installed")
    r = run(command, ws)
    assert r.code == 0 and r.out.split()[-1] == expected, r


def test_exit_code_and_both_streams(ws):
    r = run("echo out; echo err >&2; exit 3", ws)
    assert (r.code, r.out, r.err) == (3, "out\n", "err\n")


def test_unavailable_without_bwrap(tmp_path):
    # a fresh interpreter whose PATH has no bwrap: the probe must say no, and wrap refuse
    script = ("import sandbox, pathlib\nprint(sandbox.available())\n"
              "try: sandbox.wrap('true', pathlib.Path('.'))\nexcept RuntimeError: print('refused')\n")
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=tmp_path,
                       env={"PATH": str(tmp_path), "PYTHONPATH": str(Path(sandbox.__file__).parent)})
    assert r.stdout.split() == ["False", "refused"], r.stderr


@pytest.fixture
def fresh_probe():
    """Forget the cached probe before and after, so no test sees another's bwrap."""
    sandbox._bwrap.cache_clear()
    yield sandbox.probe
    sandbox._bwrap.cache_clear()


def test_probe_says_the_real_bwrap_works(fresh_probe):
    assert fresh_probe() is None
    assert sandbox.available()


def test_probe_says_why_when_bwrap_is_missing(fresh_probe, tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))  # an empty folder: no bwrap on PATH
    assert fresh_probe() == "bwrap not found on PATH"
    assert not sandbox.available()


def test_probe_runs_bwrap_and_reports_its_first_error_line(fresh_probe, tmp_path, monkeypatch):
    # installed, but failing as it does where user namespaces are off: on PATH is not enough
    fake = tmp_path / "bwrap"
    fake.write_text("#!/bin/sh\necho 'bwrap: No permissions to create new namespace' >&2\n"
                    "echo 'second line' >&2\nexit 1\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}:{os.environ['PATH']}")
    assert fresh_probe() == "bwrap fails here: bwrap: No permissions to create new namespace"
    with pytest.raises(RuntimeError, match="no sandbox: bwrap fails here"):
        sandbox.wrap("true", tmp_path)


def test_cgroups_are_removed_at_exit(tmp_path):
    # the last command leaves a background job that is still dying when Python exits
    script = ("import pathlib, subprocess, sandbox\n"
              "argv = sandbox.wrap('sleep 30 & true', pathlib.Path.cwd())\n"
              "subprocess.run(argv, env=sandbox.environment(), preexec_fn=sandbox.limit_resources)\n"
              "print(*sandbox._cgroups().values())\n")
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=tmp_path,
                       env={"PATH": os.environ["PATH"], "PYTHONPATH": str(Path(sandbox.__file__).parent)})
    assert r.returncode == 0, r.stderr
    assert len(r.stdout.split()) == len(set(sandbox._cgroups().values()))
    for group in r.stdout.split():
        assert not Path(group).exists()


def test_a_venv_running_tooloop_stays_read_only_inside_the_workspace(ws):
    # tooloop run from the project's own .venv: the model must not plant code in it
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(ws / ".venv")], check=True)
    script = ("import pathlib, subprocess, sandbox\n"
              "cmd = 'touch .venv/bin/evil; touch fine; python -c \"import sys; print(sys.prefix)\"'\n"
              "r = subprocess.run(sandbox.wrap(cmd, pathlib.Path.cwd()), env=sandbox.environment(),\n"
              "                   preexec_fn=sandbox.limit_resources, capture_output=True, text=True)\n"
              "print(r.stdout, r.stderr)\n")
    r = subprocess.run([str(ws / ".venv" / "bin" / "python"), "-c", script], capture_output=True, text=True,
                       cwd=ws, env={"PATH": os.environ["PATH"], "PYTHONPATH": str(Path(sandbox.__file__).parent)})
    assert "Read-only file system" in r.stdout and str(ws / ".venv") in r.stdout, r.stderr
    assert (ws / "fine").exists() and not (ws / ".venv" / "bin" / "evil").exists()


# --- the cost -------------------------------------------------------------------------------

def test_print_sandbox_overhead(ws, capsys):
    def median_ms(start, preexec) -> float:
        times = []
        for _ in range(30):
            t = time.perf_counter()
            subprocess.run(start, env=sandbox.environment(), cwd=ws, stdin=subprocess.DEVNULL,
                           capture_output=True, start_new_session=True,
                           preexec_fn=preexec, check=True)
            times.append(time.perf_counter() - t)
        return 1000 * statistics.median(times)

    plain = median_ms(["/bin/sh", "-c", "true"], None)
    boxed = median_ms(sandbox.wrap("true", ws), sandbox.limit_resources)
    with capsys.disabled():
        print(f"\nsandbox overhead: {boxed - plain:.1f} ms per call "
              f"(median of 30: sandboxed `true` {boxed:.1f} ms, unsandboxed {plain:.1f} ms)")
