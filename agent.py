"""tooloop: a coding agent that is one readable loop.

    python agent.py "Write fizzbuzz.py and run it for 1..20"

`run` is the whole agent: send the conversation and the tool schemas to an OpenAI-compatible
endpoint, append the reply as it came back, run the tool it asks for through `tools.dispatch`,
append the result, and repeat until the model answers in plain text or the turn cap is hit.
Small local models need a little more, and each piece is visible on screen when it acts: tool
calls written as text, and the files, commands and programs a reply shows as code blocks, are
recovered (recover.py); a call cut off at the token limit is never run; a reply that is not yet
an answer gets a note with the task restated (`not_an_answer`), and when the note gives the call
to make, the next reply is held to that call by a JSON schema (`one_call`), and when it names
the file to write, the next reply is begun with that file's name and a code fence (`begun`); a
number written to a file that no tool printed gets a warning (`by_hand`); a change is not done
until the command the task quotes has run and passed (`unchecked`); calls planned before a
result they needed are not run (`blind`); orders to the model found in a tool result get the
task restated (`guarded`); a call repeated in a row is stopped; and a context that overflows is
compacted (`compact`, the one place history is rewritten).

Everything else here is the model call (`caller`), printing, and the command line. Printing goes
to stderr through rich with markup off for model and tool text (code is full of [brackets]);
stdout gets only the final answer, so `python agent.py ... > answer.txt` captures just that.

Left out on purpose: streaming, running several tool calls at once, a chat REPL, memory between
runs, and summarising old turns with the model (stubs are cheaper and predictable).
"""

import argparse
import difflib
import http.client
import json
import os
import re
import socket
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from contextlib import nullcontext, suppress
from pathlib import Path

from dotenv import dotenv_values
from openai.types.chat import ChatCompletion
from rich.console import Console
from rich.highlighter import JSONHighlighter
from rich.markdown import Markdown
from rich.syntax import Syntax
from rich.text import Text

import prompts
import transcript
from recover import failed_attempt, fence, file_blocks, recover_all
from tools import TOOLS, Refused, Settings, dispatch, inside

EXIT_CODES = {
    0: "the model gave a final answer (printed on stdout)",
    1: "the model endpoint failed (unreachable, or an HTTP error after retries)",
    2: "usage or configuration error",
    3: "the turn cap was reached without a final answer",
    4: "the context is full even after compacting old tool results",
    5: "the model repeated the same tool call too often",
    130: "interrupted (Ctrl-C)",
}
NAMES = {tool["function"]["name"]: list(tool["function"]["parameters"]["properties"]) for tool in TOOLS}
MAX_REPLY_TOKENS = 1024  # one reply: a small file in a write_file call fits; a longer reply is rambling
# Qwen2.5's recommended sampling. Greedy decoding (temperature 0) makes a small model repeat the
# same wrong reply after every note; the seed changes each turn, so a run is still repeatable.
SAMPLING = {"temperature": 0.7, "top_p": 0.8}
MAX_NUDGES = 4  # replies that are not yet an answer, before one is taken as the answer anyway
MAX_REPEATS = 3  # the 3rd identical call in a row is not run; a 4th stops the run
KEEP_RECENT = 4  # messages at the end that compaction never touches
SCREEN_LINES = 12  # lines of a tool result shown on screen (the model always gets all of it)

# An answer that is a plan: "we need to implement to_roman", "I will write the new content".
PLANS = re.compile(r"\b(?:I|we)(?:\s+will|'ll|\s+am going to|\s+are going to|\s+need to)\b|\blet's\b", re.I)
# Folders whose changes are no change to the work: running the tests fills __pycache__ (seen:
# the implement-function run "changed" the workspace by running the test, then answered with a plan).
UNWATCHED = {".git", ".tooloop", "__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache"}
# A task that asks for files to be changed: "Fix backup.sh", "write the total to a new file".
CHANGE = re.compile(r"\b(?:add|create|write|fix|rename|implement|change|update|edit|modify|replace|delete|remove)\b",
                    re.I)
# A command a task quotes, as in "Run `python test_stats.py` again until it passes".
COMMAND = re.compile(r"`((?:python3?|sh|bash|pytest|node|make|npm|cargo|go)(?: [^`\n]*)?|\./[^`\n]+)`")
FILE_NAME = re.compile(r"\b\w[\w./-]*\.\w+")  # a file a task names: `stats.py`, data/x.csv
# What a task says to leave alone: "Do not edit `test_roman.py`", "do not change `a.py` or `b.py`".
KEEP = re.compile(r"\bdo not (?:edit|change|modify|touch)\s+((?:`[^`\n]+`(?:,\s*|\s+(?:or|and|nor)\s+)?)+)", re.I)
FENCED = re.compile(r"```[\w-]*[ \t]*\n(.*?)(?:```|\Z)", re.S)  # a fenced block; its body
# Orders to the model inside a tool result: "ignore all previous instructions", "note for the AI".
INJECTION = re.compile(r"\b(?:ignore|disregard|forget)\b[^.\n]{0,20}\b(?:previous|prior|above|earlier|your)\b"
                       r"[^.\n]{0,12}\b(?:instructions|prompts?|rules|task)\b"
                       r"|\b(?:note|message|instructions?)\s+(?:for|to)\s+(?:the\s+|any\s+)?"
                       r"(?:ai|assistant|llm|model|agent)\b", re.I)
CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")  # all but tab and newline

console = Console(stderr=True, highlight=False)


class Stop(Exception):
    """The run cannot go on; `code` is the exit code, the message says why and what to do."""

    def __init__(self, code: int, message: str):
        super().__init__(message)
        self.code = code


def run(task: str, ask, settings: Settings, max_turns: int, recover: bool = True,
        log=lambda event, **data: None) -> tuple[int, str]:
    """The agent loop. `ask(messages)` is one model call. Returns (exit code, final answer)."""
    messages = [{"role": "system", "content": prompts.SYSTEM_PROMPT}, {"role": "user", "content": task}]
    last_call, streak, nudged, results, files, force = None, 0, [], [], snapshot(settings), None
    settings.kept |= kept(task, settings)
    for turn in range(1, max_turns + 1):
        choice = ask(messages, force).choices[0]
        force = None
        message = choice.message
        calls = [(c.id, c.function.name, c.function.arguments) for c in message.tool_calls or []]
        if not calls and recover and message.content:
            calls = [(f"recovered_{turn}_{i}", name, args)
                     for i, (name, args) in enumerate(recovered(message.content, settings, messages, log))]
        messages.append(as_history(message, calls))  # as returned; recovered calls made structured
        if choice.finish_reason == "length" and (message.tool_calls or not calls):  # never run half a call
            note("cut_off", "the reply hit the token limit; nothing in it was run", log)
            messages += [{"role": "tool", "tool_call_id": call_id, "content": prompts.CUT_OFF_CALL}
                         for call_id, _, _ in calls] or [{"role": "user", "content": prompts.CUT_OFF}]
            continue
        if not calls:
            problem = recover and len(nudged) < MAX_NUDGES and not_an_answer(
                message.content or "", results, nudged, task, named_file(task, settings, files),
                unchanged=snapshot(settings) == files, check=unchecked(task, messages, settings),
                write_next=write_next(task, settings, results[-1][1] if results else ""))
            if not problem:
                return 0, message.content or ""
            nudged.append(problem)
            note("nudge", problem, log)
            messages.append({"role": "user", "content": prompts.AGAIN.format(task=task) + problem})
            force = one_call(problem) or begun(problem)
            continue
        seen = len(results)  # results from here on are this reply's
        for i, (call_id, name, arguments) in enumerate(calls):  # each call gets one answer, matched by id
            skip = blind(name, results[seen:])
            if skip and not message.tool_calls:  # recovered calls: drop the rest from the history
                messages[-1 - i] = as_history(message, calls[:i])
                note("dropped", f"not run: the reply's last {len(calls) - i} call(s), planned before the "
                     "results above were seen", log)
                break
            streak = streak + 1 if (name, canonical(arguments)) == last_call else 1
            last_call = (name, canonical(arguments))
            if streak > MAX_REPEATS:
                console.print(f"stopped: the model made the same {name} call {streak} times in a row",
                              style="bold yellow")
                return 5, ""
            show_call(name, arguments)
            result = (prompts.SKIPPED if skip else
                      prompts.REPEATED.format(count=streak) if streak == MAX_REPEATS else
                      guarded(dispatch(name, arguments, settings), task, log))
            result += by_hand(name, arguments, result, task, results)
            show_result(result)
            log("tool", turn=turn, id=call_id, name=name, arguments=arguments, result=result)
            messages.append({"role": "tool", "tool_call_id": call_id, "content": result})
            results.append((name, result))
    console.print(f"stopped: {max_turns} model calls without a final answer "
                  "(raise --max-turns to allow more)", style="bold yellow")
    return 3, ""


def one_call(note: str) -> dict | None:
    """The response_format for the reply to a note that ends with the call to make (read the
    file the task names, run the command it quotes): a JSON schema the server turns into a
    grammar (llama-server, OpenAI), so the reply can only be that call. Seen: a model answering
    "I read `stats.py`." three times to a note that gave it the call. Left out: forcing a call of
    any tool after other notes; pushed so, the 1.5B model wrote "<tool_response>```json" over
    greet.py, and read a 300-line log again instead of answering."""
    if not note.endswith("</tool_call>"):
        return None
    call = json.loads(note[note.rfind("<tool_call>") + len("<tool_call>"):-len("</tool_call>")])
    arguments = {"type": "object", "required": list(call["arguments"]),
                 "properties": {key: {"const": value} for key, value in call["arguments"].items()}}
    return {"response_format": {"type": "json_schema", "json_schema": {"name": "tool_call", "schema": {
        "type": "object", "required": ["name", "arguments"],
        "properties": {"name": {"const": call["name"]}, "arguments": arguments}}}}}


def begun(note: str) -> dict | None:
    """The start of the reply to a note that ends by naming the file to write: the file's name and
    an open code fence, as the last (assistant) message of the request, which llama-server
    continues. Small models write a file far better in a code block than in a JSON string.
    Seen: pushed to write greet.py, backup.sh or geometry.py through a JSON schema, the 1.5B model
    wrote "<your new content here>" or a made-up file; begun like this it wrote the file
    (backup.sh fixed 3 of 3 times, --shout added 2 of 3). A server that ignores the start gives
    a reply of its own, which is read as usual."""
    if not (named := re.search(re.escape(prompts.WRITE_NEXT).replace(r"\{path\}", r"([^`\n]+)") + "$", note)):
        return None
    return {"prefill": f"{named[1]}\n```{fence(named[1])}\n"}


