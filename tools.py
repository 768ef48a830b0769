"""The three tools the model may call, the schemas it sees, and the one dispatcher.

The model only *proposes* a call. `dispatch` decides what actually happens: it checks the name,
validates the arguments against the schema in `TOOLS`, asks the permission check, runs the plain
function from `IMPLEMENTATIONS`, and turns every failure into a `Result` whose text starts with
`Error:`, for the model to correct itself. Nothing in here raises into the loop. Tool output is
data: never parsed for instructions, so a file that says "ignore your rules" changes nothing.

Left out on purpose: edit/patch/search tools (the shell has grep and sed), globbing, web access,
and any tool state kept between calls (each shell command is its own process).
"""

import json
import os
import re
import shlex
import selectors
import signal
import stat
import subprocess
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import protect
import sandbox

READ_CAP = 6_000  # bytes of a file handed to the model: 1,500-3,500 tokens that every later request carries
OUTPUT_CAP = 4_000  # bytes kept from the head and from the tail of each shell stream

# What goes over the wire, exactly. Descriptions are short: every request pays for them.
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "read_file",
            "description": "Read a UTF-8 text file in the workspace.",
            "parameters": {
                "type": "object",
                "properties": {"path": {"type": "string", "description": "Path relative to the workspace."}},
                "required": ["path"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "write_file",
            "description": "Create a text file in the workspace, or replace one you have read, with the full new content.",
            "parameters": {
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "Path relative to the workspace."},
                    "content": {"type": "string", "description": "The complete file content."},
                },
                "required": ["path", "content"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "run_shell",
            "description": "Run a shell command in the workspace, in a sandbox without network. "
                           "Returns exit code, stdout and stderr.",
            "parameters": {
                "type": "object",
                "properties": {"command": {"type": "string", "description": "A command for /bin/sh."}},
                "required": ["command"],
            },
        },
    },
]


@dataclass
class Settings:
    """What the tools may touch and how. Built once per run by agent.py."""

    workspace: Path
    timeout: float = 60.0  # seconds for one shell command
    approval: str = "auto"  # "auto" | "ask" | "read-only"
    sandbox: bool = True  # False only with --unsafe-no-sandbox
    approve: Callable[[str, dict], bool] | None = None  # asks the user, in "ask" mode
    secrets: list[str] = field(default_factory=list)  # never shown to the model
    seen: set[Path] = field(default_factory=set)  # files read whole or written in this run
    written: set[Path] = field(default_factory=set)  # files written in this run (a failed check shows them)
    named: set[Path] = field(default_factory=set)  # files the user named with --file
    removed: list[str] = field(default_factory=list)  # what tooloop undid after commands, for the user
    original: Path | None = None  # the user's workspace, when `workspace` is an attempt's copy of it


@dataclass
class Result:
    """What a tool call came back with: the text the model sees, and whether the call worked
    (for run_shell, whether the command exited 0). Aids read `ok` and `exit_code`, never the text."""

    text: str
    ok: bool = True
    exit_code: int | None = None  # run_shell only; None when the command timed out or never ran


def error(text: str) -> Result:
    return Result(f"Error: {text}", ok=False)


class Refused(Exception):
    """A call the permission check turned down."""


def inside(path: str, settings: Settings) -> Path:
    """Resolve `path` against the workspace, following symlinks, and refuse anything outside."""
    root = settings.workspace.resolve()
    if problem := protect.malformed(path):
        raise Refused(problem)
    # subtle: an absolute `path` replaces `root` in the join, and resolve() follows every symlink
    # and `..`, so one containment test covers all three ways out.
    try:
        target = (root / path).resolve()
    except (OSError, RuntimeError) as problem:  # a symlink loop (RuntimeError before Python 3.13)
        raise Refused(f"{path!r} cannot be resolved ({problem})")
    if target != root and root not in target.parents:
        raise Refused(f"{path!r} is outside the workspace")
    return target


