"""The small-model aids: general answers to the ways small local models fail as agents.

The loop in agent.py is the article's loop plus the lesson's rules. It asks this module at six
places, each named in the loop: `turn` (before the model is called), `complete` (while a reply
streams: has it written its call yet?), `recover` (a reply with no structured call), `review` (a
reply that would end the run), and `instead` and `after` (around each tool call). With no aid
switched on (`--plain`) each of them does nothing, and the loop is the article's.

Each aid answers one failure seen in small models in general, never one task:

    text-calls  a call written as text, or a whole file shown as a code block (recover.py reads them);
                the prose after it (the streamed reply is stopped once the call is complete)
    nudge       a reply that ends the run but is no answer yet: empty, cut off, a plan, code that
                only exists in the reply, giving up right after a failure, a change claimed that
                was never made, work never checked

An aid knows only what happened in the run: the files read and written, the commands and their
exit codes, tracebacks, and the model's own replies (`Run`). None reads the task's wording to
decide what the task asks; the task's text is only ever repeated back to the model.

Left out on purpose: forcing replies through a JSON schema (the 1.5B model filled the schema
with placeholders), summarising with the model, and any rule that names a task. Measured and
deleted (README, the ablation): `look` (the workspace's files sent with the task), `by-hand`,
`unchanged`, `injection`, `repeats`, `blocks`, `begin`, `read-first` and `recap` (the run so far
sent as one user message: the model acted every turn, but repeated its own calls, and obeyed an
order planted in a file once the file's text sat in the user's message instead of a tool's).
"""

import hashlib
import json
import os
import re
import stat
from contextlib import suppress
from dataclasses import dataclass, field
from typing import Callable

from rich.console import Console
from rich.text import Text

from recover import failed_attempt, fence, recover_all
from tools import TOOLS, Result, Settings, inside
from transcript import printable

NAMES = ("text-calls", "nudge")
PARAMETERS = {tool["function"]["name"]: list(tool["function"]["parameters"]["properties"]) for tool in TOOLS}
console = Console(stderr=True, highlight=False)


@dataclass
class Run:
    """What happened in a run so far: everything an aid may know."""

    task: str
    settings: Settings
    messages: list  # the conversation, as sent
    on: frozenset = frozenset(NAMES)  # the aids switched on
    log: Callable = lambda event, **data: None
    calls: list = field(default_factory=list)  # (name, arguments, Result) of every call, in order
    replies: list = field(default_factory=list)  # the text of every reply that had no call
    notes: list = field(default_factory=list)  # the notes sent to the model
    settled: int = 0  # how many notes had gone out when a call of the model's last worked (see review)
    resampled: bool = False  # an empty reply was asked for again since the last call (see review)
    before: dict | None = None  # the workspace's files when the run began (see snapshot)
    files: dict | None = None  # the workspace's files after the last call
    edits: list = field(default_factory=list)  # indices in `calls` of the calls that changed a source file
    first: int = 0  # index in `calls` of this turn's first call

    @property
    def spent(self) -> list:
        """The notes sent since a call of the model's last worked: what the notes' budget counts."""
        return self.notes[self.settled:]


def note(kind: str, text: str, run: Run) -> None:
    """Something an aid did: shown on screen, and kept in the transcript."""
    console.print(Text(f"⚑ {printable(text)}", style="yellow"))
    run.log("note", kind=kind, text=text)


# --- before each model call ---------------------------------------------------------------------

def turn(run: Run) -> None:
    """Called before each model call: marks where this turn's calls start (see blind), and on
    the first turn, with nudge on, takes the workspace's snapshot (what nudge compares a change
    with; nothing else reads it)."""
    run.first = len(run.calls)
    if run.before is None and "nudge" in run.on:  # the first turn
        run.before = snapshot(run.settings)


# --- text-calls: calls written as text ----------------------------------------------------------

