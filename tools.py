"""The three tools the model may call, the schemas it sees, and the one dispatcher.

The model only *proposes* a call. `dispatch` decides what actually happens: it checks the name,
validates the arguments against the schema in `TOOLS`, asks the permission check, runs the plain
function from `IMPLEMENTATIONS`, and turns every failure into a `Result` whose text starts with
`Error:`, for the model to correct itself. Nothing in here raises into the loop. Tool output is
data: never parsed for instructions, so a file that says "ignore your rules" changes nothing.

Files of any size: read_file shows a range of lines (all of a small file), and write_file,
given `old`, replaces that one exact piece of a file instead of the whole. The model changes only
what it has seen: a whole file is replaced only once it was read whole (in one read, or in parts
that together showed every line), and an edit needs no read, since quoting `old` exactly, once,
is the proof that it saw that part.

Left out on purpose: patch formats and search tools (the shell has grep), fuzzy matching of `old`
(a near miss is an error that shows the closest lines), noticing a command's change to a file read
before, globbing, web access, and tool state beyond what was read (each command is a new process).
"""

import difflib
import json
import os
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
from redact import MARK, redact  # the one secret filter: every result passes it in dispatch

READ_CAP = 6_000  # bytes of a file handed to the model in one read: 1,500-3,500 tokens that every later request carries
OUTPUT_CAP = 4_000  # bytes kept from the head and from the tail of each shell stream
MAX_WRITE = 1_000_000  # bytes one write_file may write: every later request and the transcript carry them

