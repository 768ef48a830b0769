"""The small-model aids: general answers to the ways small local models fail as agents.

The loop in agent.py is the article's loop plus the lesson's rules. It lets an aid act at four
places, the fields of `Hooks`, each named in the loop:

    stop         while a reply streams: has it written its call yet? (then generation stops)
    after_reply  a reply has come back: which calls does it make?
    before_call  a call is about to run: run it, or give it a result instead?
    after_call   a call has run: what happened (what the aid knows of the run)

`Hooks()` does nothing at any of them: that is `--plain`, the article's loop. One aid is left,
and `text_calls` builds its hooks:

    text-calls  a call written as text, a whole file shown as a code block under its name, or a
                command shown as a block that ends the reply (recover.py reads them); the prose
                after a call written as text (the streamed reply is stopped once it is complete)

The model call (agent.model_caller) uses one more, `compact`, when the server says the context
is full: old tool results and written file bodies become stubs, and the request is sent again.

An aid knows only what happened in the run: the files read and written, the commands and their
exit codes, and the model's own replies. It is not given the task at all.

Left out on purpose: forcing replies through a JSON schema (the 1.5B model filled the schema
with placeholders), summarising with the model, and any rule that names a task. The aids that
were measured and deleted are listed, with their figures, in docs/results.md.
"""

import json
import re
from dataclasses import dataclass
from typing import Callable

import prompts
from recover import TEXT_CALL, recover_all
from screen import note
from tools import TOOLS, Result, Settings, inside, parsed

NAMES = ("text-calls",)  # what --help lists; --plain switches them off
PARAMETERS = {tool["function"]["name"]: list(tool["function"]["parameters"]["properties"]) for tool in TOOLS}


@dataclass
class Hooks:
    """Where the loop lets an aid act. Each default does nothing, so `Hooks()` is the plain loop."""

    stop: Callable[[str], int | None] = lambda text: None  # the text so far -> how much to keep, or None to go on
    after_reply: Callable[[str, str | None, list], list] = lambda text, finish, calls: calls
    before_call: Callable[[str, str], Result | None] = lambda name, arguments: None  # a Result: not run
    after_call: Callable[[str, str, Result], None] = lambda name, arguments, result: None


def text_calls(settings: Settings, log=lambda event, **data: None) -> Hooks:
    """The text-calls aid for one run: its four hooks share what it has seen of the run."""
    calls, reply = [], []  # (name, arguments, Result) of every call so far, and of this reply's

    def after_reply(text: str, finish: str | None, structured: list) -> list:
        reply.clear()
        return structured or recover(text, finish, settings, calls, log)

    def before_call(name: str, arguments: str) -> Result | None:
        return Result(SKIPPED, ok=False) if blind(name, reply) else None

    def after_call(name: str, arguments: str, result: Result) -> None:
        calls.append((name, arguments, result))
        reply.append((name, arguments, result))

    return Hooks(lambda text: complete(text, settings, calls), after_reply, before_call, after_call)


# --- after_reply: calls written as text ------------------------------------------------------

def recover(text: str, finish: str | None, settings: Settings, calls: list, log) -> list[tuple[str, str, str]]:
    """The calls a reply with no structured `tool_calls` writes as text, as (id, name, arguments).
    `finish`: why the reply ended ("length": cut off at the token limit).

    Failure answered: small models put the call in the reply's text (a ```json block,
    <tool_call> tags, Kimi's markup) or show a whole file as a code block under its name (aider's
    "whole" format, which small models follow best) instead of calling write_file; a harness that
    takes "no tool_calls" as "done" stops on turn one having done nothing."""
    if not text:
        return []
    found, rules = written(text, settings, calls, whole=finish != "length")
    if found:  # each call with the rule that read it (recover.RULES), so a transcript can count them
        said = "; ".join(f"{call}: {rule}" for rule, call in rules)
        note("recovered", f"recovered {len(found)} tool call(s) from the reply's text ({said})", log,
             rules=[rule for rule, _ in rules])
    if len(kept := first_steps(found)) < len(found):
        note("trimmed", f"only the first {len(kept)} of them kept: the rest were planned before the result of "
                        f"a read or a command they need, and are dropped from the history", log)
    return [(f"recovered_{len(calls)}_{i}", name, arguments) for i, (name, arguments) in enumerate(kept)]


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


def written(text: str, settings: Settings, calls: list, whole: bool) -> tuple[list, list]:
    """recover.recover_all on a reply, knowing what the run has seen. `whole`: the reply has
    ended, and not at the token limit (a call may then run to its end)."""
    workspace = settings.workspace.resolve()
    known = [str(path.relative_to(workspace)) for path in settings.state.seen if path.suffix == ".py"]
    return recover_all(text, PARAMETERS, lambda path: current_text(path, settings), ran_unchanged(calls), known, whole)


CLOSES = re.compile(r"```|</[\w-]+>|<\|tool_calls_section_end\|>")  # what can end a call written as text: a fence, </tools>
# How Qwen's chat template begins a tool's result, on a line of its own: a model writing one imagines it.
# (In the middle of a line, after `"content": "`, the model is copying a result it saw: see recover._open_ended.)
IMAGINED = re.compile(r"^[ \t]*<tool_response>", re.M)


