"""Confine one shell command with bubblewrap (bwrap): the sandbox behind tools.run_shell.

tools.run_shell uses four functions:

    subprocess.Popen(wrap(command, workspace), env=environment(), preexec_fn=limit_resources,
                     start_new_session=True, ...)

and asks available() first; probe() says why not, in one line (the agent at start-up and
scripts/setup ask it). Inside the sandbox a command sees:

- /usr, /etc and the prefix of the Python running tooloop, read-only. Entries of /etc that
  other users may not read (/etc/shadow, private keys) are hidden: root keeps owner rights
  without any capability, so dropping capabilities alone would not hide them.
- the toolchains that installers put in the user's home (HOME_TOOLCHAINS: rustup and cargo,
  nvm, go, pyenv, sdkman): their programs and libraries, read-only at their real paths, their
  bin folders on PATH; never their etc or conf folders (an npmrc, Maven's settings.xml), nothing
  else of the home folder.
- the workspace read-write at its real path, but the paths there that host tools run or trust
  (.git, __pycache__, hooks folders, shell rc files: protect.py) read-only, and .env and
  credential files empty (a credential folder such as .aws: an empty folder);
- a private empty /tmp, which is also $HOME; a fresh, read-only /proc; a minimal /dev;
- no network but its own loopback, no host process or IPC, no capabilities, no new user
  namespaces, no terminal (a new session), a session keyring of its own (empty), and an
  environment of five variables (and RUSTUP_HOME, PYENV_ROOT for those toolchains);
- per process: CPU time, 1 GiB of data (memory it can write: see RLIMITS), 64 MiB per file,
  1024 open files, no core dump; for the whole sandbox: 256 tasks and 4 GiB of memory (a
  cgroup, where we may make one: root with a writable cgroup tree), or 256 tasks through
  RLIMIT_NPROC (other users).

When the command exits, bwrap exits; --die-with-parent then kills the sandbox's PID 1, and
the kernel kills everything left in its PID namespace, so background jobs do not survive.

Deliberately left out: a seccomp filter (the whole syscall surface of the kernel stays
reachable), a network allowlist or proxy, a disk quota on the workspace, /tmp that lasts
from one call to the next, devices and GPUs, the caches toolchains keep in the home folder
(cargo's registry, ~/go/pkg/mod, ~/.m2: a build needs its dependencies in the workspace, or
vendored), toolchains elsewhere in the home folder (a Go unpacked into ~/go, ~/sdk), and
sandboxes for macOS or Windows (there available() is False, and the caller decides what to do).
"""

import atexit
import ctypes
import errno
import functools
import glob
import os
import platform
import resource
import shutil
import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import protect

MAX_TASKS = 256  # processes and threads in one sandbox
MAX_MEMORY = 4 << 30  # bytes of RAM for one whole sandbox, its /tmp included (cgroup only)
RLIMITS = {  # per process, soft = hard, so the command cannot raise them again
    resource.RLIMIT_CPU: 300,  # seconds of CPU; the wall-clock timeout is the caller's
    # Memory a process can write (brk, malloc, private writable mappings, thread stacks): a 2 GiB
    # allocation fails. Not RLIMIT_AS, which counts address space merely reserved: the JVM reserves
    # a heap of half that limit and 1 GiB for classes before it starts a thread, so under 1 GiB of
    # address space the mmap of its first thread stack failed ("pthread_create failed (EAGAIN)"),
    # and glibc, Go, V8 and rustc reserve far more than they use too. What all processes use
    # together is the memory cgroup's to bound (MAX_MEMORY), where there is one.
    resource.RLIMIT_DATA: 1 << 30,
    resource.RLIMIT_FSIZE: 64 << 20,  # largest file a process may write
    resource.RLIMIT_NOFILE: 1024,
    resource.RLIMIT_CORE: 0,
}
# controller: (limit file in cgroup v1, in cgroup v2, value)
CGROUP_LIMITS = {
    "pids": ("pids.max", "pids.max", MAX_TASKS),
    "memory": ("memory.limit_in_bytes", "memory.max", MAX_MEMORY),
}
SYSTEM_DIRS = ["/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc"]
SYSTEM_PATH = "/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin"
# Toolchains their usual installers put in the home folder: {folder under $HOME: (what of it is
# bound read-only, its bin folders for PATH), as globs}. Only programs and libraries are bound, never
# a toolchain's etc or conf, where a global npmrc or Maven's settings.xml keeps a registry's
# password; the folders of tooloop's own PATH inside a bound one go on PATH too (nvm's node: the
# version the user's shell chose).
PROGRAMS = ("bin", "lib", "lib64", "libexec", "include")
HOME_TOOLCHAINS = {
    # rustup's toolchains (RUSTUP_HOME), the file that names the default one and the folder it checks
    # them against; its proxies (cargo, rustc) are in .cargo/bin, not all of .cargo:
    # credentials.toml holds the registry token
    ".rustup": (["settings.toml", "update-hashes", *(f"toolchains/*/{p}" for p in PROGRAMS)], []),
    ".cargo/bin": (["."], ["."]),
    ".nvm": ([f"versions/node/*/{p}" for p in PROGRAMS], []),  # not versions/node/*/etc/npmrc
    "go/bin": (["."], ["."]),  # what `go install` built; not all of ~/go (GOPATH): src may hold the user's code
    ".pyenv": (["version", "bin", "libexec", "shims", *(f"versions/*/{p}" for p in PROGRAMS)], ["bin", "shims"]),
    # java, gradle, maven, kotlin...: a JDK's conf too (its security policy: the JVM does not start
    # without it); not maven's conf, with settings.xml
    ".sdkman/candidates": ([f"*/*/{p}" for p in PROGRAMS] + ["java/*/conf"], ["*/current/bin"]),
}
HOME_VARIABLES = {".rustup": "RUSTUP_HOME", ".pyenv": "PYENV_ROOT"}  # how they find themselves, with $HOME=/tmp
SYS_KEYCTL = {"x86_64": 250, "amd64": 250, "aarch64": 219, "arm64": 219}.get(platform.machine().lower())
KEYCTL_JOIN_SESSION_KEYRING = 1
PR_SET_DUMPABLE = 4  # prctl option
_syscall = ctypes.CDLL(None, use_errno=True).syscall  # loaded now: limit_resources runs after fork
_syscall.restype = ctypes.c_long