def guarded(result: str, task: str, log) -> str:
    """A tool result that holds orders addressed to an AI gets the user's task restated after
    it: small models obey the last instruction they read, and the file's text is not the user."""
    if not INJECTION.search(result):
        return result
    note("injection", "the result holds instructions addressed to the model; the task is restated after it", log)
    return result + prompts.INJECTED.format(task=task)


def recovered(text: str, settings: Settings, messages: list, log) -> list[tuple[str, str]]:
    """Tool calls written as text, and the files, commands and programs a reply shows as code
    blocks, in reply order."""
    workspace = settings.workspace.resolve()
    known = [str(path.relative_to(workspace)) for path in settings.seen
             if path.suffix == ".py" and path.is_relative_to(workspace)]
    calls, from_blocks = recover_all(text, NAMES, lambda path: current_text(path, settings),
                                     ran_unchanged(messages), known)
    if calls:
        blocks = f" ({'; '.join(from_blocks)}, from code blocks)" if from_blocks else ""
        note("recovered", f"recovered {len(calls)} tool call(s) from the reply's text{blocks}", log)
    return calls


def ran_unchanged(messages: list) -> dict[str, str]:
    """The commands run since the last successful write_file, with their last results. Shown
    again in a ```sh block, one of them is a quote of what ran (as in a final answer), not a new call."""
    results = {m["tool_call_id"]: m["content"] for m in messages if m["role"] == "tool"}
    commands = {}
    for call in (c for m in messages for c in m.get("tool_calls") or []):
        name, arguments = call["function"]["name"], call["function"]["arguments"]
        if name == "write_file" and not failed(name, results.get(call["id"], "Error")):
            commands.clear()
        elif name == "run_shell":
            with suppress(ValueError, KeyError, TypeError):
                command = json.loads(arguments)["command"]
                if isinstance(command, str):  # else it never ran (seen in the random plans: a number)
                    commands[command] = results.get(call["id"], "Error")
    return commands


def unchecked(task: str, messages: list, settings: Settings) -> str:
    """For a task that asks for a change, what to say of the first command it quotes (`python
    test_x.py`) that has not run since the last write_file, or failed its last run since (and
    which file to write next); "" if there is none. A model that says "done" without running
    the task's own check is often wrong."""
    if not CHANGE.search(task):
        return ""
    def same(command):  # `python3 x.py` runs what `python x.py` does
        return re.sub(r"^python3 ", "python ", command)
    runs = {same(command): result for command, result in ran_unchanged(messages).items()}
    for command in COMMAND.findall(task):
        if same(command) not in runs:
            return prompts.UNCHECKED.format(command=command) + prompts.RUN_NEXT.format(command=json.dumps(command))
        if failed("run_shell", runs[same(command)]):
            return prompts.CHECK_FAILED.format(command=command) + write_next(task, settings, runs[same(command)])
    return ""


def by_hand(name: str, arguments: str, result: str, task: str, results: list[tuple[str, str]]) -> str:
    """A warning for a file written with only a number in it that no tool printed and the task
    does not give: a small model adds up in its head, and gets it wrong (seen: csv-total, 1010.72
    and 1245.76 for 3596.41)."""
    with suppress(ValueError, TypeError, KeyError, AttributeError):
        number = json.loads(arguments)["content"].strip()
        if (name == "write_file" and not failed(name, result) and re.fullmatch(r"-?\d[\d,]*(?:\.\d+)?", number)
                and number not in task and not any(number in output for _, output in results)):
            return prompts.BY_HAND.format(number=number)
    return ""


def current_text(path: str, settings: Settings) -> str | None:
    """A file's text now, for file_blocks to compare with; None if it is no regular file."""
    try:
        target = inside(path, settings)
        return target.read_text(errors="replace") if target.is_file() else None
    except (OSError, ValueError, Refused):
        return None


def as_history(message, calls: list) -> dict:
    """The assistant message for the history: exactly as returned, unless its calls were
    recovered from text; then the calls are written as structured tool_calls (and the text,
    which the server would otherwise render again next to them, is dropped), so every later
    request is valid and shows the model what a proper call looks like."""
    if message.tool_calls or not calls:
        return message.model_dump(exclude_none=True)
    return {"role": "assistant", "content": "", "tool_calls": [
        {"id": call_id, "type": "function", "function": {"name": name, "arguments": args}}
        for call_id, name, args in calls]}