def read_file(path: str, *, settings: Settings) -> str:
    target = inside(path, settings)
    # O_NONBLOCK: opening a FIFO must not hang; O_NOFOLLOW: the name resolve() checked is the file.
    fd = os.open(target, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW)
    with os.fdopen(fd, "rb") as f:
        info = os.fstat(f.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise Refused(f"{path!r} is not a regular file")
        if info.st_nlink > 1:  # a hard link may be a way to a file outside the workspace
            raise Refused(f"{path!r} has other hard links")
        data = f.read(READ_CAP + 1)
    if b"\0" in data[:8192]:
        raise ValueError(f"{path!r} looks binary; only text files can be read")
    text = data[:READ_CAP].decode("utf-8", errors="replace")
    if len(data) > READ_CAP:
        text += (f"\n[cut: the file has {info.st_size} bytes; this shows the first {READ_CAP}. For the "
                 f"rest use run_shell, e.g. grep -n WORD {shlex.quote(path)}, or sed -n 200,300p {shlex.quote(path)}]")
    else:
        settings.seen.add(target)  # seen whole: write_file may now replace it
    return text


def write_file(path: str, content: str, *, settings: Settings) -> str:
    target = inside(path, settings)
    if target.exists() and (not target.is_file() or target.stat().st_nlink > 1):
        raise Refused(f"{path!r} is not a plain file")
    old = target.read_text(errors="replace") if target.exists() else None
    if old is not None and target not in settings.seen:
        # a blind overwrite loses what it did not see
        raise Refused(f"{path!r} exists and you have not read it yet: read_file it first, then write "
                      "its whole new content")
    broken = path.endswith(".py") and syntax_error(content)
    if broken and not (old is not None and syntax_error(old)):
        # a small model writes markup or prose over a working file as easily as code
        raise Refused(f"the new content is not valid Python ({broken}), so {path} was left as it was; "
                      "write the whole file again with the error fixed")
    if target.exists() and target.read_bytes() == content.encode(errors="surrogatepass"):
        return f"{path} already holds exactly this content: nothing changed"
    target.parent.mkdir(parents=True, exist_ok=True)
    # Write a temporary file beside the target, then rename it over the target: a crash leaves
    # either the old file or the new one, never half of each.
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(content)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, stat.S_IMODE(target.stat().st_mode) if target.exists() else 0o644)
        os.replace(tmp, target)
    except BaseException:
        os.unlink(tmp)
        raise
    settings.seen.add(target)
    settings.written.add(target)
    lines = content.count("\n") + (not content.endswith("\n") and content != "")
    return f"wrote {len(content.encode())} bytes ({lines} lines) to {path}"


def syntax_error(source: str) -> str | None:
    """Why `source` is not valid Python, in a few words with the line at fault, or None if it is."""
    try:
        compile(source, "<content>", "exec", dont_inherit=True)
    except SyntaxError as error:
        line = (error.text or "").strip()
        return f"{error.msg}, line {error.lineno}" + (f": {line[:80]}" if line else "")
    except (ValueError, RecursionError, MemoryError) as error:  # a NUL byte; nesting too deep to compile
        return str(error) or type(error).__name__
    return None


def run_shell(command: str, *, settings: Settings) -> Result:
    cwd = settings.workspace.resolve()
    if settings.sandbox:
        argv, limit = sandbox.wrap(command, cwd), sandbox.limit_resources
    else:
        argv, limit = ["/bin/sh", "-c", command], lambda: None
    before = protect.scan(cwd) if settings.sandbox else None
    # subtle: a Ctrl-C while Popen is still starting the command would leave no `proc` to kill,
    # and the command running on. Blocking SIGINT is not enough: the kernel may hand it to any
    # other thread (an HTTP client's). So meanwhile a Ctrl-C is only held, for collect() to raise
    # inside the try that kills the whole group on the way out.
    held, main = [], threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGINT, lambda *_: held.append(1)) if main else None
    try:
        proc = subprocess.Popen(
            argv, cwd=cwd, env=sandbox.environment(), preexec_fn=limit, stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,  # own process group
        )
    finally:
        if main:
            signal.signal(signal.SIGINT, previous)
    try:
        out, err, timed_out = collect(proc, settings.timeout, held)
    finally:  # a Ctrl-C too leaves nothing planted for host tools
        cleaned = protect.clean(cwd, before, settings.removed, command) if before else []
    parts = [f"timed out after {settings.timeout:g} s; the command and its children were killed"
             if timed_out else f"exit code: {proc.returncode}"]
    for name, data in (("stdout", out), ("stderr", err)):
        if data:
            parts.append(f"--- {name} ---\n{data}")
    parts += cleaned
    return Result("\n".join(parts), ok=proc.returncode == 0 and not timed_out,
                  exit_code=None if timed_out else proc.returncode)


def collect(proc: subprocess.Popen, timeout: float, held: list = ()) -> tuple[str, str, bool]:
    """Read both pipes until they close or time runs out, keeping a head and a tail of each.

    Whatever happens (normal exit, timeout, Ctrl-C), the whole process group is killed on the
    way out, so a background child cannot outlive the call.
    """
    kept = {proc.stdout: bytearray(), proc.stderr: bytearray()}
    total = {proc.stdout: 0, proc.stderr: 0}
    timed_out, ended = False, None  # ended: when the shell exited or was killed
    with selectors.DefaultSelector() as sel:
        for pipe in kept:
            sel.register(pipe, selectors.EVENT_READ)
        deadline = _now() + timeout
        try:
            if held:  # a Ctrl-C while the command started (see run_shell)
                raise KeyboardInterrupt
            while sel.get_map():
                if ended is None and (_now() > deadline or proc.poll() is not None):
                    timed_out = proc.poll() is None
                    _kill_group(proc)  # pipes held open by the shell's children close with them
                    ended = _now()
                elif ended is not None and _now() > ended + 1:
                    break  # a child that left the group (setsid, only without the sandbox) holds them
                for key, _ in sel.select(timeout=0.05):
                    chunk = os.read(key.fd, 65536)
                    if not chunk:
                        sel.unregister(key.fileobj)
                        continue
                    buf = kept[key.fileobj]
                    buf += chunk
                    total[key.fileobj] += len(chunk)
                    if len(buf) > 2 * OUTPUT_CAP:  # keep the true head and the latest tail
                        del buf[OUTPUT_CAP:-OUTPUT_CAP]
        finally:
            _kill_group(proc)
            proc.wait()
            for pipe in kept:
                pipe.close()
    return (*(_shorten(kept[p], total[p]) for p in (proc.stdout, proc.stderr)), timed_out)