# --unshare-all covers net, pid, ipc, uts, cgroup and (where it can) user. --disable-userns
# (bwrap >= 0.8) stops the command from making user namespaces of its own, where much of
# the kernel's attack surface lives; it needs an explicit --unshare-user.
STRONG = ("--unshare-all", "--unshare-user", "--disable-userns")
BASIC = ("--unshare-all",)


def available() -> bool:
    """True if bwrap is installed and a sandboxed `true` really runs here (probed once)."""
    return probe() is None


def probe() -> str | None:
    """None if the sandbox really works here, else one short line saying why.

    Being on PATH is not enough: bwrap can be installed and still fail, most often because
    the kernel or a container forbids unprivileged user namespaces. So this runs `true`
    through the very argv wrap() builds, with a 10 s timeout, once per process (cached in
    _bwrap; tests call _bwrap.cache_clear()). For example, without bubblewrap:

        >>> probe()
        'bwrap not found on PATH'
    """
    found = _bwrap()
    return found if isinstance(found, str) else None


def wrap(command: str, workspace: Path, at: Path | None = None) -> list[str]:
    """The argv that runs `/bin/sh -c command` in the sandbox, in the workspace: the folder
    `workspace` (a run's copy) mounted at `at` (the user's workspace, so a command sees its own
    path: `pwd`, tracebacks), or at its own path.

    For example wrap("ls", Path("/home/me/app")) gives, shortened:
    [bwrap, --unshare-all, ..., --ro-bind /usr /usr, ..., --bind /home/me/app /home/me/app,
     --ro-bind /home/me/app/.git /home/me/app/.git, --chdir /home/me/app, --, /bin/sh, -c, ls]
    """
    found = _bwrap()
    if isinstance(found, str):
        raise RuntimeError(f"no sandbox: {found}")
    return _argv(*found, command, Path(workspace), Path(at) if at else None)


def environment() -> dict[str, str]:
    """The whole environment of bwrap and of the command; nothing comes from os.environ.

    subtle: --clearenv only clears the command's environment. bwrap's own, which the command
    can read as /proc/1/environ, is what we start bwrap with, so it must be clean already.
    """
    interpreters = dict.fromkeys(  # the user's Python comes first on PATH
        [os.path.dirname(sys.executable), os.path.dirname(os.path.realpath(sys.executable))]
    )
    folders, bins, _ = _home_toolchains()
    return {
        "PATH": ":".join([*filter(None, interpreters), *bins, SYSTEM_PATH]),  # "" would mean the cwd
        "HOME": "/tmp",  # writable, private, and not the real home with its dotfiles
        "LANG": "C.UTF-8",
        "TERM": "dumb",
        "PYTHONDONTWRITEBYTECODE": "1",  # no __pycache__ for protect.clean to remove after `python x.py`
        **{HOME_VARIABLES[name]: path for name, path in folders.items() if name in HOME_VARIABLES},
    }