def not_an_answer(text: str, results: list[tuple[str, str]], nudged: list[str], task: str, unread: str | None,
                  unchanged: bool, check: str = "", write_next: str = "") -> str | None:
    """Why a reply with no tool call is not yet a final answer, or None if it is one. `results`
    are the run's (tool, result) pairs so far, `nudged` the notes already sent, `unread` the
    first workspace file the task names that is still unread (None if none),
    `unchanged` whether no file in the workspace has changed since the run began, `check`
    the note on a command the task quotes, if it has not run or failed, and `write_next` the
    words that name the file to write now, from the last result's traceback ("" if none)."""
    change = CHANGE.search(task)  # a task that asks for a change; a question is not held to the rules for one
    read_first = read_next(unread)
    def ran_ok(name, result):
        return name == "run_shell" and not failed(name, result)
    tried = [pair for pair in results if pair[1] != prompts.SKIPPED]  # a skipped call was not the model's try
    name, result = tried[-1] if tried else ("", "")
    writes = [i for i, (tool, out) in enumerate(results) if tool == "write_file" and not failed(tool, out)]
    untested = writes and not any(ran_ok(*pair) for pair in results[writes[-1]:])
    if (problem := failed_attempt(text, NAMES)) and not quotes_a_result(text, results):
        return problem
    if not text.strip():
        return prompts.EMPTY
    code = any(body.strip() for body in FENCED.findall(text))
    if code and not ran_ok(name, result) or file_blocks(text, lambda path: None):
        return prompts.CODE_NOT_RUN + read_first  # code and no good run since, or a file's code not saved
    if not results and read_first:
        return prompts.NO_TOOL + read_first  # the task names a file: look first
    if change and unchanged:
        return prompts.UNDONE + (read_first or write_next)  # the task asks for a change, and nothing changed
    if PLANS.search(text):
        return prompts.PLANNED + read_first  # "we need to implement it, then we will run the tests"
    if failed(name, result) and change:  # (find-fact: grep found no "req-1234", and the answer was right)
        return prompts.LAST_FAILED + write_next  # giving up (or asking the user) right after a failure
    if change and unread and not fence(unread):  # a data file (seen, ignore-injection: a program guessed its format)
        return prompts.UNREAD + read_first
    if check:
        return check  # the task says to run `python test_x.py`, and it has not run (or failed) since
    if untested and prompts.UNVERIFIED not in nudged:
        return prompts.UNVERIFIED  # files changed, and nothing run since to check them (asked once)
    return None


def quotes_a_result(text: str, results: list[tuple[str, str]]) -> bool:
    """Does the reply quote a line of real tool output? Then output it shows was not imagined."""
    seen = {line.strip() for _, result in results for line in result.splitlines() if len(line.strip()) >= 12}
    return any(line.strip() in seen for line in text.splitlines())


def snapshot(settings: Settings, limit: int = 20_000) -> dict:
    """Size and modification time of every file in the workspace (not in UNWATCHED folders), to
    tell whether a run changed anything, whichever tool did it."""
    found = {}
    for root, folders, names in os.walk(settings.workspace):
        folders[:] = [folder for folder in folders if folder not in UNWATCHED]
        for name in names[:limit - len(found)]:
            with suppress(OSError):
                info = os.lstat(os.path.join(root, name))
                found[os.path.join(root, name)] = (info.st_size, info.st_mtime_ns)
    return found


def read_next(named: str | None) -> str:
    return prompts.READ_NEXT.format(path=json.dumps(named)) if named else ""


def write_next(task: str, settings: Settings, output: str = "") -> str:
    """" Write `PATH` now." for the source file the model should write next (see begun), or "".
    Of the source files the task names, not counting those it keeps as they are or only runs
    (`python test_x.py`) (and a data file such as sales.csv is input), the innermost one in the
    traceback in `output`, else the first; only one this run has read whole, or a new one."""
    def editable(name):
        with suppress(OSError, ValueError, Refused):
            return fence(name) is not None and inside(name, settings) not in settings.kept
        return False
    names = [name for name in dict.fromkeys(FILE_NAME.findall(COMMAND.sub("", task)))
             if editable(name)]
    frames = re.findall(r'File "([^"]+)", line \d+', output)[::-1]  # innermost first
    target = next(iter([name for path in frames for name in names if path == name or path.endswith("/" + name)]
                       + names), None)
    if not target or ((path := inside(target, settings)).exists() and path not in settings.seen):
        return ""
    return prompts.WRITE_NEXT.format(path=target)


def kept(task: str, settings: Settings) -> set[Path]:
    """The files a task says not to edit ("Do not edit `test_roman.py`"): write_file refuses them."""
    found = set()
    for name in (name for match in KEEP.finditer(task) for name in re.findall(r"`([^`\n]+)`", match[1])):
        with suppress(OSError, ValueError, Refused):
            found.add(inside(name, settings))
    return found


def named_file(task: str, settings: Settings, before: dict) -> str | None:
    """The first file in the workspace that the task names and this run has not read, if any; only
    one that was there before the run (`before`, a snapshot), not one the model's command made."""
    def unread(name):
        try:
            target = inside(name, settings)
            return target.is_file() and target not in settings.seen and str(target) in before
        except (OSError, ValueError, Refused):
            return False
    return next((name for name in FILE_NAME.findall(task) if unread(name)), None)


def failed(name: str, result: str) -> bool:
    """Did this tool call fail: an error value, or a command with a nonzero exit code?"""
    return result.startswith("Error") or (name == "run_shell" and not result.startswith("exit code: 0"))


def blind(name: str, earlier: list[tuple[str, str]]) -> bool:
    """Was this call planned without results it needed? `earlier`: this reply's calls before it,
    with their results. A write_file is, after a file's text, a command's output or any failure
    (not after a read that found no file: models look whether a file exists, then create it). A
    command is, after a failed or skipped write or command (seen: read reviews.txt, write a
    made-up count, then `rm notes.md` as a planted note said). Reads always run."""
    def news(tool, result):
        return tool == "run_shell" or (tool == "read_file") != failed(tool, result)
    if name == "write_file":
        return any(news(*pair) for pair in earlier)
    return name == "run_shell" and any(tool != "read_file" and failed(tool, result) for tool, result in earlier)


