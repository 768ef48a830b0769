"""tooloop: a coding agent that is one readable loop.

    python agent.py "Write primes.py that prints the primes below 50, and run it"

`run` is the whole agent: send the conversation and the tool schemas to an OpenAI-compatible
endpoint, append the reply as it came back, run each tool call it asks for through
`tools.dispatch`, append the result, and repeat until the model answers without a call or the
turn cap is hit: the article's loop, with the lesson's rules (the model only proposes; code
validates and checks permissions; errors go back to the model as values; a hard cap). The
rule covers the end of the run too: with `--check CMD`, the model's "done" is only a proposal,
and the user's command decides (`run_check`); its failure goes back to the model with the files
at stake (`check_failed`). Small local models need more, and that lives in aids.py, which the
loop lets act at four named places (`aids.Hooks`); `--plain` switches every aid off.

The rest is the model call (`caller`, through the openai client, every reply streamed and
shown as it arrives: `assemble`), compaction when the context is full (`compact`, the one place
history is rewritten), and the command line. What is printed is screen.py's (stderr; stdout
gets only the final answer).

Left out on purpose: running several tool calls at once, a chat REPL, memory between runs, and
summarising old turns with the model (stubs are cheaper and predictable).
"""

import argparse
import json
import math
import os
import re
import shutil
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import openai
from dotenv import dotenv_values
from openai.types.chat import ChatCompletion
from rich.text import Text

import aids
import changes
import checkview
import prompts
import protect
import runs
import sandbox
import transcript
from transcript import printable
from screen import (Streamed, answer_on_terminal, asker, console, note, render, show_call, show_changes,
                    show_check, show_end, show_json, show_reply, show_result, show_usage)
from tools import MAX_WRITE, TOOLS, Result, Settings, dispatch, inside, parsed, redact, run_shell

__version__ = "0.1.0"  # the same as pyproject.toml's (a test checks)
EXIT_CODES = {
    0: "the model gave a final answer (printed on stdout); with --check, the check passed",
    1: "the model endpoint failed (unreachable, silent too long, or an HTTP error after retries)",
    2: "usage or configuration error (bad flags, a missing --file, no working sandbox for shell commands)",
    3: "the turn cap was reached without a final answer",
    4: "the context is full even after compacting old tool results",
    5: "the model ended the run with an empty reply: no call and no answer (without --check)",
    6: "with --check: no attempt's check passed; the workspace is as it was (the end says where the attempts are)",
    7: "the model endpoint sent a reply that cannot be used (malformed, or past --reply-chars or --reply-seconds)",
    130: "interrupted (Ctrl-C)",
}
EXTRAS = ("timings_per_token",)  # llama-server's own request fields, sent through the client's extra_body
MAX_REPLY_TOKENS = 1024  # one reply: a small file in a write_file call fits; a longer reply is rambling
# What the client reads of one reply, whatever the server does with max_completion_tokens: 1024
# tokens are 4-20 kB of text, and on two CPU cores a long prompt takes minutes before the first token.
REPLY_CHARS = 100_000
REPLY_SECONDS = 1200
MAX_CALLS = 10  # calls one reply may make (parallel_tool_calls is off: one, or a few recovered from text)
# Qwen2.5's recommended sampling (the defaults of --temperature, --top-p). Greedy decoding
# (temperature 0) makes a small model repeat the same wrong reply after every note. Each request's
# seed is --seed plus the turn number: a run is repeatable on one machine and server build, and
# another --seed samples another run.
SAMPLING = {"temperature": 0.7, "top_p": 0.8, "max_completion_tokens": MAX_REPLY_TOKENS, "seed": 0}
CUT = Result(prompts.CUT_OFF, ok=False)
TOO_MANY = Result(prompts.TOO_MANY_CALLS.format(most=MAX_CALLS), ok=False)
CHECK_OUTPUT = 3_000  # characters of a failed check's output sent back: its head and its tail
KEEP_RECENT = 4  # messages at the end that compaction shortens only as a last resort
UNREACHABLE = ("error: cannot reach the model endpoint at {url} ({error}). Is the server running? Start one with "
               "scripts/serve.py, or point --base-url / OPENAI_BASE_URL at another.")


class Stop(Exception):
    """The run cannot go on: Stop(exit code, a message that says why and what to do)."""


def run(task: str, ask, settings: Settings, max_turns: int, hooks: aids.Hooks = aids.Hooks(),
        check: str | None = None, rounds: int = 2, log=lambda event, **data: None) -> tuple[int, str]:
    """The agent loop. `ask(messages, stop)` is one model call; `hooks` are the aids' (none: the
    plain loop); `check` is the user's command that decides when the work is done.
    Returns (exit code, final answer)."""
    messages = [{"role": "system", "content": prompts.SYSTEM_PROMPT},
                {"role": "user", "content": task + named_files(settings)}]
    failed = 0  # checks that failed so far
    for turn in range(1, max_turns + 1):
        choice = ask(messages, hooks.stop).choices[0]  # aid: stop the reply once its call is complete
        message, text = choice.message, choice.message.content or ""
        calls = [(call.id, call.function.name, call.function.arguments) for call in message.tool_calls or []]
        calls = hooks.after_reply(text, choice.finish_reason, calls)  # aid: calls written as text
        messages.append(as_history(message, calls))
        if not calls and choice.finish_reason == "length":  # cut off: no answer yet, and the model is told
            messages.append({"role": "user", "content": prompts.CUT_OFF})
            continue
        if not calls and not check:  # the model's answer (an empty one is none: exit 5 says so)
            return (0 if text.strip() else 5), text
        if not calls:  # the model says it is done; the user's check decides
            result = run_check(check, settings, turn, log)
            failed += not result.ok
            if result.ok or failed == rounds:
                return (0 if result.ok else 6), text
            messages[1:] = [{"role": "user", "content": task + check_failed(check, result, settings)}]
            note("restarted", "the conversation starts again: the task, the check's output, the files as they are now", log)
            continue
        cut = choice.finish_reason == "length"  # never run half a call, structured or recovered from text
        for n, (call_id, name, arguments) in enumerate(calls):  # each call gets one result, matched by its id
            show_call(name, arguments)
            result = TOO_MANY if n >= MAX_CALLS else hooks.before_call(name, arguments) or (
                CUT if cut else dispatch(name, arguments, settings))
            hooks.after_call(name, arguments, result)  # what the aids know of each call
            show_result(result)
            log("tool", turn=turn, id=call_id, name=name, arguments=arguments, result=result.text)
            messages.append({"role": "tool", "tool_call_id": call_id, "content": result.text})
    console.print(f"stopped: {max_turns} model calls without a final answer "
                  "(raise --max-turns to allow more)", style="bold yellow")
    return 3, ""