def recover(text: str, finish: str | None, run: Run) -> list[tuple[str, str, str]]:
    """The calls a reply with no structured `tool_calls` writes as text, as (id, name, arguments).
    `finish`: why the reply ended ("length": cut off at the token limit).

    Failure answered: small models put the call in the reply's text (a ```json block,
    <tool_call> tags, Kimi's markup) or show a whole file as a code block under its name (aider's
    "whole" format, which small models follow best) instead of calling write_file; a harness that
    takes "no tool_calls" as "done" stops on turn one having done nothing."""
    if "text-calls" not in run.on or not text:
        return []
    calls, from_blocks = written(text, run, whole=finish != "length")
    if calls:
        blocks = f" ({'; '.join(from_blocks)}, from code blocks)" if from_blocks else ""
        note("recovered", f"recovered {len(calls)} tool call(s) from the reply's text{blocks}", run)
    if len(kept := first_steps(calls)) < len(calls):
        note("trimmed", f"only the first {len(kept)} of them kept: the rest were planned before the result of "
                        f"a read or a command they need, and are dropped from the history", run)
    return [(f"recovered_{len(run.calls)}_{i}", name, arguments) for i, (name, arguments) in enumerate(kept)]


def first_steps(calls: list) -> list:
    """The calls of a reply up to the first one planned before a result it needs: a write after a
    read or a command, a command after a command. Small models write their whole plan as a list
    of calls, the writes holding placeholders for code they have not seen yet; run, or answered
    with "not run" errors, that plan misleads them. Kept out of the history, the reply reads as the
    steps that ran, and the model plans the rest from their results. (A write, then the command
    that runs it, is one step.)"""
    for i, (name, _) in enumerate(calls):
        earlier = {tool for tool, _ in calls[:i]}
        if name == "write_file" and earlier & {"read_file", "run_shell"} or name == "run_shell" and "run_shell" in earlier:
            return calls[:i]
    return calls


def written(text: str, run: Run, whole: bool) -> tuple[list, list]:
    """recover.recover_all on a reply, knowing what the run has seen. `whole`: the reply has
    ended, and not at the token limit (a call may then run to its end)."""
    workspace = run.settings.workspace.resolve()
    known = [str(path.relative_to(workspace)) for path in run.settings.seen if path.suffix == ".py"]
    return recover_all(text, PARAMETERS, lambda path: current_text(path, run.settings), ran_unchanged(run), known, whole)


CLOSES = re.compile(r"```|</[\w-]+>|<\|tool_calls_section_end\|>")  # what can end a call written as text: a fence, </tools>
IMAGINED = "<tool_response>"  # how Qwen's chat template wraps a tool's result: the model writing one imagines it


def complete(text: str, run: Run) -> int | None:
    """How much of a reply, while it streams, to keep once it has just closed a command or a read
    written as text (a code block or a closing tag that recover reads as one): all of it, and the
    reply is stopped there; None while it should go on.

    Failure answered: small models wrap their call in prose, a plan before it and an explanation
    after it, 200-500 tokens around a call of 50-150; on a CPU that is most of a turn. Nothing
    planned after a command or a read runs anyway (see blind: it needs that output first); after
    a file written as a block the reply goes on, since the command that runs it often follows.
    Also stopped: a reply that starts writing a tool's response itself (IMAGINED). Small models
    go on to invent the output of the call they meant, up to the token limit; the reply is kept
    up to the tag, so the invention is neither generated nor in the history."""
    if "text-calls" not in run.on:
        return None
    if IMAGINED in text[-60:]:
        return text.index(IMAGINED)
    if not CLOSES.search(text[-40:]):  # (a streamed piece is a few characters)
        return None
    calls = written(text, run, whole=False)[0]  # (still streaming: no call runs to the end yet)
    return len(text) if calls and calls[-1][0] in ("run_shell", "read_file") else None


def current_text(path: str, settings: Settings) -> str | None:
    """A file's text now, for recover.file_blocks to compare with; None if it is no regular file."""
    try:
        target = inside(path, settings)
        return target.read_text(errors="replace") if target.is_file() else None
    except Exception:
        return None


def ran_unchanged(run: Run) -> set[str]:
    """The commands run since the last good write_file. Shown again in a ```sh block, one of
    them quotes what ran (as a final answer does); it is not a new call."""
    commands = set()
    for name, arguments, result in run.calls:
        if name == "write_file" and result.ok:
            commands.clear()
        elif name == "run_shell" and result.exit_code is not None:  # (else it never ran)
            commands.add(parsed(arguments).get("command"))
    return commands