def _shorten(buf: bytearray, total: int) -> str:
    if total <= len(buf):
        return buf.decode("utf-8", errors="replace")
    head, tail = buf[:OUTPUT_CAP], buf[OUTPUT_CAP:]
    return (head.decode("utf-8", errors="replace") + f"\n[... {total - len(buf)} bytes elided ...]\n"
            + tail.decode("utf-8", errors="replace"))


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass  # the group is already gone


def _now() -> float:
    return os.times().elapsed


IMPLEMENTATIONS = {"read_file": read_file, "write_file": write_file, "run_shell": run_shell}
SCHEMAS = {tool["function"]["name"]: tool["function"]["parameters"] for tool in TOOLS}
JSON_TYPES = {"string": str}


def validate(name: str, args: dict) -> str | None:
    """Check arguments against the tool's schema; return what is wrong, or None."""
    schema = SCHEMAS[name]
    missing = [k for k in schema["required"] if k not in args]
    extra = [k for k in args if k not in schema["properties"]]
    wrong = [f"{k} must be a {schema['properties'][k]['type']}" for k, v in args.items()
             if k in schema["properties"] and not isinstance(v, JSON_TYPES[schema["properties"][k]["type"]])]
    problems = ([f"missing argument(s): {', '.join(missing)}"] if missing else []) + \
               ([f"unexpected argument(s): {', '.join(extra)}"] if extra else []) + wrong
    return "; ".join(problems) or None


def permission(name: str, args: dict, settings: Settings) -> str | None:
    """The harness's own rules, in code. Returns why a call is refused, or None to allow it."""
    if "path" in args:
        try:
            target = inside(args["path"], settings)
        except Refused as refusal:
            return str(refusal)
        if why := protect.refusal(name, args["path"], target, settings.workspace.resolve()):
            return why
    if name == "read_file":
        return None
    if settings.approval == "read-only":
        return f"{name} is refused: this run is read-only"
    if name == "run_shell" and settings.sandbox and not sandbox.available():
        return ("run_shell is refused: no sandbox (bubblewrap) is available on this machine; "
                "the user can allow unconfined commands with --unsafe-no-sandbox")
    if settings.approval == "ask" and not (settings.approve and settings.approve(name, args)):
        return f"the user declined this {name} call"
    return None


def parsed(arguments: str) -> dict:
    """A call's arguments as a dict; {} when they are no JSON object (the call then fails)."""
    try:
        value = json.loads(arguments)
    except (json.JSONDecodeError, TypeError):
        return {}
    return value if isinstance(value, dict) else {}


def dispatch(name: str, arguments: str, settings: Settings) -> Result:
    """Validate, check permission, run. Every failure comes back as a Result whose text starts
    with 'Error:', for the model to read and act on; nothing raises into the loop."""
    if name not in IMPLEMENTATIONS:
        return error(f"unknown tool {name!r}; the tools are {', '.join(IMPLEMENTATIONS)}")
    try:
        args = json.loads(arguments or "{}")
    except (json.JSONDecodeError, TypeError) as problem:
        return error(f"the arguments are not valid JSON ({problem})")
    if not isinstance(args, dict):
        return error("the arguments must be a JSON object")
    problem = validate(name, args)
    if problem:
        return error(problem)
    try:
        refusal = permission(name, args, settings)
        result = error(f"permission denied: {refusal}") if refusal else IMPLEMENTATIONS[name](**args, settings=settings)
    except Exception as problem:  # the model sees what went wrong and can try something else
        result = error(f"{type(problem).__name__}: {problem}")
    result = result if isinstance(result, Result) else Result(result)
    return Result(redact(result.text, settings.secrets), result.ok, result.exit_code)


# The user part of a URL: `https://user:token@host/` (a git remote, a registry), `https://token@host/`
USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^\s/@]+@")


def redact(text: str, secrets: list[str]) -> str:
    """`text` without the run's secrets (the API key, the base URL's password) and without the
    credentials of any URL in it, as git keeps them in a remote:

        >>> redact("url = https://bot:ghp_x1@example.org/a.git, key sk-1", ["sk-1"])
        'url = https://[redacted]@example.org/a.git, key [redacted]'
    """
    for secret in secrets:
        text = text.replace(secret, "[redacted]")
    return USERINFO.sub(r"\1[redacted]@", text)