# --- the user's check, and the files the user names ------------------------------------------

def run_check(command: str, settings: Settings, turn: int, log=lambda event, **data: None) -> Result:
    """Run the user's check as run_shell runs a command: in the sandbox, with its time limit (a
    check that hangs is killed and fails), on a copy of the attempt where the files the check's
    runner trusts are as they were before the run (checkview.for_check), so the model cannot pass
    it by changing the tests. The model never proposed it, so no permission asks."""
    if settings.original:
        view, restored = checkview.for_check(settings.original, settings.workspace, checked(settings.workspace), command)
        settings = replace(settings, workspace=view)
        if restored:
            note("check_view", "the check sees these as they were before the run (the check trusts them): "
                 + ", ".join(restored), log)
    result = run_shell(command, settings=settings)
    result = Result(redact(result.text, settings.secrets), result.ok, result.exit_code)
    show_check(command, result.text, result.ok)
    log("check", turn=turn, command=command, passed=result.ok, exit_code=result.exit_code, result=result.text)
    return result


def checked(attempt: Path) -> Path:
    """Where the copy that an attempt's check runs on lives: beside the attempt."""
    return attempt.with_name(attempt.name + ".check")


def attempts(task: str, ask, settings: Settings, max_turns: int, hooks, check: str | None, rounds: int,
             tries: int, folder: Path, log=lambda event, **data: None) -> tuple[int, str, Path]:
    """Independent attempts, the check choosing: each is the loop from the task alone (a fresh
    conversation) in its own fresh copy of the workspace as it was before the run, and the first
    whose check passes wins. Returns (exit code, answer, the copy whose changes may land).

    Failure answered: the same reply again after a note. Shown its own wrong file and the
    failure, a small model writes the same file again; an independent sample is sometimes right
    where the first was wrong, and the check can tell which (on the suite's tasks three attempts
    solved no more than two rounds did: docs/results.md). `hooks(settings)` makes the aids for
    one attempt."""
    for n in range(1, tries + 1):
        copy = folder / f"attempt-{n}"
        if unread := changes.copy(settings.workspace, copy):
            note("not_copied", "cannot be read, so not in the attempt's copy: " + ", ".join(unread), log)
        changes.remember(copy)
        here = replace(settings, workspace=copy, original=settings.workspace, seen=set(), parts={}, written=set(),
                       named={copy / path.relative_to(settings.workspace) for path in settings.named},
                       approve=settings.approve and asker(copy))  # the diff shown is of the file really written
        if check:
            note("attempt", f"attempt {n} of {tries}: the task alone, in a fresh copy of the workspace ({copy})",
                 log, n=n, workspace=str(copy))
        code, answer = run(task, ask, here, max_turns, hooks(here), check, rounds, log)
        if not check or code == 0:
            return code, answer, checked(copy) if check else copy
    return 6, answer, folder