def parsed(arguments: str) -> dict:
    """A call's arguments as a dict; {} when they are no JSON object (the call then failed)."""
    try:
        value = json.loads(arguments)
    except (json.JSONDecodeError, TypeError):
        return {}
    return value if isinstance(value, dict) else {}


# --- instead: a call not run ------------------------------------------------------------------

SKIPPED = ("Error: not run, because it was planned before the result of a call above it in the same reply "
           "(a file's text, a command's output or an error) was seen. Read that result first; make this call "
           "again if it still makes sense.")


def instead(name: str, arguments: str, run: Run) -> Result | None:
    """What a call gets instead of running, or None to run it.

    text-calls: a call planned before a result it needed, in a reply of several calls (small
    models read a file and "fix" it, or run a failing check and rewrite, in one breath), is not
    run (see `blind`)."""
    if "text-calls" in run.on and blind(name, run.calls[run.first:]):
        return Result(SKIPPED, ok=False)
    return None


def blind(name: str, earlier: list) -> bool:
    """Was this call planned without a result it needed? `earlier`: this reply's calls before it.
    A write is, after a file's text, a command's output or a failed write (not after a read that
    found no file: models look whether a file exists, then create it). A command is, after a
    failed write or command (a write, then the command that runs it, is the usual pair). Reads
    always run: they change nothing."""
    if name == "write_file":
        return any((tool == "read_file" and result.ok) or tool == "run_shell" or (tool == "write_file" and not result.ok)
                   for tool, _, result in earlier)
    return name == "run_shell" and any(tool != "read_file" and not result.ok for tool, _, result in earlier)


# --- after: what the aids know of each call ---------------------------------------------------

def after(name: str, arguments: str, result: Result, run: Run) -> Result:
    """Every tool result passes here before the model sees it; the run records it (what the
    other aids know of the calls made)."""
    run.calls.append((name, arguments, result))
    run.resampled = False
    if result.ok:  # progress: the notes' budget starts again
        run.settled = len(run.notes)
    if "nudge" in run.on and run.before is not None:
        now = snapshot(run.settings)
        if edited(run.files or run.before, now):
            run.edits.append(len(run.calls) - 1)
        run.files = now
    return result


def edited(then: dict, now: dict) -> bool:
    """Did a source file change, appear or go between two snapshots? Whichever tool did it:
    write_file, `sed -i`, `mv`, a program. A write that left the file as it was is no change."""
    return any(fence(path) and then.get(path) != now.get(path) for path in then.keys() | now.keys())


# --- nudge: a reply that ends the run but is no answer yet ---------------------------------------

MAX_NOTES = 4  # notes since a call last worked; then a reply that is still no answer ends the run (exit 6)

AGAIN = "Your task, again: {task}\n\n"  # every note restates the task: deep in a run a small model loses it
NOTES = {
    "cut_off": "Your reply was cut off at the token limit, so nothing in it was run. Reply again, shorter: "
               "one tool call, and for a long file write a shorter version first.",
    "empty": "Your reply was empty. Continue the task with a tool call, or give your final answer.",
    "no_tool": "You answered without calling any tool, so nothing was looked at, done or checked. "
               "Do the task with tool calls. If it truly needs none, give your answer again.",
    "code": "The code in your reply only exists in your reply: nothing was saved or run. To save a file, "
            "call write_file with its path and its full new content, or put the file's name on the line "
            "right before its code block; then run it, and answer once a run succeeds.",
    "failed": "Your last tool call failed and nothing has worked since. Do not give up or ask the user: "
              "find the cause in its output, fix it (write the file or the program again with the fix), and run it again. "
              "If it truly cannot be done, answer with the reason.",
    "claimed": "Your answer says you changed files, but no file in the workspace has changed in this run: "
               "nothing was saved. Read the file if you have not, write its whole new content with write_file "
               "(or its name on one line and its whole content in a code block), then run it.",
    "missing": "Your answer says a file was written, but {name} is not in the workspace: nothing was saved. "
               "Write it now (write_file, or a command that creates it), then check it.",
    "partial": "You have seen only the start of {name}: it is larger than one read shows, and the answer may be "
               "in the part you have not seen. Search the whole file with a command (grep -n, or a short python3 "
               "program over it), then answer from what it prints.",
    "plan": "Your answer says what you are going to do, but a plan does nothing by itself. Do its first "
            "step now, with one tool call.",
    "unchecked": "You changed files and have not run anything since, so the change is untested. Run the "
                 "code or the tests with run_shell now. If the task needs no run, give your answer again.",
}
# A reply that is a plan: "I will write the new content", "we need to", "let's"; or work it leaves to
# someone: "the script needs to be updated", "you need to create it", "it should be changed".
PLANS = re.compile(r"\b(?:I|we)(?:\s+will|'ll|\s+am going to|\s+are going to|\s+need to|\s+should)\b|\blet's\b"
                   r"|\b(?:needs|need|has|have) to be (?:\w+ed|\w+en)\b|\byou (?:need|have|must|should|can) (?:to )?"
                   r"(?:\w+ )?(?:create|add|change|update|fix|modify|replace|write|run|install|edit|define|import)\b"
                   r"|\bshould be (?:changed|updated|fixed|modified|replaced|corrected|rewritten)\b", re.I)