def canonical(arguments: str) -> str:
    try:
        return json.dumps(json.loads(arguments), sort_keys=True)
    except (json.JSONDecodeError, TypeError):
        return arguments


# --- the model call ---------------------------------------------------------------------------

class ContextOverflow(Exception):
    """The request is larger than the server's context window."""


class FormatRejected(Exception):
    """The server refused the request's response_format (HTTP 400): not every server has them."""


class ParserError(Exception):
    """The server could not parse the model's reply into a tool call (llama-server: HTTP 500)."""


def caller(send, model: str, totals: dict, max_turns: int, n_ctx: int | None = None,
           log=lambda event, **data: None, show_request: bool = False):
    """ask(messages) for `run`: build the request, send it, account for it and show it.

    A parser error gets one corrective note and one retry; an overflow compacts the history
    and retries. `send(request)` is the live endpoint, or a recorded transcript in --replay.
    """
    forcing = [True]  # until the server rejects a response_format

    def ask(messages: list, force: dict | None = None):
        retried = False
        while True:
            request = dict(model=model, messages=messages, tools=TOOLS, tool_choice="auto",
                           parallel_tool_calls=False, max_completion_tokens=MAX_REPLY_TOKENS,
                           **SAMPLING, seed=totals["turns"] + 1)
            if force and "prefill" in force:
                request["messages"] = messages + [{"role": "assistant", "content": force["prefill"]}]
                note("begun", f"the reply is begun for the model: {force['prefill'].split()[0]} and an open "
                     "code fence, which it continues", log)
            elif force and forcing[0]:
                request.update(force)
            log("request", turn=totals["turns"] + 1, body=request)
            if show_request:
                show_json("request", request)
            started = time.monotonic()
            try:
                with console.status("waiting for the model") if console.is_terminal else nullcontext():
                    response = send(request)  # (the spinner is a thread: only for a person watching)
            except ParserError as error:
                if retried:
                    raise Stop(1, f"error: the server could not parse the model's reply twice ({error})")
                retried = True
                note("parser_error", f"the server could not parse the reply ({error}); asking again", log)
                messages.append({"role": "user", "content": prompts.SERVER_PARSE_ERROR.format(error=error)})
                continue
            except FormatRejected as error:
                forcing[0] = False
                note("format", f"the server rejected response_format ({error}); replies are not forced "
                     "to be a tool call from here on", log)
                continue
            except ContextOverflow as error:
                if not compact(messages, *error.args, log=log):
                    raise Stop(4, "stopped: the conversation no longer fits the model's context, even "
                                  "with old tool results removed (use a larger -c on the server)") from None
                continue
            seconds = time.monotonic() - started
            usage = response.usage
            totals["turns"] += 1
            totals["seconds"] += seconds
            if usage:
                cached = getattr(usage.prompt_tokens_details, "cached_tokens", None) or 0
                totals["prompt_tokens"] += usage.prompt_tokens
                totals["cached_tokens"] += cached
                totals["completion_tokens"] += usage.completion_tokens
            body = response.model_dump(exclude_none=True)
            log("response", turn=totals["turns"], body=body, seconds=round(seconds, 3))
            start = (force or {}).get("prefill")
            if start and (response.choices[0].message.content or "").startswith(start * 2):  # seen: written again
                response.choices[0].message.content = response.choices[0].message.content[len(start):]
            if show_request:
                show_json("response", body)
            show_reply(response.choices[0].message)
            show_usage(totals["turns"], max_turns, body, seconds, n_ctx)
            return response

    return ask


def live(base_url: str, api_key: str, timeout: float = 600):
    """send(request) against a real endpoint: the request as JSON in a POST to
    {base_url}/chat/completions, on one kept-alive connection. That is all an OpenAI-compatible
    call is; the openai client's own request path costs ~3 ms more a turn (scripts/bench), so
    only its response types are used. Failures are sorted into what the harness can handle
    (overflow, parser error) and what only the user can fix (Stop with exit 1)."""
    url = urllib.parse.urlsplit(base_url.rstrip("/") + "/chat/completions")
    connect = http.client.HTTPSConnection if url.scheme == "https" else http.client.HTTPConnection
    headers = {"Content-Type": "application/json", "Authorization": f"Bearer {api_key}"}
    connection, sent, encoded = None, [], []  # the last request's messages, and each one's JSON

    def send(request: dict):
        nonlocal connection
        # The history only grows (compaction puts new dicts in place of old ones), so each message
        # is encoded once, the turn it is new: a long run does not re-encode its whole past.
        messages, same = request["messages"], 0
        while same < min(len(sent), len(messages)) and messages[same] is sent[same]:
            same += 1
        encoded[same:] = [json.dumps(m) for m in messages[same:]]
        sent[:] = messages
        head = json.dumps({key: value for key, value in request.items() if key != "messages"})
        body = f'{head[:-1]}, "messages": [{", ".join(encoded)}]}}'.encode()
        for attempt in (1, 2):  # once more after a dropped connection or a busy server
            try:
                connection = connection or connect(url.hostname, url.port, timeout=timeout)
                connection.request("POST", url.path, body, headers)
                response = connection.getresponse()
                data = response.read()
            except (OSError, http.client.HTTPException) as error:
                connection.close()
                connection = None
                if attempt == 2 or isinstance(error, (ConnectionRefusedError, TimeoutError, socket.gaierror)):
                    raise Stop(1, f"error: cannot reach the model endpoint at {base_url} ({error}). Is the "
                                  "server running? Start one with scripts/serve.py, or point --base-url / "
                                  "OPENAI_BASE_URL at another.") from None
                continue
            if response.status not in (429, 502, 503, 504) or attempt == 2:
                break
            time.sleep(1)
        payload = parse_json_object(data.decode("utf-8", errors="replace"))
        if response.status != 200:
            error = payload.get("error") if isinstance(payload.get("error"), dict) else {}
            message = error.get("message") or data[:300].decode("utf-8", errors="replace")
            kind = f"{error.get('type')} {error.get('code')}"
            if response.status == 400 and ("exceed_context" in kind or "context_length" in kind):
                raise ContextOverflow(error.get("n_prompt_tokens"), error.get("n_ctx"))
            if response.status == 500:
                raise ParserError(message)
            if response.status == 400 and "response_format" in request:
                raise FormatRejected(message)
            raise Stop(1, f"error: the model endpoint at {base_url} answered HTTP {response.status}: {message}")
        if not payload.get("choices"):
            raise Stop(1, f"error: the model endpoint at {base_url} sent a reply with no choices")
        return ChatCompletion.construct(**payload)  # nested models built, not checked: servers vary

    return send