def undumpable() -> None:
    """Make this process non-dumpable (prctl PR_SET_DUMPABLE 0), for --unsafe-no-sandbox.

    An unconfined command runs as the same user as the agent, and could read the API key in
    /proc/<agent>/environ (the environment the agent started with) or its memory. For a
    non-dumpable process, the kernel lets only a process with CAP_SYS_PTRACE read those files or
    attach to it: so this holds against a user's commands, not against root's. The commands'
    own environment is environment(), without the key, with or without the sandbox.
    """
    if sys.platform == "linux" and ctypes.CDLL(None, use_errno=True).prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "cannot make the agent non-dumpable")


def limit_resources() -> None:
    """preexec_fn: between fork and exec of bwrap, so all it starts inherits the limits.

    Only system calls here: Python forked us while other threads may hold locks.
    """
    for group in set(_cgroups().values()):  # made by wrap(), in the parent
        fd = os.open(group / "cgroup.procs", os.O_WRONLY)
        try:
            os.write(fd, str(os.getpid()).encode())
        finally:
            os.close(fd)
    for which, value in RLIMITS.items():
        _, hard = resource.getrlimit(which)
        if hard != resource.RLIM_INFINITY:
            value = min(value, hard)  # never try to raise a limit: only root may
        resource.setrlimit(which, (value, value))
    join_new_keyring()


def join_new_keyring() -> None:
    """Give the sandbox a new, empty session keyring (a system call; limit_resources calls it).

    bwrap keeps the caller's session keyring, so without this `keyctl print` inside could read
    the keys the user holds there (tokens, passphrases). If the kernel or a seccomp filter
    refuses keyctl altogether (ENOSYS, EPERM), the command cannot use it either; any other
    failure stops the command (Popen raises), rather than run it with the user's keys.
    """
    if SYS_KEYCTL is None:  # a machine whose syscall number we do not know: nothing to join with
        return
    if _syscall(ctypes.c_long(SYS_KEYCTL), ctypes.c_long(KEYCTL_JOIN_SESSION_KEYRING), None) == -1:
        if ctypes.get_errno() not in (errno.ENOSYS, errno.EPERM):
            raise OSError(ctypes.get_errno(), "cannot give the sandbox a session keyring of its own")


PARENT_CONFIGURATION = ("pytest.ini", ".pytest.ini", "pytest.toml", ".pytest.toml", "pyproject.toml", "tox.ini",
                        "setup.cfg", "conftest.py")


def parent_configuration(workspace: Path) -> list[str]:
    """The test runner configuration files in the folders above `workspace`, up to the home folder
    (not included) or the root: what a runner started in the workspace reads there. Regular files
    only, never through a link."""
    home, found = Path.home().resolve(), []
    for folder in workspace.parents:
        if folder == home or folder == Path("/"):
            break
        for name in PARENT_CONFIGURATION:
            try:
                if stat.S_ISREG(os.lstat(folder / name).st_mode):
                    found.append(str(folder / name))
            except OSError:
                continue
    return found