# A reply that says it changed files: "I've updated app.py", "the file has been fixed".
CLAIMS = re.compile(r"(?:\b(?:I|we)(?:'ve| have)?\s+(?:now\s+|successfully\s+|also\s+)?|\b(?:has|have) (?:now )?been\s+"
                    r"|\b(?:was|were|is now|are now)\s+(?:successfully\s+)?)(?:updated|changed|added|fixed|modified|"
                    r"created|written|wrote|implemented|renamed|moved|edited|replaced|corrected)\b", re.I)
UNWATCHED = {".git", ".tooloop", "__pycache__", ".pytest_cache"}  # changes there are no change to the work
FENCED = re.compile(r"```[\w-]*[ \t]*\n(.*?)(?:```|\Z)", re.S)  # a fenced block's body
WROTE = re.compile(r"\b(?:wrote|written|saved|stored|created)\b", re.I)
FILE_NAME = re.compile(r"(?<![\w./-])((?:[\w-]+/)*[\w-]+\.[A-Za-z]\w{0,4})(?![\w/-])")  # notes.txt, src/a.py


def review(text: str, finish_reason: str | None, run: Run) -> int | str:
    """A reply without a tool call ends the run: returns its exit code, or the note to send
    instead when an aid finds it is no answer yet ("" to ask again with no note).

    Exit 0 is an answer given freely. nudge: a reply that is no answer yet gets a note with the
    task restated. The notes are budgeted from the last call of the model's that worked: at most
    MAX_NOTES since then, some kinds only once or twice. A small model often needs a note to take
    the next step, then another after it (a fix written, then the run it skipped): a budget per
    run ended half of the failing runs right after such progress. When the notes for an
    unfinished reply have run out, the reply is taken, and the exit code (6) says so.

    An empty reply (or only backticks) is asked for again once, with no note: a small model
    sometimes ends its reply on its first token, and the same request with the next seed got a
    real reply in 5 of the 9 cases of two dev runs (little-coder, too, watches for empty output)."""
    nudge = "nudge" in run.on
    if nudge and finish_reason != "length" and not text.strip(" \n`") and not run.resampled:
        run.resampled = True
        run.messages.pop()  # the empty reply is taken back: the same request goes again
        note("resampled", "the reply was empty: the same request is sent again, with no note", run)
        return ""
    run.replies.append(text)
    why = unfinished(text, finish_reason, run) if nudge else None
    if why and len(run.spent) >= MAX_NOTES or nudge and not why and (why := unfinished(text, finish_reason, run, False)):
        note("notes_ran_out", f"the reply is taken as the answer only because the notes for it ran out; "
                              f"it is still unfinished ({why.split('.')[0]}): exit 6", run)
        return 6
    if not why:
        return 0
    run.notes.append(why)
    subject = {"missing": lambda: missing(text, run), "partial": lambda: partly_read(run)}  # the file a note names
    words = NOTES[why].format(name=subject[why]()) if why in subject else NOTES.get(why, why)
    note("nudge", words, run)
    return AGAIN.format(task=run.task) + words