def complete(text: str, settings: Settings, calls: list) -> int | None:
    """How much of a reply, while it streams, to keep once it has just closed a command or a read
    written as a call (a closing fence or tag that recover reads as one): all of it, and the reply
    is stopped there; None while it should go on. A command shown as a ```sh or ```python block
    does not stop it: only the rest of the reply tells an action (the reply ends there) from an
    answer that shows the command as advice (recover._ends_in_code), and an answer is never cut.

    Failure answered: small models wrap their call in prose, a plan before it and an explanation
    after it, 200-500 tokens around a call of 50-150; on a CPU that is most of a turn. Nothing
    planned after a command or a read runs anyway (see blind: it needs that output first); after
    a file written as a block the reply goes on, since the command that runs it often follows.
    Also stopped: a reply that has written a call and starts writing its result itself (IMAGINED).
    Small models go on to invent the output of the call they meant, up to the token limit; the
    reply is kept up to the tag, so the invention is neither generated nor in the history, and the
    call runs. (With no call before the tag, the reply is left alone: it is the model's answer.)"""
    if (imagined := IMAGINED.search(text, max(0, len(text) - 60))) and written(text[:imagined.start()], settings, calls, False)[0]:
        return imagined.start()
    if not CLOSES.search(text[-40:]):  # (a streamed piece is a few characters)
        return None
    found, rules = written(text, settings, calls, whole=False)  # (still streaming: no call runs to the end yet)
    return len(text) if found and found[-1][0] in ("run_shell", "read_file") and rules[-1][0] == TEXT_CALL else None


def current_text(path: str, settings: Settings) -> str | None:
    """A file's text now, for recover.file_blocks to compare with; None if it is no regular file."""
    try:
        target = inside(path, settings)
        return target.read_text(errors="replace") if target.is_file() else None
    except Exception:
        return None


def ran_unchanged(calls: list) -> set[str]:
    """The commands run since the last good write_file. Shown again in a ```sh block, one of
    them quotes what ran (as a final answer does); it is not a new call."""
    commands = set()
    for name, arguments, result in calls:
        if name == "write_file" and result.ok:
            commands.clear()
        elif name == "run_shell" and result.exit_code is not None:  # (else it never ran)
            commands.add(parsed(arguments).get("command"))
    return commands


# --- before_call: a call not run ---------------------------------------------------------------

SKIPPED = ("Error: not run, because it was planned before the result of a call above it in the same reply "
           "(a file's text, a command's output or an error) was seen. Read that result first; make this call "
           "again if it still makes sense.")


def blind(name: str, earlier: list) -> bool:
    """Was this call planned without a result it needed? `earlier`: this reply's calls before it.
    Failure answered: small models read a file and "fix" it, or run a failing check and rewrite,
    in one breath: in a reply of several calls, a later one is written before the earlier one's
    result was seen.
    A write is, after a file's text, a command's output or a failed write (not after a read that
    found no file: models look whether a file exists, then create it). A command is, after a
    failed write or command (a write, then the command that runs it, is the usual pair). Reads
    always run: they change nothing."""
    if name == "write_file":
        return any((tool == "read_file" and result.ok) or tool == "run_shell" or (tool == "write_file" and not result.ok)
                   for tool, _, result in earlier)
    return name == "run_shell" and any(tool != "read_file" and not result.ok for tool, _, result in earlier)


KEEP_RECENT = 4  # messages at the end that compaction shortens only as a last resort


def compact(messages: list, n_prompt: int | None, n_ctx: int | None, log=lambda event, **data: None) -> bool:
    """Make room: the oldest tool results and written file bodies become stubs, then the largest recent
    results lose their middle (head and tail kept); the system prompt and the task stay. False when
    nothing was left to shrink. The only place history is ever rewritten (new dicts for old ones)."""
    total = sum(len(json.dumps(m)) for m in messages)
    # aim at 70% of the window, so the next few turns fit too; without numbers, free half
    want = total // 2 if not (n_prompt and n_ctx) else int(total * (1 - 0.7 * n_ctx / n_prompt)) + 1
    freed = 0
    for i, m in enumerate(messages[:-KEEP_RECENT]):
        if i < 2 or freed >= want:
            continue
        if m["role"] == "tool" and len(m["content"]) > 200:
            stub = f"[compacted: {len(m['content'])} characters of old output removed to fit the context]"
            freed += len(m["content"]) - len(stub)
            messages[i] = {**m, "content": stub}
        if m.get("tool_calls"):
            calls = [without_file_body(call) for call in m["tool_calls"]]
            freed += sum(len(json.dumps(a)) - len(json.dumps(b)) for a, b in zip(m["tool_calls"], calls))
            messages[i] = {**messages[i], "tool_calls": calls}
    recent = [i for i, m in enumerate(messages) if i >= 2 and m["role"] == "tool" and len(m["content"]) > 400]
    for i in sorted(recent, key=lambda i: -len(messages[i]["content"])):  # the newest result can be the large one
        if freed >= want:
            break
        content = messages[i]["content"]
        keep = max(100, (len(content) - (want - freed)) // 2)
        if 2 * keep + 100 < len(content):
            cut = content[:keep] + prompts.SHORTENED.format(cut=len(content) - 2 * keep) + content[-keep:]
            freed += len(content) - len(cut)
            messages[i] = {**messages[i], "content": cut}
    if freed > 0:
        note("compacted", f"context full ({n_prompt or '?'} of {n_ctx or '?'} tokens): shortened tool "
                          f"output, freeing {freed} characters", log)
    return freed > 0


def without_file_body(call: dict) -> dict:
    """A write_file call with its content (and an edit's old text) replaced by stubs (the file is on disk)."""
    if call["function"]["name"] != "write_file" or len(call["function"]["arguments"]) <= 200:
        return call
    args = parsed(call["function"]["arguments"])
    stub = json.dumps({**args, **{k: "[compacted]" for k in ("content", "old") if k in args}})
    return {**call, "function": {**call["function"], "arguments": stub}}