def check_failed(command: str, result: Result, settings: Settings) -> str:
    """What follows the task in the conversation that starts again after a failed check: a fixed
    text, the check's output (head and tail), and the current content of the files the run wrote
    and the files the user named, so the model sees the failure and the code together, in one
    message, as in aider's benchmark protocol.

    Failure answered: the same reply again after a note. With its claim "done, the tests pass"
    still in the history, a small model answers the failed check with that claim again, word for
    word; started again from the task, it has no claim to repeat, only the code and the failure."""
    root = settings.workspace.resolve()
    paths = sorted(str(p.relative_to(root)) for p in settings.named | settings.written if p.is_file())
    # subtle: what the model read in the discarded conversation it no longer sees, so it counts as
    # unread again; the files shown whole below (named, written) count as read once more
    settings.seen.clear()
    output = result.text if len(result.text) <= CHECK_OUTPUT else (
        result.text[:CHECK_OUTPUT // 2] + prompts.SHORTENED.format(cut=len(result.text) - CHECK_OUTPUT)
        + result.text[-CHECK_OUTPUT // 2:])
    files = prompts.FIX_THESE.format(attached=attached(paths, settings)) if paths else prompts.FIX_FOUND
    return prompts.CHECK_FAILED.format(command=command, output=output, files=files)


def named_files(settings: Settings) -> str:
    """The files the user named (--file), for the first message, in name order ("" if none)."""
    root = settings.workspace.resolve()
    paths = sorted(str(path.relative_to(root)) for path in settings.named)
    return prompts.WITH_FILES.format(files=attached(paths, settings)) if paths else ""


def attached(paths: list[str], settings: Settings) -> str:
    """Files shown to the model in a message, each under its name, as read_file reads them (the
    same permission checks and cap: a large file comes as its head, with how to read the rest).
    A file shown whole counts as read, so write_file may replace it; a large one counts as read
    in part (its head), as after a read_file of it."""
    shown = []
    for path in paths:
        text = dispatch("read_file", json.dumps({"path": path}), settings).text
        shown.append(prompts.ATTACHED.format(path=path, content=text.rstrip("\n")))
    return "".join(shown)


def as_history(message, calls: list) -> dict:
    """The assistant message for the history: exactly as returned, unless its calls were
    recovered from text; then they are written as structured tool_calls (and the text, which
    the server would otherwise render again beside them, is dropped), so every later request is
    valid and shows the model what a proper call looks like."""
    if message.tool_calls or not calls:
        return message.model_dump(exclude_none=True)
    return {"role": "assistant", "content": "", "tool_calls": [
        {"id": call_id, "type": "function", "function": {"name": name, "arguments": args}}
        for call_id, name, args in calls]}


# --- the model call ---------------------------------------------------------------------------

class ContextOverflow(Exception):
    """The request is larger than the server's context window: (prompt tokens, context size)."""


class ParserError(Exception):
    """The server could not parse the model's reply as a tool call (llama-server: HTTP 500)."""


class BadReply(Exception):
    """The server's reply cannot be used: not a stream as the API describes one, or past a reply
    limit. The text says what was wrong, to follow "the reply from <endpoint> ..."."""


BYTES_PER_CHAR = 1000  # what a reply of N characters may take on the wire: N tokens of verbose chunks, and more


def capped(stream, most: int):
    """The response body `stream`, ending with BadReply past `most` bytes: the client reads a stream
    by lines, so a line that never ends would otherwise grow in memory until the time limit."""
    base = next(kind for kind in type(stream).__mro__ if kind.__name__ == "SyncByteStream")  # httpx's or httpx2's

    class Capped(base):
        def __iter__(self):
            read = 0
            for piece in stream:
                read += len(piece)
                if read > most:
                    raise BadReply(f"went past {most:,} bytes ({BYTES_PER_CHAR} per character of --reply-chars); "
                                   "the rest was not read")
                yield piece

        def close(self):
            stream.close()
    return Capped()


# How servers word "the prompt is larger than the context": llama-server (its error type),
# OpenAI (its code) and vLLM (the message); the numbers, where the message gives them, guide compaction.
OVERFLOW = re.compile(r"exceed_context|context_length_exceeded|maximum context length", re.I)
CONTEXT_SIZE = re.compile(r"maximum context length is (\d+)")
PROMPT_SIZE = re.compile(r"(?:resulted in|requested|you have) (\d+)")


def live(base_url: str, api_key: str, reply_seconds: float = REPLY_SECONDS, reply_chars: int = REPLY_CHARS,
         retries: int = 3):
    """send(request) against a real endpoint, through the openai client: it retries a dropped
    connection, 429 and 5xx with backoff, honours HTTPS_PROXY, and gives typed errors, which are
    sorted here into what the harness can handle (overflow, parser error) and what only the user
    can fix (Stop: exit 1 when the endpoint fails, exit 7 when its reply is unusable).

    One reply may take `reply_seconds` in all (the client also gives up on a server silent for that
    long, or 600 s at most) and hold `reply_chars` characters: a server that streams forever is cut off."""
    def once(response):  # subtle: llama-server's 500 is a reply that failed to parse; the same request
        if response.status_code == 500:  # (same seed) fails the same way, so it is not resent as is
            response.headers["x-should-retry"] = "false"
        response.stream = capped(response.stream, BYTES_PER_CHAR * reply_chars)
    client = openai.OpenAI(base_url=base_url, api_key=api_key, timeout=min(600, reply_seconds), max_retries=retries,
                           http_client=openai.DefaultHttpxClient(event_hooks={"response": [once]}))
    url = transcript.shown(base_url)

    def send(request: dict, show=lambda kind, piece: None, stop=lambda text: None) -> ChatCompletion:
        deadline, began = time.monotonic() + reply_seconds, False
        try:
            stream = client.chat.completions.create(**{k: v for k, v in request.items() if k not in EXTRAS},
                                                    extra_body={k: request[k] for k in EXTRAS if k in request})
            began = True
            return assemble(stream, show, stop, deadline, reply_chars)
        except BadReply as error:
            raise Stop(7, f"error: the reply from the model endpoint at {url} {error}") from None
        except openai.APITimeoutError:  # the server went silent: before its reply began, or in the middle
            when = "in the middle of its reply" if began else "before replying"
            raise Stop(1, f"error: the model endpoint at {url} sent nothing for {min(600, reply_seconds):g} s "
                          f"{when}; if it is only slow, raise --reply-seconds") from None
        except openai.APIConnectionError as error:
            if began:
                raise Stop(1, f"error: the connection to the model endpoint at {url} broke in the middle of "
                              f"its reply ({error.__cause__ or error})") from None
            raise Stop(1, UNREACHABLE.format(url=url, error=error.__cause__ or error)) from None
        except openai.APIError as error:  # an HTTP error status, or an error sent inside the stream
            status = getattr(error, "status_code", 500)
            body = error.body if isinstance(error.body, dict) else {}
            details = body.get("error", body) if isinstance(body.get("error", body), dict) else {}
            message = str(details.get("message") or error.message)
            if status == 400 and OVERFLOW.search(f"{details.get('type')} {details.get('code')} {message}"):
                n_ctx, prompt = CONTEXT_SIZE.search(message), PROMPT_SIZE.search(message)
                raise ContextOverflow(tokens(details.get("n_prompt_tokens")) or (prompt and int(prompt[1])),
                                      tokens(details.get("n_ctx")) or (n_ctx and int(n_ctx[1]))) from None
            if status == 500 and re.search(r"does not match|pars(e|ing)", message, re.I):
                raise ParserError(message) from None
            raise Stop(1, f"error: the model endpoint at {url} answered HTTP {status}: {message}") from None

    return send


FINISH_REASONS = ("stop", "length", "tool_calls", "content_filter", "function_call")  # what ChatCompletion takes


def assemble(stream, show, stop, deadline: float = math.inf, most: int = REPLY_CHARS) -> ChatCompletion:
    """A streamed reply, put together as the whole reply would have come. `show(kind, piece)`
    shows each piece as it arrives; `stop(text)` says how much of the text so far to keep when it
    holds a complete call written as text (the text-calls aid), else None. Then the stream is
    closed, and llama-server stops generating: the explanation a small model writes after its call
    costs nothing and is never in the history. (A structured call needs no such stop: with
    parallel_tool_calls off the server ends the reply after it.)

    Every server's quirks arrive here, so each chunk is read as the plain JSON it was, and every
    field is checked before it is used. What the reply can do without is let go: a `usage` or
    `timings` that is not numbers, an unknown finish_reason (read as "stop"), a field of the wrong
    type. Tool-call pieces are matched to calls by their `index` and, where a server reuses an
    index, by a new `id`; arguments sent as a JSON object are written back as its text. A stream
    that is no JSON, no UTF-8 or no objects, or that runs past `deadline` (time.monotonic) or
    `most` characters, raises BadReply.

    Why not the openai client's own accumulator (openai.lib.streaming.chat.ChatCompletionStreamState):
    measured (openai 3.63) on the quirks above, it merges two calls sent with index 0 into one
    (`read_fileread_file`), raises IndexError on a call whose first index is 1 and TypeError on
    `"choices": null`, keeps arguments sent as an object as a dict, and its final completion raises
    on a reply cut off at the token limit; checking each field here is shorter than repairing it.

    Left out: several choices (n > 1; only the first is read) and one SSE line that never ends
    (the client reads a line whole before this sees it)."""
    text, reasoning, calls, finish, usage, timings, keep, head, size = "", "", [], None, None, {}, None, None, 0
    with stream:
        try:
            for chunk in stream:
                chunk = chunk.to_dict(warnings=False) if isinstance(chunk, openai.BaseModel) else chunk
                if not isinstance(chunk, dict):
                    raise BadReply(f"holds an event that is no JSON object ({printable(repr(chunk))[:80]})")
                head, usage = chunk if head is None else head, counted(chunk.get("usage")) or usage
                timings = numbers(chunk.get("timings")) or timings
                for choice in [c for c in listed(chunk.get("choices")) if isinstance(c, dict)][:1]:
                    delta = choice.get("delta") if isinstance(choice.get("delta"), dict) else {}
                    finish = choice.get("finish_reason") if isinstance(choice.get("finish_reason"), str) else finish
                    if isinstance(piece := sound(delta.get("reasoning_content")), str) and piece:
                        reasoning, size = reasoning + piece, size + len(piece)
                        show("reasoning", piece)
                    if isinstance(piece := sound(delta.get("content")), str) and piece:
                        text, size = text + piece, size + len(piece)
                        show("content", piece)
                        keep = stop(text)
                    size += sum(add_piece(calls, part) for part in listed(delta.get("tool_calls")))
                if size > most:
                    raise BadReply(f"went past {most} characters (--reply-chars); the rest was not read")
                if time.monotonic() > deadline:
                    raise BadReply("took longer than one reply may (--reply-seconds); the rest was not read")
                if keep is not None:  # the text worth keeping ends there; the rest is never generated
                    break
        except (ValueError, RecursionError) as error:  # no JSON or no UTF-8 (ValueErrors both), or nested too deep
            raise BadReply(f"is no stream of chunks as the API describes ({printable(str(error))[:200]})") from None
    if head is None:  # (a body that is no event stream at all, as a server that ignores "stream" sends)
        raise BadReply("ended before its first chunk: it is no chat-completions stream")
    if keep is not None:  # (a reply the server ended in that very chunk keeps its reason: it may be cut off)
        text, finish = text[:keep], finish or "stop"
    if usage is None and "predicted_n" in timings:  # stopped before the usage chunk: llama-server's timings say it
        prompt, predicted = int(timings.get("prompt_n", 0) + timings.get("cache_n", 0)), int(timings["predicted_n"])
        usage = {"prompt_tokens": prompt, "completion_tokens": predicted, "total_tokens": prompt + predicted,
                 "prompt_tokens_details": {"cached_tokens": int(timings.get("cache_n", 0))}}
    message = {"role": "assistant", "content": text, "tool_calls": numbered(calls) or None,
               "reasoning_content": reasoning or None}
    return ChatCompletion.model_validate({
        **({"timings": timings} if timings else {}), **({"stopped_after_call": True} if keep is not None else {}),
        "id": str(head.get("id") or ""), "object": "chat.completion", "model": str(head.get("model") or ""),
        "created": head.get("created") if type(head.get("created")) is int else 0, "usage": usage,
        "choices": [{"index": 0, "message": message, "finish_reason": finish if finish in FINISH_REASONS else "stop"}]})


def add_piece(calls: list, part) -> int:
    """Add one streamed piece of a tool call to `calls`; returns how many characters it added.

    A piece belongs to the call with its `index` (the last call, when it has none), unless it
    brings an `id` other than that call's: then it opens a new call (a server that numbers every
    call 0). Arguments sent as a JSON object rather than its text are written back as text."""
    if not isinstance(part, dict):
        return 0
    function = part.get("function") if isinstance(part.get("function"), dict) else {}
    index = part.get("index") if type(part.get("index")) is int else (calls[-1]["index"] if calls else 0)
    given = sound(part.get("id")) if isinstance(part.get("id"), str) and part.get("id") else None
    into = next((call for call in reversed(calls) if call["index"] == index), None)
    if into is None or (given and into["id"] and given != into["id"]):
        into = {"index": index, "id": None, "name": "", "arguments": ""}
        calls.append(into)
    name, arguments = function.get("name"), function.get("arguments")
    if arguments is not None and not isinstance(arguments, str):
        arguments = json.dumps(arguments, ensure_ascii=False)
    name, arguments = sound(name) if isinstance(name, str) else "", sound(arguments) or ""
    into["id"], into["name"] = into["id"] or given, into["name"] + name
    into["arguments"] += arguments
    return len(name) + len(arguments)


def numbered(calls: list) -> list[dict]:
    """The assembled calls as the API writes them, each with an id of its own (one made up where
    the server sent none, or one it had used already), so each result is matched to one call."""
    out, used = [], set()
    for n, call in enumerate(calls):
        call_id = call["id"] if call["id"] and call["id"] not in used else f"call_{n}"
        while call_id in used:
            call_id += "_"
        used.add(call_id)
        out.append({"id": call_id, "type": "function",
                    "function": {"name": call["name"], "arguments": call["arguments"]}})
    return out


LONE = re.compile("[\ud800-\udfff]")  # (JSON reads a proper pair as one character: what is left is alone)


def sound(value):
    """A string from the server with each lone surrogate ("\\ud800", which JSON allows and UTF-8
    cannot encode) as U+FFFD: sent back in the history, it would make the next request unencodable."""
    return LONE.sub("\ufffd", value) if isinstance(value, str) else value


def tokens(value) -> int | None:
    """A count of tokens from the server, if it is one (a whole number above 0)."""
    return value if type(value) is int and value > 0 else None


def listed(value) -> list:
    return value if isinstance(value, list) else []


def numbers(value) -> dict:
    """The finite numbers in a dict (llama-server's `timings`); {} for anything else."""
    if not isinstance(value, dict):
        return {}
    return {k: v for k, v in value.items() if type(v) in (int, float) and math.isfinite(v)}


def counted(usage) -> dict | None:
    """`usage` when it counts tokens in whole numbers, as the API says; else None (it is only shown)."""
    if not isinstance(usage, dict) or {type(usage.get("prompt_tokens")), type(usage.get("completion_tokens"))} != {int}:
        return None  # (a bool is no count either)
    details = usage.get("prompt_tokens_details")
    cached = details.get("cached_tokens") if isinstance(details, dict) else None
    return {"prompt_tokens": usage["prompt_tokens"], "completion_tokens": usage["completion_tokens"],
            "total_tokens": usage["prompt_tokens"] + usage["completion_tokens"],
            "prompt_tokens_details": {"cached_tokens": cached} if type(cached) is int else None}


def caller(send, model: str, totals: dict, max_turns: int, n_ctx: int | None = None,
           log=lambda event, **data: None, show_request: bool = False, sampling: dict = SAMPLING):
    """ask(messages, stop) for `run`: build the request, send it, account for it and show it.

    A parser error gets one corrective note and one retry; an overflow compacts the history and
    retries. `stop(text)` says how much of a streaming reply to keep once it holds a complete
    call, else None (the text-calls aid). `send(request, show, stop)` is the live endpoint, or a
    transcript (--replay).

    `n_ctx` comes from llama-server's GET /props (check_endpoint), so it also says the server is
    llama-server. Only then do requests carry its own fields (EXTRAS) and the replies'
    reasoning_content: OpenAI answers HTTP 400 to a field it does not know, and DeepSeek to
    reasoning_content in a message. Without the probe (--no-probe) the server is taken for another."""
    llama = n_ctx is not None

    def ask(messages: list, stop=lambda text: None):
        retried = False
        while True:
            request = dict(model=model, messages=messages if llama else [without_reasoning(m) for m in messages],
                           tools=TOOLS, tool_choice="auto", parallel_tool_calls=False,
                           **{**sampling, "seed": sampling["seed"] + totals["turns"] + 1},
                           stream=True, stream_options={"include_usage": True},
                           **({"timings_per_token": True} if llama else {}))
            log("request", turn=totals["turns"] + 1, body=request)
            if show_request:
                show_json("request", request)
            started = time.monotonic()
            try:
                with Streamed() as screen:  # each piece shown as it arrives
                    response = send(request, screen, stop)
            except ParserError as error:
                if retried:
                    raise Stop(1, f"error: the server could not parse the model's reply twice ({error})") from None
                retried = True
                note("parser_error", f"the server could not parse the reply ({error}); asking again", log)
                messages.append({"role": "user", "content": prompts.SERVER_PARSE_ERROR.format(error=error)})
                continue
            except ContextOverflow as error:
                if not compact(messages, *error.args, log=log):
                    raise Stop(4, "stopped: the conversation no longer fits the model's context, even with "
                                  "old tool results removed (use a larger -c on the server)") from None
                continue
            seconds = time.monotonic() - started
            account(totals, response, seconds)
            body = response.model_dump(exclude_none=True)
            log("response", turn=totals["turns"], body=body, seconds=round(seconds, 3))
            if show_request:
                show_json("response", body)
            if not screen.kind:  # nothing was streamed (a replay)
                show_reply(response.choices[0].message)
            if body.get("stopped_after_call"):
                note("stopped", "the reply's call was complete, so generation stopped there", log)  # (or it began to imagine the result)
            show_usage(totals["turns"], max_turns, body, seconds, n_ctx)
            return response

    return ask


def without_reasoning(message: dict) -> dict:
    """An assistant message as a server other than llama-server takes it back: no reasoning_content."""
    return {k: v for k, v in message.items() if k != "reasoning_content"}


def account(totals: dict, response: ChatCompletion, seconds: float) -> None:
    totals["turns"] += 1
    totals["seconds"] += seconds
    if usage := response.usage:
        totals["prompt_tokens"] += usage.prompt_tokens
        totals["cached_tokens"] += getattr(usage.prompt_tokens_details, "cached_tokens", None) or 0
        totals["completion_tokens"] += usage.completion_tokens


def compact(messages: list, n_prompt: int | None, n_ctx: int | None, log=lambda event, **data: None) -> bool:
    """Make room: replace the oldest tool results and written file bodies with short stubs; if
    that is not enough, cut the middle out of the largest recent tool result (head and tail kept).

    The system prompt and the task stay as they were. Returns False when nothing was left to
    shrink. The only place history is ever rewritten (new dicts in place of old ones).
    """
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
            calls = [shrunk(call) for call in m["tool_calls"]]
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


def shrunk(call: dict) -> dict:
    """A write_file call with its content (and an edit's old text) replaced by stubs (the file is on disk)."""
    if call["function"]["name"] != "write_file" or len(call["function"]["arguments"]) <= 200:
        return call
    args = parsed(call["function"]["arguments"])
    stub = json.dumps({**args, **{k: "[compacted]" for k in ("content", "old") if k in args}})
    return {**call, "function": {**call["function"], "arguments": stub}}


def check_endpoint(base_url: str, api_key: str) -> int | None:
    """Start-up probe: is the server there, and (llama-server only) how large is its context (the
    result) and can its chat template do tools? One GET, through the openai client as the chat
    requests go (user:password@ too); a plain OpenAI-compatible server answers 404: None."""
    root = base_url.rstrip("/").removesuffix("/v1")
    try:
        props = openai.OpenAI(base_url=root, api_key=api_key, timeout=10, max_retries=0).get("/props", cast_to=object)
        n_ctx = props.get("default_generation_settings", {}).get("n_ctx")
        tools_ok = props.get("chat_template_caps", {}).get("supports_tool_calls")
    except (openai.APIStatusError, ValueError, AttributeError):
        return None  # the server is there, but is not llama-server
    except openai.APITimeoutError:
        raise Stop(1, f"error: the model endpoint at {transcript.shown(base_url)} did not answer GET /props "
                      "within 10 s (--no-probe skips it)") from None
    except openai.APIConnectionError as error:
        raise Stop(1, UNREACHABLE.format(url=transcript.shown(base_url), error=error.__cause__ or error)) from None
    if tools_ok is False:
        console.print("warning: the server's chat template does not support tool calls; calls "
                      "will arrive as text (recovered where possible)", style="yellow")
    n_ctx = tokens(n_ctx)
    if n_ctx and n_ctx < 4 * MAX_REPLY_TOKENS:
        console.print(f"warning: the server's context is only {n_ctx} tokens; long runs will be "
                      "compacted (start llama-server with a larger -c)", style="yellow")
    return n_ctx


# --- command line ---------------------------------------------------------------------------

def parse_args(argv: list[str] | None) -> argparse.Namespace:
    # flags beat the environment, which beats a .env file in the current folder, which beats the defaults
    env = {**dotenv_values(".env"), **os.environ}
    parser = argparse.ArgumentParser(
        prog="tooloop", description="A minimal coding agent: a model, three tools, one loop.",
        epilog=f"limits: one reply may make {MAX_CALLS} tool calls; each call past them gets an error, not run\n\n"
               + "aids (small-model helpers, on unless --plain; see aids.py):\n"
               + "\n".join(f"  {name}" for name in aids.NAMES)
               + "\n\nexit codes:\n" + "\n".join(f"  {code:<4} {what}" for code, what in EXIT_CODES.items()),
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("task", nargs="?", help="what the agent should do; - reads it from stdin")
    parser.add_argument("--task-file", metavar="PATH", help="read the task from a file (- for stdin)")
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
    parser.add_argument("--check", metavar="CMD", default=env.get("TOOLOOP_CHECK") or None,
                        help="your definition of done: a shell command run (sandboxed) each time the model answers; "
                             "its failure goes back to the model (env TOOLOOP_CHECK)")
    parser.add_argument("--attempts", metavar="N", type=int, default=None,
                        help="with --check: up to N independent attempts, each from the task alone in a fresh copy "
                             "of the workspace; the first that passes the check lands (env TOOLOOP_ATTEMPTS; default 3)")
    parser.add_argument("--check-rounds", metavar="N", type=int, default=env.get("TOOLOOP_CHECK_ROUNDS") or "1",
                        help="within one attempt: end it at the N-th failed check (env TOOLOOP_CHECK_ROUNDS; default 1)")
    parser.add_argument("--file", metavar="PATH", action="append", default=[],
                        help="a file that comes with the task: its content is in the first message, and it "
                             "counts as read (repeatable)")
    parser.add_argument("--plain", action="store_true",
                        help="no aids at all: the article's loop with the lesson's rules, nothing more")
    parser.add_argument("--no-probe", action="store_true", help="skip the start-up probe of the endpoint (GET /props)")
    parser.add_argument("--transcript", default=env.get("TOOLOOP_TRANSCRIPT") or "",
                        help="JSONL file to record the run in (env TOOLOOP_TRANSCRIPT; default "
                             ".tooloop/<time>-<random>.jsonl in the workspace, a new file each run; 'off' for none)")
    parser.add_argument("--show-request", action="store_true",
                        help="print each request body (with tool schemas) and raw response")
    parser.add_argument("--replay", metavar="FILE", help="re-run a transcript: model replies from FILE, tools for real")
    parser.add_argument("--render", metavar="FILE", help="print a transcript as a conversation and exit")
    parser.add_argument("--temperature", type=float, default=env.get("TOOLOOP_TEMPERATURE") or "0.7",
                        help="sampling temperature (env TOOLOOP_TEMPERATURE; default 0.7)")
    parser.add_argument("--top-p", type=float, default=env.get("TOOLOOP_TOP_P") or "0.8",
                        help="nucleus sampling: the share of probability sampled from (env TOOLOOP_TOP_P; default 0.8)")
    parser.add_argument("--max-reply-tokens", metavar="N", type=int,
                        default=env.get("TOOLOOP_MAX_REPLY_TOKENS") or "1024",
                        help="cap on the tokens of one reply (env TOOLOOP_MAX_REPLY_TOKENS; default 1024)")
    parser.add_argument("--seed", type=int, default=env.get("TOOLOOP_SEED") or "0",
                        help="each request's seed is this plus the turn number: the same seed repeats a run, "
                             "another samples another (env TOOLOOP_SEED; default 0)")
    parser.add_argument("--quiet", action="store_true", help="print only the final answer")
    parser.add_argument("--reply-seconds", metavar="S", type=float,
                        default=env.get("TOOLOOP_REPLY_SECONDS") or REPLY_SECONDS,
                        help="seconds one model reply may take in all, then exit 7 (env TOOLOOP_REPLY_SECONDS; "
                             f"default {REPLY_SECONDS})")
    parser.add_argument("--reply-chars", metavar="N", type=int, default=env.get("TOOLOOP_REPLY_CHARS") or REPLY_CHARS,
                        help="characters one model reply may hold, then exit 7 (env TOOLOOP_REPLY_CHARS; "
                             f"default {REPLY_CHARS})")
    parser.add_argument("--max-write", metavar="BYTES", type=int, default=env.get("TOOLOOP_MAX_WRITE") or MAX_WRITE,
                        help="bytes one write_file may write; a larger one is an error for the model "
                             f"(env TOOLOOP_MAX_WRITE; default {MAX_WRITE})")
    parser.add_argument("--version", action="version", version=f"tooloop {__version__}")
    args = parser.parse_args(argv)
    args.api_key = env.get("OPENAI_API_KEY") or "local"
    if args.attempts is not None and not args.check:
        parser.error("--attempts needs --check: the check is what chooses among the attempts")
    args.attempts = int(args.attempts or env.get("TOOLOOP_ATTEMPTS") or 3)
    args.runs = Path(env.get("TOOLOOP_RUNS") or "~/.cache/tooloop/runs").expanduser()
    if not (0 <= args.temperature <= 2 and 0 < args.top_p <= 1 and args.max_reply_tokens >= 1):
        parser.error("--temperature must be 0-2, --top-p above 0 and at most 1, --max-reply-tokens positive")
    if args.task_file or args.task == "-":  # the task from a file or stdin: one line and exit 2 if there is none
        if args.task_file and args.task:
            parser.error("give the task or --task-file, not both")
        source = args.task_file or "-"
        try:
            args.task = (sys.stdin.read() if source == "-" else Path(source).read_text()).strip()
        except (OSError, UnicodeDecodeError) as error:
            parser.exit(2, f"tooloop: error: cannot read the task from {source} ({error})\n")
        if not args.task:
            parser.exit(2, f"tooloop: error: the task from {'stdin' if source == '-' else source} is empty\n")
    for name in ("replay", "render"):
        if getattr(args, name) and not Path(getattr(args, name)).is_file():
            parser.error(f"--{name}: no such file {getattr(args, name)!r}")
        try:
            events = transcript.checked(getattr(args, name)) if getattr(args, name) else []
        except transcript.NotATranscript as error:
            parser.error(f"--{name}: {getattr(args, name)} is not a tooloop transcript: {error}")
        if name == "replay" and events:
            as_recorded(parser, args, argv, events)
    if min(args.max_turns, args.timeout, args.check_rounds, args.attempts, args.reply_seconds, args.reply_chars,
           args.max_write) <= 0:
        parser.error("--max-turns, --timeout, --check-rounds, --attempts, --reply-seconds, --reply-chars and "
                     "--max-write must be positive")
    if not Path(args.workspace).is_dir():
        parser.error(f"workspace {args.workspace!r} is not a folder")
    if Path(args.workspace).resolve() == Path("/"):
        parser.error("the workspace cannot be /: the tools would reach the whole machine")
    if args.quiet and args.approval == "ask":  # the question would be hidden, its answer still read
        parser.error("--quiet hides the questions of --approval ask: use one or the other")
    if not (args.task or args.replay or args.render):
        parser.error("give a task, or --replay FILE, or --render FILE")
    # subtle: Python reads command-line bytes that are no text in the locale's encoding as lone
    # surrogates, and what goes to the model must be UTF-8: refused here, not mid-run
    for name, value in [("the task", args.task), ("--check", args.check), ("--model", args.model),
                        *[("--file", path) for path in args.file]]:
        if value and LONE.search(value):
            parser.error(f"{name} holds bytes that are not text in this terminal's encoding")
    return args


# The settings a replay takes from the recording's start event, each with its flag (plain: no aids).
RECORDED = {"max_turns": "--max-turns", "approval": "--approval", "timeout": "--timeout",
            "check_rounds": "--check-rounds", "attempts": "--attempts", "max_write": "--max-write", "plain": "--plain"}


def as_recorded(parser: argparse.ArgumentParser, args: argparse.Namespace, argv: list[str] | None,
                events: list[dict]) -> None:
    """Give a replay the recorded run's settings (RECORDED), so the tools meet the same cap, rules
    and limits as when it was recorded. A flag on the command line that says otherwise is refused
    (exit 2), and so is a recording with no reply or a setting of the wrong kind; a setting an
    older transcript lacks keeps its value from the flags, the environment or the default."""
    config = next(event["config"] for event in events if event["event"] == "start")
    if not any(event["event"] == "response" for event in events):
        parser.error(f"--replay: {args.replay} holds no model reply to replay")
    aids_on = config.get("aids")
    recorded = {key: config.get(key) for key in RECORDED}
    recorded["plain"] = aids_on == [] if isinstance(aids_on, list) else None
    # subtle: parsed again over a namespace that already holds every recorded setting (None), the
    # parser fills in no default there: what is not None was given on the command line
    given = parser.parse_args(argv, argparse.Namespace(**dict.fromkeys(RECORDED)))
    for key, flag in RECORDED.items():
        value, kind = recorded[key], type(getattr(args, key))
        if value is None:
            continue
        if not isinstance(value, (int, float) if kind is float else kind) or isinstance(value, bool) != (kind is bool):
            parser.error(f"--replay: the recording's {key} is {value!r}, which {flag} does not take")
        if getattr(given, key) is not None and getattr(given, key) != value:
            parser.error(f"--replay: the run was recorded with {flag} {value}, and a replay reproduces it: "
                         f"leave {flag} out")
        setattr(args, key, value)
    if args.approval not in ("auto", "ask", "read-only"):
        parser.error(f"--replay: the recording's approval is {args.approval!r}")
    if config.get("sandbox") is False and not args.unsafe_no_sandbox:  # a file never turns the sandbox off
        console.print("replay: the run was recorded with --unsafe-no-sandbox; this replay's commands run in the "
                      "sandbox, and may diverge (give --unsafe-no-sandbox to match)", style="yellow", markup=False)


def main(argv: list[str] | None = None) -> int:
    """The command line: tooloop's start, run and end (`session`). A Ctrl-C before the run began
    (the sandbox probe, the --file reads) ends it as one during the run does: exit 130."""
    try:
        return session(argv)
    except KeyboardInterrupt:
        console.quiet = False
        console.print("interrupted", style="bold yellow")
        return 130


def session(argv: list[str] | None = None) -> int:
    """Read the command line, check what the run needs, run it, and say how it ended (the exit code)."""
    args = parse_args(argv)
    console.quiet = args.quiet
    if args.render:
        return render(transcript.checked(args.render))
    recorded = transcript.checked(args.replay) if args.replay else []
    started = next((e for e in recorded if e["event"] == "start"), {"config": {}})  # a replay's settings
    task = args.task or started.get("task", "")
    check, files = args.check or started["config"].get("check"), args.file or started["config"].get("files", [])
    workspace = Path(args.workspace).resolve()
    if why := protect.unsafe_workspace(workspace):  # all a run changes there, the user's own tools may run
        console.print(Text(printable(f"error: {workspace} is not a project folder: {why}. Run tooloop in the "
                                     "project's own folder (--workspace)."), style="bold red"))
        return 2
    if args.unsafe_no_sandbox:  # unconfined commands run as the user: keep the key in our memory out of reach
        sandbox.undumpable()
    secrets = transcript.secrets(args.api_key, args.base_url)  # never recorded, nor shown to the model
    settings = Settings(workspace=workspace, timeout=args.timeout, approval=args.approval,
                        sandbox=not args.unsafe_no_sandbox, approve=asker(workspace), secrets=secrets,
                        max_write=args.max_write)
    if settings.sandbox and (args.approval != "read-only" or check) and (why := sandbox.probe()):
        console.print(f"error: shell commands cannot run here: no working sandbox ({printable(why)}). Fix: run "
                      "scripts/setup (installs bubblewrap), or pass --approval read-only, or "
                      "--unsafe-no-sandbox to run commands unconfined.", style="bold red", markup=False)
        return 2
    for i, path in enumerate(files):  # the files the user names: each must be readable, before any model call
        result = dispatch("read_file", json.dumps({"path": path}), settings)
        if not result.ok:
            console.print(Text(printable(f"error: --file {path}: {result.text.removeprefix('Error: ')}"),
                               style="bold red"))
            return 2
        settings.named.add(inside(path, settings))
        files[i] = str(inside(path, settings).relative_to(workspace))
    path = args.transcript or transcript.fresh(workspace / ".tooloop")  # never one another run writes to
    try:
        log = (lambda event, **data: None) if path == "off" else transcript.writer(Path(path), secrets,
                                                                                  exclusive=not args.transcript)
    except OSError as error:
        console.print(Text(printable(f"error: cannot write the transcript {path} ({error})"), style="bold red"))
        return 2
    totals = {"turns": 0, "prompt_tokens": 0, "cached_tokens": 0, "completion_tokens": 0, "seconds": 0.0}
    tries, folder = (args.attempts if check else 1), runs.folder(args.runs)
    code, answer, source = 130, "", folder / "attempt-1"  # without a check, the one attempt lands however it ends
    console.print(Text(printable(task)), style="bold magenta")
    try:
        if recorded:
            send, compare = transcript.replayer(recorded)
            hook = lambda event, **data: (log(event, **data), compare(event, **data))  # noqa: E731
            n_ctx = next((e["config"].get("n_ctx") for e in recorded if e["event"] == "start"), None)
        else:
            send, compare, hook = live(args.base_url, args.api_key, args.reply_seconds, args.reply_chars), None, log
            n_ctx = None if args.no_probe else check_endpoint(args.base_url, args.api_key)
        sampling = {"temperature": args.temperature, "top_p": args.top_p, "seed": args.seed,
                    "max_completion_tokens": args.max_reply_tokens}
        log("start", task=task, config={"base_url": transcript.shown(args.base_url), "model": args.model,
                                        "n_ctx": n_ctx, "max_turns": args.max_turns, "workspace": str(workspace),
                                        "timeout": args.timeout, "max_write": args.max_write,
                                        "approval": args.approval, "sandbox": settings.sandbox,
                                        "aids": [] if args.plain else list(aids.NAMES), "check": check,
                                        "check_rounds": args.check_rounds, "attempts": tries, "files": files,
                                        "replay": args.replay, "sampling": sampling})
        ask = caller(send, args.model, totals, args.max_turns, n_ctx, hook, args.show_request, sampling)
        hooks = (lambda here: aids.Hooks()) if args.plain else (lambda here: aids.text_calls(here, hook))
        code, answer, source = attempts(task, ask, settings, args.max_turns, hooks, check, args.check_rounds,
                                        tries, folder, hook)
    except Stop as stop:
        code, message = stop.args
        console.quiet = False
        console.print(Text(printable(message), style="bold red"))
    except LookupError as error:  # --replay ran past the end of the recording
        code = 1
        console.print(f"replay: {error}; the run diverged from the recording", style="bold red", markup=False)
    except KeyboardInterrupt:
        console.quiet = False
        console.print("interrupted", style="bold yellow")
    finally:
        landed, refused, where = runs.land(workspace, source, settings, code, check, folder)
        landed = [vars(change) for change in landed]
        log("changes", landed=landed, refused=refused, where=where)
        if settings.removed:
            log("removed", removed=settings.removed)
        log("end", exit_code=code, answer=answer, totals=totals, meaning=EXIT_CODES.get(code, "?"))
    if args.replay:
        for line in compare.divergences:
            console.print(Text(printable(f"replay diverges: {line}"), style="yellow"))
        console.print(f"replay: {len(compare.divergences)} divergence(s) from the recording", style="bold")
    show_changes(landed, refused, where)
    show_end(code, answer, EXIT_CODES.get(code, "?"))
    if settings.removed:  # what commands left for host tools to run: shown whatever --quiet says
        console.quiet = False
        console.print(Text(printable("\n  ".join(["warning: tooloop undid what commands in this run left for host "
                                                  "tools to run:", *settings.removed])), style="bold yellow"))
    if code == 0 and not answer_on_terminal():  # piped, stdout gets the answer plain, for scripts
        print(printable(answer))
    return code


if __name__ == "__main__":
    sys.exit(main())