def unfinished(text: str, finish_reason: str | None, run: Run, budget: bool = True) -> str | None:
    """Why a reply with no call is not yet an answer (a key of NOTES, or a note of its own), from
    what happened in the run; None if it is an answer. Some notes go out only once or twice since a
    call last worked; with `budget` False, those spent still count (the reply is then unfinished,
    but unnoted)."""
    def left(kind, times):
        return not budget or run.spent.count(kind) < times
    tried = [(name, result, arguments) for name, arguments, result in run.calls if result.text not in (SKIPPED,)]
    last = tried[-1][1] if tried else None
    edit = run.edits[-1] if run.edits else None  # of code, by any tool: a data file needs no run
    ran_since = edit is not None and any(name == "run_shell" and result.ok and i not in run.edits
                                         for i, (name, _, result) in enumerate(run.calls) if i > edit)
    if finish_reason == "length":
        return "cut_off"
    botched = failed_attempt(text, set(PARAMETERS))
    if botched and not ("imagined" in botched and quotes_a_result(text, run)):  # (a botched write quotes the file)
        return botched
    if not text.strip():
        return "empty"
    if not tried:
        return "no_tool" if left("no_tool", 1) else None
    if any(body.strip() for body in FENCED.findall(text)) and not (last and last.exit_code == 0):
        return "code"
    if last and not last.ok and not absent(*tried[-1][::2], run) and left("failed", 2):
        return "failed"
    if missing(text, run) and left("missing", 1):
        return "missing"
    if CLAIMS.search(text) and left("claimed", 2) and unchanged(run):
        return "claimed"
    if partly_read(run) and left("partial", 1):
        return "partial"
    if PLANS.search(text) and left("plan", 1):
        return "plan"
    if edit is not None and not ran_since and left("unchecked", 1):
        return "unchecked"
    return None


def absent(name: str, arguments: str, run: Run) -> bool:
    """Was this a read of a file that is not there? A look, not a failure: models check whether
    a file exists before they create it (so a "your last call failed" note would mislead)."""
    path = parsed(arguments).get("path")
    with suppress(Exception):  # (arguments that are no valid call are a failure, not a look)
        return name == "read_file" and isinstance(path, str) and not inside(path, run.settings).exists()
    return False


def unchanged(run: Run) -> bool:
    """Is every file in the workspace as it was when the run began?"""
    return run.before is not None and snapshot(run.settings) == run.before


def partly_read(run: Run) -> str | None:
    """The file the model read last, if that read showed only its start (read_file cuts a large
    file) and no command has worked since: an answer then rests on the part it saw. Small models
    answer a question about a long log from its first screen."""
    for name, arguments, result in reversed(run.calls):
        if name == "run_shell" and result.exit_code == 0:
            return None
        if name == "read_file" and result.ok:
            path = parsed(arguments).get("path")
            with suppress(Exception):
                return None if inside(str(path), run.settings) in run.settings.seen else str(path)
            return None
    return None


def missing(text: str, run: Run) -> str | None:
    """A file the answer says was written or saved that is not in the workspace (small models
    describe the write they never made), or None."""
    if not WROTE.search(text):
        return None
    for name in FILE_NAME.findall(FENCED.sub(" ", text)):
        with suppress(Exception):
            if not inside(name, run.settings).exists():
                return name
    return None


def snapshot(settings: Settings, limit: int = 20_000, hashed: int = 1 << 20) -> dict:
    """What the workspace's files (not in UNWATCHED folders) hold, to tell whether the run changed
    anything, whichever tool did it: a hash of each file up to `hashed` bytes (`sed -i` that
    matched nothing rewrites a file unchanged), size and modification time of larger ones."""
    found = {}
    for root, folders, names in os.walk(settings.workspace):
        folders[:] = [folder for folder in folders if folder not in UNWATCHED]
        for name in names[:limit - len(found)]:
            path = os.path.join(root, name)
            with suppress(OSError):
                info = os.lstat(path)
                if stat.S_ISREG(info.st_mode) and info.st_size <= hashed:
                    with open(path, "rb") as handle:
                        found[path] = hashlib.blake2b(handle.read(), digest_size=16).digest()
                else:
                    found[path] = (info.st_mode, info.st_size, info.st_mtime_ns)
    return found


def quotes_a_result(text: str, run: Run) -> bool:
    """Does the reply quote a line of real tool output? Then output it shows was not imagined."""
    seen = {line.strip() for _, _, result in run.calls for line in result.text.splitlines() if len(line.strip()) >= 12}
    return any(line.strip() in seen for line in text.splitlines())