def _argv(bwrap: str, namespaces: tuple[str, ...], command: str, workspace: Path, at: Path | None = None) -> list[str]:
    ws = workspace.resolve()
    shown = at.resolve() if at else ws  # where the command sees the workspace
    seen = lambda path: str(shown / Path(path).relative_to(ws))  # noqa: E731  (a path of ws, as mounted)
    if ws == Path("/") or shown == Path("/"):
        raise ValueError("the workspace cannot be /: it would expose the whole host")
    _cgroups()  # create them now, in the parent: limit_resources runs after fork
    argv = [bwrap, *namespaces, "--cap-drop", "ALL", "--die-with-parent", "--new-session"]
    argv += ["--clearenv"]
    for name, value in environment().items():
        argv += ["--setenv", name, value]

    for path in SYSTEM_DIRS:
        if os.path.islink(path):  # merged /usr: /bin -> usr/bin; recreate the link
            argv += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            argv += ["--ro-bind", path, path]
    for path, is_dir in _etc_secrets():  # after /etc, so these mounts cover it
        if is_dir:
            argv += ["--tmpfs", path, "--remount-ro", path]
        else:  # /dev/null on a nodev mount: opening it is refused outright
            argv += ["--ro-bind", "/dev/null", path]

    # subtle: /proc must be read-only. bwrap hides /proc/sys only when it is not writable,
    # and for uid 0 its files are (by owner permission, no capability needed): root could
    # set kernel.core_pattern to a program of its own, which the host then runs as root.
    argv += ["--tmpfs", "/tmp", "--proc", "/proc", "--remount-ro", "/proc", "--dev", "/dev"]
    for path in _interpreter_dirs():
        argv += ["--ro-bind", path, path]

    # the runner configuration of the folders above the workspace (a parent pytest.ini, conftest.py),
    # read-only, so a check finds what it finds in the real folder; nothing else of theirs
    argv += [arg for path in parent_configuration(shown) for arg in ("--ro-bind", path, path)]
    argv += ["--bind", str(ws), str(shown)]
    # Inside the workspace, the command must not change what host tools run or trust (protect.py),
    # nor the Python that runs tooloop (a venv in the project): they would execute what it wrote.
    # Each is a mount point the command cannot replace; secrets are masked after, over all of them.
    read_only, masked = protect.mounts(ws)
    # the home toolchains come after the workspace, so that they stay read-only even in a workspace
    # that holds them (tooloop run in the home folder): the user's own shell runs them later
    toolchains = _home_toolchains()[2]
    for path in [*read_only, *(p for p in _interpreter_dirs() if Path(p).is_relative_to(ws))]:
        argv += ["--ro-bind", path, seen(path)]
    for path in toolchains:
        argv += ["--ro-bind", path, path]
    for path in masked:  # a secret file reads as nothing; a secret folder (.aws, .ssh) is empty
        argv += ["--tmpfs", seen(path), "--remount-ro", seen(path)] if os.path.isdir(path) else [
            "--ro-bind", "/dev/null", seen(path)]
    # the root itself is bwrap's own tmpfs: make it read-only too, now that all mount points exist
    argv += ["--remount-ro", "/", "--chdir", str(shown), "--"]

    # RLIMIT_NPROC counts per user and per user namespace, so set inside the sandbox it
    # counts only the sandbox's tasks. It does nothing for uid 0: there the cgroup does it.
    prlimit = shutil.which("prlimit", path=SYSTEM_PATH)
    if os.geteuid() != 0 and prlimit:
        argv += [prlimit, f"--nproc={MAX_TASKS}", "--"]
    return argv + ["/bin/sh", "-c", command]


@functools.cache
def _bwrap() -> tuple[str, tuple[str, ...]] | str:
    """bwrap's path and the strongest namespace flags that really work here, else why none do."""
    path = shutil.which("bwrap")
    if path is None:
        return "bwrap not found on PATH"
    why = ""
    with tempfile.TemporaryDirectory() as ws:
        for namespaces in (STRONG, BASIC):  # old bwrap, or no user namespaces: fall back
            try:
                probe = subprocess.run(
                    _argv(path, namespaces, "true", Path(ws)),
                    env=environment(),
                    preexec_fn=limit_resources,
                    stdin=subprocess.DEVNULL,
                    capture_output=True,
                    timeout=10,
                )
            except subprocess.TimeoutExpired:
                why = "a sandboxed `true` did not finish in 10 s"
                continue
            except (OSError, subprocess.SubprocessError) as error:
                why = str(error)
                continue
            if probe.returncode == 0:
                return path, namespaces
            # the last attempt's reason is kept: BASIC needs the least, so it says the most
            lines = probe.stderr.decode(errors="replace").strip().splitlines()
            why = lines[0].strip() if lines else f"exit code {probe.returncode}, no message"
    return f"bwrap fails here: {why}"


@functools.cache
def _etc_secrets() -> tuple[tuple[str, bool], ...]:
    """(path, is_dir) for each entry of /etc that other users may not read, but we may.

    These are what the system itself marks secret: shadow, gshadow, ssl/private, a database's
    pg_hba.conf. A directory counts if others may not enter it, a file if they may not read it.
    For root that is all of them; for other users, only those their groups give them.
    """
    hidden = []
    for top, dirs, files in os.walk("/etc"):
        for name in dirs + files:
            path = os.path.join(top, name)
            try:
                mode = os.lstat(path).st_mode
            except OSError:
                continue
            is_dir = stat.S_ISDIR(mode)
            if stat.S_ISLNK(mode) or mode & (stat.S_IXOTH if is_dir else stat.S_IROTH):
                continue  # public, or a link resolved inside the sandbox, where its target is hidden
            if is_dir:
                dirs.remove(name)  # hidden as a whole (if need be): no need to look inside
            # each mount costs bwrap time: hide only what we could read (root: all of them)
            if os.access(path, os.X_OK if is_dir else os.R_OK):
                hidden.append((path, is_dir))
    return tuple(hidden)