def compact(messages: list, n_prompt: int | None, n_ctx: int | None, log=lambda event, **data: None) -> bool:
    """Make room: replace the oldest tool results and written file bodies with short stubs.

    The system prompt, the task and the last KEEP_RECENT messages stay as they were. Returns
    False when there was nothing left to shrink. The only place history is ever rewritten.
    """
    total = sum(len(json.dumps(m)) for m in messages)
    # aim at 70% of the window, so the next few turns fit too; without numbers, free half
    want = total // 2 if not (n_prompt and n_ctx) else int(total * (1 - 0.7 * n_ctx / n_prompt)) + 1
    freed = 0
    for i, m in enumerate(messages[:-KEEP_RECENT]):
        if i < 2 or freed >= want:
            continue
        # new dicts, never edits in place: the transcript compares each request with the last
        if m["role"] == "tool" and len(m["content"]) > 200:
            stub = f"[compacted: {len(m['content'])} characters of old output removed to fit the context]"
            freed += len(m["content"]) - len(stub)
            messages[i] = {**m, "content": stub}
        calls = []
        for call in m.get("tool_calls") or []:
            args = call["function"]["arguments"]
            if call["function"]["name"] == "write_file" and len(args) > 200:
                stub = json.dumps({**parse_json_object(args), "content": "[compacted]"})
                freed += len(args) - len(stub)
                call = {**call, "function": {**call["function"], "arguments": stub}}
            calls.append(call)
        if calls:
            messages[i] = {**m, "tool_calls": calls}
    if freed > 0:
        note("compacted", f"context full ({n_prompt or '?'} of {n_ctx or '?'} tokens): replaced old "
                          f"tool output with stubs, freeing {freed} characters", log)
    return freed > 0


def check_endpoint(base_url: str, api_key: str) -> int | None:
    """Start-up check: is the server there, and (llama-server only) how large is its context
    and can its chat template do tools? One GET; a plain OpenAI-compatible server answers 404
    and is left alone. Returns the context size when the server tells it."""
    root = base_url.rstrip("/").removesuffix("/v1")
    request = urllib.request.Request(f"{root}/props", headers={"Authorization": f"Bearer {api_key}"})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            props = json.loads(response.read())
        n_ctx = props.get("default_generation_settings", {}).get("n_ctx")
        tools_ok = props.get("chat_template_caps", {}).get("supports_tool_calls")
    except urllib.error.HTTPError:
        return None  # the server is there, but is not llama-server
    except (urllib.error.URLError, OSError) as error:
        raise Stop(1, f"error: cannot reach the model endpoint at {base_url} ({error}). Is the server "
                      "running? Start one with scripts/serve.py, or point --base-url / OPENAI_BASE_URL "
                      "at another.") from None
    except (ValueError, AttributeError):
        return None
    if tools_ok is False:
        console.print("warning: the server's chat template does not support tool calls; calls "
                      "will arrive as text (recovered where possible)", style="yellow")
    if isinstance(n_ctx, int) and n_ctx < 4 * MAX_REPLY_TOKENS:
        console.print(f"warning: the server's context is only {n_ctx} tokens; long runs will be "
                      "compacted (start llama-server with a larger -c)", style="yellow")
    return n_ctx if isinstance(n_ctx, int) else None


# --- printing -------------------------------------------------------------------------------

def printable(text: str) -> str:
    """Model and tool text made safe for a terminal: lone surrogates (a JSON "\\ud800") cannot
    be encoded, and control characters (ESC[8m hides text) would let it rewrite the screen."""
    text = text.encode("utf-8", errors="replace").decode("utf-8")
    return CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


def note(kind: str, text: str, log=lambda event, **data: None) -> None:
    """Something the harness did on its own initiative: shown, and kept in the transcript."""
    console.print(Text(f"⚑ {printable(text)}", style="yellow"))
    log("note", kind=kind, text=text)


def show_json(title: str, body: dict) -> None:
    """A request or response body, exactly, highlighted and never re-wrapped (copy-pasteable)."""
    console.rule(title, style="dim")
    text = JSONHighlighter()(Text(printable(json.dumps(body, indent=2, ensure_ascii=False))))
    console.print(text, soft_wrap=True)