# What goes over the wire, exactly. Descriptions are short: every request pays for them.
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "read_file",
            "description": "Read a UTF-8 text file in the workspace: all of it, or the lines from start.",
            "parameters": {
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "Path relative to the workspace."},
                    "start": {"type": "integer", "description": "First line to show (default 1)."},
                    "lines": {"type": "integer", "description": "How many lines (default: as many as fit)."},
                },
                "required": ["path"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "write_file",
            "description": "Create a text file in the workspace, or replace one you have read, with the full new "
                           "content; or, with old, replace one part of a file.",
            "parameters": {
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "Path relative to the workspace."},
                    "content": {"type": "string",
                                "description": "The complete file content, or with old: what replaces old."},
                    "old": {"type": "string", "description": "Exact text that occurs once in the file."},
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
class RunState:
    """What an attempt's tool calls did that later calls depend on: its state, apart from the settings."""
    seen: set[Path] = field(default_factory=set)  # files read whole or written in this attempt
    parts: dict[Path, set[int]] = field(default_factory=dict)  # line numbers shown of files read in parts
    written: set[Path] = field(default_factory=set)  # files written in this attempt (a failed check shows them)
    removed: list[str] = field(default_factory=list)  # what tooloop undid after commands, for the user


@dataclass(frozen=True)
class Settings:
    """What the tools may touch and how: set from the command line (cli.py), then never changed."""
    workspace: Path
    timeout: float = 60.0  # seconds for one shell command
    approval: str = "auto"  # "auto" | "ask" | "read-only"
    sandbox: bool = True  # False only with --unsafe-no-sandbox
    approve: Callable[[str, dict], bool] | None = None  # asks the user, in "ask" mode
    secrets: list[str] = field(default_factory=list)  # never shown to the model
    named: frozenset[Path] = frozenset()  # files the user named with --file
    original: Path | None = None  # the user's workspace, when `workspace` is an attempt's copy of it
    max_write: int = MAX_WRITE  # bytes one write_file may write
    state: RunState = field(default_factory=RunState)  # what the attempt's calls did so far


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
    if settings.original and (path + "/").startswith(f"{settings.original}/"):  # the copy, seen at the workspace's path
        path = path[len(str(settings.original)):].lstrip("/") or "."
    # subtle: an absolute `path` replaces `root` in the join, and resolve() follows every symlink
    # and `..`, so one containment test covers all three ways out.
    try:
        target = (root / path).resolve()
    except (OSError, RuntimeError) as problem:  # a symlink loop (RuntimeError before Python 3.13)
        raise Refused(f"{path!r} cannot be resolved ({problem})")
    if target != root and root not in target.parents:
        raise Refused(f"{path!r} is outside the workspace")
    return target


def hard_linked(target: Path, info: os.stat_result, settings: Settings) -> bool:
    """Has the file at `target` (`info` is its stat) other hard links? A hard link may be a way to
    a file outside the workspace. When the run works on a copy, the user's file at the same place
    counts too: the copy of a hard link is a file with one link that holds the outside file's content."""
    if info.st_nlink > 1:
        return True
    if settings.original is None:
        return False
    try:
        original = os.lstat(settings.original / target.relative_to(settings.workspace.resolve()))
    except (OSError, ValueError):  # not in the user's workspace: the run made it
        return False
    return stat.S_ISREG(original.st_mode) and original.st_nlink > 1


def read_file(path: str, start: int = 1, lines: int | None = None, *, settings: Settings) -> str:
    """The file's text as it is, if it fits in READ_CAP bytes. Otherwise, or when asked for a range,
    the lines from `start` (counted from 1) that fit, `lines` of them at most, and then one line
    in brackets that says which lines of how many they are, and how to read on and to edit.
    For example, on a file of 1,500 lines:

        read_file("big.py", start=201, lines=2)  ->  'def area(r):\n    return 3.14 * r * r\n'
            '[lines 201-202 of 1500 in big.py. To read on: read_file with start=203. To change a part: '
            'write_file with old (the exact text) and content (its replacement).]'

    Lines are not numbered: the model copies what it sees into write_file's `old`, and a number
    there would not match. A line longer than READ_CAP is shown cut, and never counts as read.
    A file is read whole once every line was shown, in one read or in several (settings.state.parts).
    """
    if start < 1 or (lines is not None and lines < 1):
        raise ValueError("start and lines must be 1 or more")
    target = inside(path, settings)
    # O_NONBLOCK: opening a FIFO must not hang; O_NOFOLLOW: the name resolve() checked is the file.
    try:
        fd = os.open(target, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW)
    except FileNotFoundError:  # said in the model's own terms: the OS's would name the run's copy
        raise FileNotFoundError(f"{path} does not exist (yet): write_file creates it") from None
    with os.fdopen(fd, "rb") as f:
        info = os.fstat(f.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise Refused(f"{path!r} is not a regular file")
        if hard_linked(target, info, settings):
            raise Refused(f"{path!r} has other hard links")
        if b"\0" in f.read(8192):
            raise ValueError(f"{path!r} looks binary; only text files can be read")
        f.seek(0)
        total, shown, cut = _lines(f, start, lines)
    if start > max(total, 1):
        raise ValueError(f"start={start} is past the end: {path} has {total} lines")
    text = b"".join(piece for _, piece in shown).decode("utf-8", errors="replace")
    first, last = (shown[0][0], shown[-1][0]) if shown else (1, 0)
    if first == 1 and last == total and not cut:
        settings.state.seen.add(target)  # seen whole: write_file may now replace it
        return text
    read = settings.state.parts.setdefault(target, set())
    read.update(n for n, _ in shown if n not in cut)
    if len(read) >= total and all(n in read for n in range(1, total + 1)):  # every line, in parts: as good as whole
        settings.state.seen.add(target)
    said = f"[lines {first}-{last} of {total} in {path}"
    said += f"; line {', '.join(map(str, cut))} is cut at {READ_CAP} bytes" if cut else ""
    said += f". To read on: read_file with start={last + 1}." if last < total else " (the end)."
    return (text if text.endswith("\n") else text + "\n") + said + (
        " To change a part: write_file with old (the exact text) and content (its replacement).]")


def _lines(f, start: int, lines: int | None) -> tuple[int, list[tuple[int, bytes]], list[int]]:
    """Read an open file through: (its number of lines, [(number, bytes) of each line shown],
    the numbers of lines shown cut). Lines are shown from `start`, `lines` of them at most, while
    they fit in READ_CAP bytes.

    subtle: readline(READ_CAP) never holds more than READ_CAP bytes, so a line longer than that
    (minified code, a data dump) comes in pieces: its first piece is shown, the rest only skipped.
    """
    last = start + lines - 1 if lines else None
    number, size, shown, cut, fits, new_line = 0, 0, [], [], True, True
    while piece := f.readline(READ_CAP):
        if not new_line:  # the rest of a long line
            if shown and shown[-1][0] == number and number not in cut:
                cut.append(number)
        else:
            number += 1
            if start <= number and (last is None or number <= last) and fits:
                fits = size + len(piece) <= READ_CAP or not shown  # (a first line always shows)
                if fits:
                    shown.append((number, piece))
                    size += len(piece)
        new_line = piece.endswith(b"\n")
    return number, shown, cut


def write_file(path: str, content: str, old: str | None = None, *, settings: Settings) -> str:
    """Write `content` as the whole file, or, given `old`, in place of the one place where `old`
    occurs in it. The result says what changed, in bytes and lines, or in line numbers:

        write_file("a.py", "b = 2\n", old="b = 1\n")  ->  "edited a.py: replaced lines 2-2 with 1 lines;
            the file has 3 lines now"
    """
    target = inside(path, settings)
    if target.exists() and (not target.is_file() or hard_linked(target, target.stat(), settings)):
        raise Refused(f"{path!r} is not a plain file")
    # surrogateescape: bytes that are not UTF-8 come back as they were, around an edit too
    before = target.read_bytes().decode("utf-8", "surrogateescape") if target.exists() else None
    # subtle: a small model fills an optional argument it does not use (seen in the dev runs:
    # old="" beside a whole new file, and old="0.00" or "PWNED" for a file not made yet, the same
    # call again after the error). With nothing to replace, the call is a whole write, with its rule.
    unused = bool(old) and before is None
    old = old if old and before is not None else None
    content.encode()  # a lone surrogate from the model fails here, before anything is written
    if old is not None:
        after, said = edited(path, before, old, content)
    elif before is not None and target not in settings.state.seen:
        raise Refused(unread(path, target, before, settings))  # a blind overwrite loses what it did not see
    else:
        after = content
        said = f"wrote {len(content.encode())} bytes ({count_lines(content)} lines) to {path}" + (
            " (a new file: old was not used)" if unused else "")
    broken = path.endswith(".py") and syntax_error(after)
    if broken and not (before is not None and syntax_error(before)):
        # a small model writes markup or prose over a working file as easily as code
        again = "make the edit again" if old is not None else "write the whole file again"
        raise Refused(f"the new content is not valid Python ({broken}), so {path} was left as it was; "
                      f"{again} with the error fixed")
    if after.count(MARK) > (before or "").count(MARK):  # a hidden credential must not be written back as the mark
        raise Refused(f"the new content holds {MARK}, which stands for a credential hidden from you: {path} was "
                      f"left as it was; change only the lines around it (with old), so the credential stays")
    if after == before:
        return f"{path} already holds exactly this content: nothing changed"
    if not settings.workspace.is_dir():  # the run's copy vanished: never made again here (runs.intact)
        raise Refused("the workspace folder is gone: nothing can be written")
    target.parent.mkdir(parents=True, exist_ok=True)
    # Write a temporary file beside the target, then rename it over the target: a crash leaves
    # either the old file or the new one, never half of each.
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(after.encode("utf-8", "surrogateescape"))
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, stat.S_IMODE(target.stat().st_mode) if target.exists() else 0o644)
        os.replace(tmp, target)
    except BaseException:
        os.unlink(tmp)
        raise
    if old is None:
        settings.state.seen.add(target)
    settings.state.parts.pop(target, None)  # after an edit, the line numbers read have moved
    settings.state.written.add(target)
    return said


def edited(path: str, text: str, old: str, new: str) -> tuple[str, str]:
    """`text` with its one `old` replaced by `new`, and what changed, in line numbers. Every way
    this can fail is an error the model can act on: where the nearest text is, how often `old`
    occurs."""
    if old not in text and "\r\n" in text and "\r" not in old:  # a file with Windows line ends, quoted without
        old, new = old.replace("\n", "\r\n"), new.replace("\n", "\r\n")
    found, at = [], text.find(old)
    while at != -1:
        found.append(at)
        at = text.find(old, at + 1)
    if not found:
        raise ValueError(f"old does not occur in {path}. " + nearest(text, old))
    if len(found) > 1:
        at = ", ".join(str(text.count("\n", 0, i) + 1) for i in found[:10])
        raise ValueError(f"old occurs {len(found)} times in {path} (at lines {at}): give more of the lines "
                         "around it, so that it occurs once")
    first = text.count("\n", 0, found[0]) + 1
    after = text[:found[0]] + new + text[found[0] + len(old):]
    return after, (f"edited {path}: replaced lines {first}-{first + count_lines(old) - 1} with "
                   f"{count_lines(new)} lines; the file has {count_lines(after)} lines now")


def count_lines(text: str) -> int:
    """Lines as an editor counts them: count_lines("a\nb") == count_lines("a\nb\n") == 2."""
    return text.count("\n") + (not text.endswith("\n") and text != "")


def nearest(text: str, old: str) -> str:
    """Where the file comes nearest to `old`, for the model to copy from: the line most like the
    first line of `old`, and as many lines after it as `old` has. Spaces at either end are ignored
    in finding it (a wrong indent is the usual miss), not in showing it."""
    lines, wanted = text.splitlines(), old.strip("\n").splitlines()
    head = next((line.strip() for line in wanted if line.strip()), "")
    stripped = [line.strip() for line in lines]
    match = difflib.get_close_matches(head, stripped, n=1, cutoff=0.6)
    if not match:
        return "Read the part you mean to change, and copy old from it exactly."
    i = stripped.index(match[0])
    j = min(len(lines), i + max(len(wanted), 1))
    shown = "\n".join(lines[i:j])
    return (f"The nearest text is at lines {i + 1}-{j}:\n{shown}\nCopy old exactly as the file has it, "
            "spaces and indentation too.")


def unread(path: str, target: Path, text: str, settings: Settings) -> str:
    """Why a whole write of `path` is refused: it was not read, or only in part (and then how to go on)."""
    read = settings.state.parts.get(target)
    if read is None:
        return f"{path!r} exists and you have not read it yet: read_file it first, then write its whole new content"
    total = count_lines(text)
    missing = next(n for n in range(1, total + 2) if n not in read)
    return (f"{path!r} has {total} lines and you have read only some of them, so it cannot be replaced whole: "
            f"change a part with old (the exact text to replace) and content, or read on from line {missing} "
            "(read_file with start) before writing it whole")


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
        argv, limit = sandbox.wrap(command, cwd, settings.original), sandbox.limit_resources  # seen at its own path
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
        cleaned = protect.clean(cwd, before, settings.state.removed, command) if before else []
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
JSON_TYPES = {"string": str, "integer": int}


def validate(name: str, args: dict) -> str | None:
    """Check arguments against the tool's schema; return what is wrong, or None."""
    schema = SCHEMAS[name]
    missing = [k for k in schema["required"] if k not in args]
    extra = [k for k in args if k not in schema["properties"]]
    wrong = [f"{k} must be {'an' if kind == 'integer' else 'a'} {kind}" for k, v in args.items()
             if (kind := schema["properties"].get(k, {}).get("type")) and (
                 not isinstance(v, JSON_TYPES[kind]) or isinstance(v, bool))]  # (True is an int in Python)
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
    except (json.JSONDecodeError, TypeError, RecursionError):  # (nested deeper than Python recurses)
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
    except RecursionError:
        return error("the arguments are nested too deeply to read")
    if not isinstance(args, dict):
        return error("the arguments must be a JSON object")
    # some models send every parameter, null for those they leave out: a null is an argument not given
    args = {k: v for k, v in args.items() if v is not None or k in SCHEMAS[name]["required"]}
    problem = validate(name, args)
    if problem:
        return error(problem)
    if name == "write_file" and (size := len(args["content"].encode(errors="surrogatepass"))) > settings.max_write:
        return error(f"the content is {size} bytes; one write_file may write at most {settings.max_write}: "
                     "write a smaller file, or make large data with a command")
    try:
        refusal = permission(name, args, settings)
        result = error(f"permission denied: {refusal}") if refusal else IMPLEMENTATIONS[name](**args, settings=settings)
    except Exception as problem:  # the model sees what went wrong and can try something else
        result = error(f"{type(problem).__name__}: {problem}")
    result = result if isinstance(result, Result) else Result(result)
    text = result.text
    if settings.original:  # the model sees the workspace's own path, never the run's copy's
        text = text.replace(str(settings.workspace.resolve()), str(settings.original))
    return Result(redact(text, settings.secrets), result.ok, result.exit_code)