def _interpreter_dirs() -> list[str]:
    """The prefixes of the Python running tooloop: a venv and the install it was made from.

    A Python outside /usr (pyenv under the home directory, conda in /opt) would not run
    inside otherwise; these are bound read-only, so the command can use but not change them.
    """
    real_prefix = os.path.dirname(os.path.dirname(os.path.realpath(sys.executable)))
    dirs = dict.fromkeys(os.path.realpath(p) for p in (sys.prefix, sys.base_prefix, real_prefix))
    return [d for d in dirs if d != "/" and d != "/usr" and not d.startswith("/usr/")]


def _home_toolchains() -> tuple[dict[str, str], list[str], list[str]]:
    """({name in HOME_TOOLCHAINS: its real path} for those that exist, their bin folders for PATH,
    what of them to bind: their programs and libraries).

    For example, with rustup installed for the user:

        >>> _home_toolchains()
        ({'.rustup': '/home/me/.rustup', '.cargo/bin': '/home/me/.cargo/bin'}, ['/home/me/.cargo/bin'],
         ['/home/me/.rustup/settings.toml', '/home/me/.rustup/toolchains/stable-x86_64-unknown-linux-gnu/bin', ...])

    Read again at each call (a few stat calls): the user may install one while tooloop runs.
    """
    home = os.path.realpath(Path.home())
    if home == "/":
        return {}, [], []  # no home folder: (bind nothing of the root)
    folders = {name: os.path.realpath(os.path.join(home, name)) for name in HOME_TOOLCHAINS
               if os.path.isdir(os.path.join(home, name))}
    # subtle: a folder that is a link out of the home (or to the home itself) is not bound, nor is
    # anything in it that links out of it. In a workspace that is the home folder a command could
    # plant `.nvm -> /etc/ssl/private`, and these binds come after the ones that hide the secrets of /etc.
    folders = {name: path for name, path in folders.items() if Path(path).is_relative_to(home) and path != home}

    def found(folder: str, patterns: list[str]) -> list[str]:
        paths = (os.path.realpath(p) for pattern in patterns for p in sorted(glob.glob(os.path.join(folder, pattern))))
        return [p for p in dict.fromkeys(paths) if Path(p).is_relative_to(folder) and os.path.exists(p)]
    binds = [p for name, folder in folders.items() for p in found(folder, HOME_TOOLCHAINS[name][0])]
    own = [os.path.realpath(p) for p in os.environ.get("PATH", "").split(os.pathsep) if os.path.isabs(p)]
    bins = [p for p in own if any(Path(p).is_relative_to(bound) for bound in binds)]
    bins += [p for name, folder in folders.items() for p in found(folder, HOME_TOOLCHAINS[name][1])]
    return folders, [p for p in dict.fromkeys(bins) if os.path.isdir(p)], binds


@functools.cache
def _cgroups() -> dict[str, Path]:
    """Make this run's cgroups and return {controller: cgroup dir} for each limit we set.

    For root a cgroup is the only bound on the number of tasks: RLIMIT_NPROC is not
    enforced for uid 0, not even inside a user namespace. Each cgroup is a child of our own,
    so limits above us still hold, is named after our pid, and is removed at exit. Where we
    may not make one (not root, a read-only /sys/fs/cgroup, cgroup v2 without the controller
    delegated to us) we make none, and say so by returning {}. A crash leaves an empty one.
    """
    limited: dict[str, Path] = {}
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        _, names, own = line.split(":", 2)
        v2 = names == ""  # v2 has a single tree, listed without controller names
        root = Path("/sys/fs/cgroup") if v2 else Path("/sys/fs/cgroup", names)
        wanted = list(CGROUP_LIMITS) if v2 else [n for n in names.split(",") if n in CGROUP_LIMITS]
        # subtle: on "hybrid" systems /sys/fs/cgroup is a plain tmpfs and v2 is mounted at
        # .../unified; mkdir and write would "work" there and limit nothing.
        if not wanted or not (root / "cgroup.procs").exists():
            continue
        group = root / own.lstrip("/") / f"tooloop-{os.getpid()}"
        try:
            group.mkdir(exist_ok=True)
        except OSError:
            continue
        for name in wanted:
            v1_file, v2_file, value = CGROUP_LIMITS[name]
            try:
                (group / (v2_file if v2 else v1_file)).write_text(str(value))
                limited[name] = group
            except OSError:
                pass  # this controller is not available to us here
        if group in limited.values():
            atexit.register(_remove_cgroup, group)
        else:
            _remove_cgroup(group)
    return limited


def _remove_cgroup(group: Path) -> None:
    """Remove a cgroup once it is empty: the last sandbox's tasks may need a few ms to die."""
    for _ in range(100):
        try:
            group.rmdir()
            return
        except OSError:
            time.sleep(0.01)