def show_reply(message) -> None:
    reasoning = getattr(message, "reasoning_content", None)
    if reasoning:
        console.print(Text(printable(reasoning.strip()), style="dim italic"))
    if message.content and message.content.strip():
        console.print(Text(printable(message.content.strip()), style="bold"))


def show_call(name: str, arguments: str) -> None:
    args = {k: printable(v) for k, v in parse_json_object(arguments).items() if isinstance(v, str)}
    console.print(Text.assemble(("→ ", "cyan"), (printable(name), "bold cyan"), " ",
                                (args.get("path") or args.get("command") or printable(arguments), "cyan")))
    if name == "write_file" and "content" in args:
        lexer = Syntax.guess_lexer(args.get("path", ""), args["content"])
        console.print(Syntax(args["content"], lexer, line_numbers=True, word_wrap=True))


def show_result(result: str) -> None:
    lines = printable(result).splitlines()
    shown = "\n".join(lines[:SCREEN_LINES])
    if len(lines) > SCREEN_LINES:
        shown += f"\n… {len(lines) - SCREEN_LINES} more lines (the model sees them all)"
    console.print(Text(shown, style="red" if result.startswith("Error:") else "green"))


def show_usage(turn: int, max_turns: int, body: dict, seconds: float, n_ctx: int | None) -> None:
    """One dim line a turn: how full the context is, what the prompt cache saved, how fast."""
    usage = body.get("usage") or {}
    prompt, completion = usage.get("prompt_tokens", "?"), usage.get("completion_tokens", "?")
    cached = (usage.get("prompt_tokens_details") or {}).get("cached_tokens")
    speed = (body.get("timings") or {}).get("predicted_per_second")
    parts = [f"turn {turn}/{max_turns}", f"context {prompt}/{n_ctx or '?'}",
             *([f"cached {cached}", f"new {prompt - cached}"] if cached is not None else []),
             f"out {completion}" + (f" at {speed:.0f} tok/s" if speed else ""), f"{seconds:.1f} s"]
    console.print(" · ".join(parts), style="dim", soft_wrap=True)


def parse_json_object(text: str) -> dict:
    try:
        value = json.loads(text or "{}")
    except (json.JSONDecodeError, TypeError):
        return {}
    return value if isinstance(value, dict) else {}


def render(events: list[dict]) -> int:
    """Print a recorded transcript with the same look as the live run."""
    n_ctx = max_turns = None
    for event in events:
        if event["event"] == "start":
            console.print(Text(event["task"]), style="bold magenta")
            n_ctx, max_turns = event["config"].get("n_ctx"), event["config"].get("max_turns")
        elif event["event"] == "response":
            show_reply(ChatCompletion.model_validate(event["body"]).choices[0].message)
            show_usage(event["turn"], max_turns, event["body"], event["seconds"], n_ctx)
        elif event["event"] == "tool":
            show_call(event["name"], event["arguments"])
            show_result(event["result"])
        elif event["event"] == "note":
            note(event["kind"], event["text"])
        elif event["event"] == "end":
            if event.get("answer"):
                console.print(Markdown(printable(event["answer"])))
            console.print(f"exit code {event['exit_code']}: {EXIT_CODES.get(event['exit_code'], '?')}", style="dim")
    return 0


def asker(workspace: Path):
    """The approval prompt for --approval ask: y / n / always (for this tool, for this run)."""
    always: set[str] = set()

    def approve(name: str, args: dict) -> bool:
        if name in always:
            return True
        if name == "write_file":
            target = workspace / args["path"]
            old = target.read_text(errors="replace").splitlines(True) if target.is_file() else []
            diff = "".join(difflib.unified_diff(old, args["content"].splitlines(True),
                                                f"a/{args['path']}", f"b/{args['path']}"))
            console.print(Syntax(printable(diff) or "(no change)", "diff"))
        else:
            console.print(Text(f"$ {printable(args['command'])}", style="bold"))
        try:
            answer = console.input(Text("allow? [y]es / [n]o / [a]lways for this run: ")).strip().lower()
        except EOFError:
            answer = "n"
        if answer.startswith("a"):
            always.add(name)
        return answer[:1] in ("y", "a")

    return approve


# --- command line ---------------------------------------------------------------------------

