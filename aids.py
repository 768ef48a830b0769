"""The small-model aids: general answers to the ways small local models fail as agents.

The loop in agent.py is the article's loop plus the lesson's rules. It asks this module at five
places, each named in the loop: `turn` (before the model is called), `complete` (while a reply
streams: has it written its call yet?), `recover` (a reply with no structured call), and
`instead` and `after` (around each tool call). With no aid switched on (`--plain`) each of them
does nothing, and the loop is the article's.

Each aid answers one failure seen in small models in general, never one task:

    text-calls  a call written as text, or a whole file shown as a code block (recover.py reads them);
                the prose after it (the streamed reply is stopped once the call is complete)

An aid knows only what happened in the run: the files read and written, the commands and their
exit codes, tracebacks, and the model's own replies (`Run`). It is not given the task at all.

Left out on purpose: forcing replies through a JSON schema (the 1.5B model filled the schema
with placeholders), summarising with the model, and any rule that names a task. Measured and
deleted (README, the ablation): `look` (the workspace's files sent with the task), `by-hand`,
`unchanged`, `injection`, `repeats`, `blocks`, `begin`, `read-first`, `recap` (the run so far
sent as one user message: the model acted every turn, but repeated its own calls, and obeyed an
order planted in a file once the file's text sat in the user's message instead of a tool's) and
`nudge` (a note with the task restated when a reply that would end the run was no answer yet:
empty, a plan, code only in the reply, a change claimed but never made, work never run; switched
off, holdout lost nothing at four measured codes, and runs took half the time).
"""

import json
import re
from dataclasses import dataclass, field
from typing import Callable

from rich.console import Console
from rich.text import Text

from recover import recover_all
from tools import TOOLS, Result, Settings, inside
from transcript import printable

NAMES = ("text-calls",)
PARAMETERS = {tool["function"]["name"]: list(tool["function"]["parameters"]["properties"]) for tool in TOOLS}
console = Console(stderr=True, highlight=False)


@dataclass
class Run:
    """What happened in a run so far: everything an aid may know."""

    settings: Settings
    on: frozenset = frozenset(NAMES)  # the aids switched on
    log: Callable = lambda event, **data: None
    calls: list = field(default_factory=list)  # (name, arguments, Result) of every call, in order
    first: int = 0  # index in `calls` of this turn's first call


def note(kind: str, text: str, run: Run) -> None:
    """Something an aid did: shown on screen, and kept in the transcript."""
    console.print(Text(f"⚑ {printable(text)}", style="yellow"))
    run.log("note", kind=kind, text=text)


# --- before each model call ---------------------------------------------------------------------

def turn(run: Run) -> None:
    """Called before each model call: marks where this turn's calls start (see blind)."""
    run.first = len(run.calls)


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
# How Qwen's chat template begins a tool's result, on a line of its own: a model writing one imagines it.
# (In the middle of a line, after `"content": "`, the model is copying a result it saw: see recover._open_ended.)
IMAGINED = re.compile(r"^[ \t]*<tool_response>", re.M)


def complete(text: str, run: Run) -> int | None:
    """How much of a reply, while it streams, to keep once it has just closed a command or a read
    written as text (a code block or a closing tag that recover reads as one): all of it, and the
    reply is stopped there; None while it should go on.

    Failure answered: small models wrap their call in prose, a plan before it and an explanation
    after it, 200-500 tokens around a call of 50-150; on a CPU that is most of a turn. Nothing
    planned after a command or a read runs anyway (see blind: it needs that output first); after
    a file written as a block the reply goes on, since the command that runs it often follows.
    Also stopped: a reply that has written a call and starts writing its result itself (IMAGINED).
    Small models go on to invent the output of the call they meant, up to the token limit; the
    reply is kept up to the tag, so the invention is neither generated nor in the history, and the
    call runs. (With no call before the tag, the reply is left alone: it is the model's answer.)"""
    if "text-calls" not in run.on:
        return None
    if (imagined := IMAGINED.search(text, max(0, len(text) - 60))) and written(text[:imagined.start()], run, False)[0]:
        return imagined.start()
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
    return result