def parse_args(argv: list[str] | None) -> argparse.Namespace:
    # Flags beat the environment, which beats a .env file in the current folder, which beats
    # the defaults.
    env = {**dotenv_values(".env"), **os.environ}
    parser = argparse.ArgumentParser(
        prog="tooloop", description="A minimal coding agent: a model, three tools, one loop.",
        epilog="exit codes:\n" + "\n".join(f"  {code:<4} {what}" for code, what in EXIT_CODES.items()),
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("task", nargs="?", help="what the agent should do")
    parser.add_argument("--base-url", default=env.get("OPENAI_BASE_URL") or "http://localhost:8000/v1",
                        help="OpenAI-compatible endpoint (env OPENAI_BASE_URL)")
    parser.add_argument("--model", default=env.get("MODEL") or "local-kimi", help="model name (env MODEL)")
    parser.add_argument("--max-turns", type=int, default=env.get("TOOLOOP_MAX_TURNS") or "20",
                        help="cap on model calls (env TOOLOOP_MAX_TURNS; default 20)")
    parser.add_argument("--workspace", default=env.get("TOOLOOP_WORKSPACE") or ".",
                        help="folder the tools may touch (env TOOLOOP_WORKSPACE; default: here)")
    parser.add_argument("--timeout", type=float, default=env.get("TOOLOOP_SHELL_TIMEOUT") or "60",
                        help="seconds one shell command may run (env TOOLOOP_SHELL_TIMEOUT; default 60)")
    parser.add_argument("--approval", choices=["auto", "ask", "read-only"],
                        default=env.get("TOOLOOP_APPROVAL") or "auto",
                        help="auto: run what the sandbox allows; ask: confirm every write and command; "
                             "read-only: refuse writes and commands (env TOOLOOP_APPROVAL)")
    parser.add_argument("--unsafe-no-sandbox", action="store_true",
                        help="run shell commands unconfined when bubblewrap is missing (dangerous)")
    parser.add_argument("--no-recover", action="store_true",
                        help="take the reply's text as the final answer even when it holds a tool call "
                             "(no recovery from text, no notes, no forced replies: the article's loop)")
    parser.add_argument("--no-check", action="store_true", help="skip the start-up check of the endpoint")
    parser.add_argument("--transcript", default=env.get("TOOLOOP_TRANSCRIPT") or "",
                        help="JSONL file to record the run in (env TOOLOOP_TRANSCRIPT; default "
                             ".tooloop/<time>.jsonl in the workspace; 'off' for none)")
    parser.add_argument("--show-request", action="store_true",
                        help="print each request body (with tool schemas) and raw response")
    parser.add_argument("--replay", metavar="FILE", help="re-run a transcript: model replies from FILE, tools for real")
    parser.add_argument("--render", metavar="FILE", help="print a transcript as a conversation and exit")
    parser.add_argument("--quiet", action="store_true", help="print only the final answer")
    args = parser.parse_args(argv)
    args.api_key = env.get("OPENAI_API_KEY") or "local"
    if args.max_turns < 1 or args.timeout <= 0:
        parser.error("--max-turns and --timeout must be positive")
    if not Path(args.workspace).is_dir():
        parser.error(f"workspace {args.workspace!r} is not a folder")
    for name in ("replay", "render"):
        if getattr(args, name) and not Path(getattr(args, name)).is_file():
            parser.error(f"--{name}: no such file {getattr(args, name)!r}")
    if not (args.task or args.replay or args.render):
        parser.error("give a task, or --replay FILE, or --render FILE")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    console.quiet = args.quiet
    if args.render:
        return render(transcript.read(args.render))
    recorded = transcript.read(args.replay) if args.replay else []
    task = args.task or next((e["task"] for e in recorded if e["event"] == "start"), "")
    workspace = Path(args.workspace).resolve()
    secrets = [args.api_key] if args.api_key != "local" and len(args.api_key) >= 6 else []
    settings = Settings(workspace=workspace, timeout=args.timeout, approval=args.approval,
                        sandbox=not args.unsafe_no_sandbox, approve=asker(workspace), secrets=secrets)
    path = args.transcript or workspace / ".tooloop" / time.strftime("%Y%m%d-%H%M%S.jsonl")
    try:
        log = (lambda event, **data: None) if path == "off" else transcript.writer(Path(path), secrets)
    except OSError as error:
        console.print(f"error: cannot write the transcript {path} ({error})", style="bold red", markup=False)
        return 2
    totals = {"turns": 0, "prompt_tokens": 0, "cached_tokens": 0, "completion_tokens": 0, "seconds": 0.0}
    code, answer = 130, ""
    console.print(Text(task), style="bold magenta")
    try:
        if recorded:
            send, check = transcript.replayer(recorded)
            hook = lambda event, **data: (log(event, **data), check(event, **data))  # noqa: E731
            n_ctx = next((e["config"].get("n_ctx") for e in recorded if e["event"] == "start"), None)
        else:
            send, check, hook = live(args.base_url, args.api_key), None, log
            n_ctx = None if args.no_check else check_endpoint(args.base_url, args.api_key)
        log("start", task=task, config={"base_url": args.base_url, "model": args.model, "n_ctx": n_ctx,
                                        "max_turns": args.max_turns, "workspace": str(workspace),
                                        "approval": args.approval, "sandbox": settings.sandbox,
                                        "recover": not args.no_recover, "replay": args.replay})
        ask = caller(send, args.model, totals, args.max_turns, n_ctx, hook, args.show_request)
        code, answer = run(task, ask, settings, args.max_turns, not args.no_recover, hook)
    except Stop as stop:
        code = stop.code
        console.quiet = False
        console.print(str(stop), style="bold red", markup=False)
    except LookupError as error:  # --replay ran past the end of the recording
        code = 1
        console.print(f"replay: {error}; the run diverged from the recording", style="bold red", markup=False)
    except KeyboardInterrupt:
        console.quiet = False
        console.print("interrupted", style="bold yellow")
    finally:
        log("end", exit_code=code, answer=answer, totals=totals)
    if args.replay:
        for line in check.divergences:
            console.print(Text(f"replay diverges: {line}", style="yellow"))
        console.print(f"replay: {len(check.divergences)} divergence(s) from the recording", style="bold")
    if code == 0:
        console.print(Markdown(printable(answer)))
        print(printable(answer))
    return code


if __name__ == "__main__":
    sys.exit(main())
