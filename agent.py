"""tooloop: a coding agent that is one readable loop.

    python agent.py "Write primes.py that prints the primes below 50, and run it"

`run` is the whole agent: send the conversation and the tool schemas to an OpenAI-compatible
endpoint, append the reply as it came back, run each tool call it asks for through `tools.dispatch`,
append the result, and repeat until the model answers without a call or the turn cap is hit: the
article's loop, with the lesson's rules (the model only proposes; code validates and checks
permissions; errors go back to the model as values; a hard cap). The rule covers the end too: with
`--check CMD`, the model's "done" is only a proposal, and the user's command decides (`run_check`);
its failure goes back to the model with the files at stake (`check_failed`). Small local models need
more: aids.py, which the loop lets act at four named places (`aids.Hooks`; `--plain`: none).

Read top to bottom: the loop (`run`), its one model call (`model_caller`), then the check and the
attempts (the first whose check passes wins). The command line, the endpoint's stream and the run's
files on disk have rooms of their own (cli.py, endpoint.py, runs.py). Left out on purpose: several
tool calls at once, a chat REPL, memory between runs, and summarising old turns with the model
(stubs are cheaper and predictable).
"""

import json
import math
import time
from dataclasses import replace
from pathlib import Path

import aids
import checkview
import prompts
import runs
from endpoint import MAX_REPLY_TOKENS, ContextOverflow, Exit, ParserError
from screen import Streamed, asker, console, note, show_call, show_check, show_json, show_reply, show_result, show_usage
from tools import TOOLS, Result, RunState, Settings, dispatch, parsed, redact, run_shell

MAX_CALLS = 10  # calls one reply may make (parallel_tool_calls is off: one, or a few recovered from text)
# Qwen2.5's recommended sampling: greedy decoding (temperature 0) makes a small model repeat the
# same wrong reply after every note. Each request's seed is --seed plus the run's request count.
SAMPLING = {"temperature": 0.7, "top_p": 0.8, "max_completion_tokens": MAX_REPLY_TOKENS, "seed": 0}
CUT = Result(prompts.CUT_OFF, ok=False)
TOO_MANY = Result(prompts.TOO_MANY_CALLS.format(most=MAX_CALLS), ok=False)
CHECK_OUTPUT = 3_000  # characters of a failed check's output sent back: its head and its tail
ENDS = {0: "passed", 3: "hit --max-turns", 6: "failed the check"}  # how an attempt ended, by its code


def run(task: str, call_model, settings: Settings, max_turns: int, hooks: aids.Hooks = aids.Hooks(),
        check: str | None = None, rounds: int = 2, log=lambda event, **data: None) -> tuple[int, str]:
    """The agent loop. `call_model(messages, stop)` is the one model call (model_caller); `hooks`
    are the aids' (none: the plain loop); `check` is the user's command that decides when the work
    is done. Returns (exit code, final answer)."""
    messages = [{"role": "system", "content": prompts.SYSTEM_PROMPT},
                {"role": "user", "content": task + named_files(settings)}]
    failed = 0  # checks that failed so far
    for turn in range(1, max_turns + 1):
        choice = call_model(messages, hooks.stop).choices[0]  # aid: stop the reply once its call is complete
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


def as_history(message, calls: list) -> dict:
    """The reply for the history: as returned, unless its calls were recovered from text; then they are
    structured tool_calls (the text dropped), so every later request is valid and shows a proper call."""
    if message.tool_calls or not calls:
        return message.model_dump(exclude_none=True)
    return {"role": "assistant", "content": "", "tool_calls": [
        {"id": call_id, "type": "function", "function": {"name": name, "arguments": args}}
        for call_id, name, args in calls]}


def named_files(settings: Settings) -> str:
    """The files the user named (--file), for the first message, in name order ("" if none)."""
    paths = sorted(str(path.relative_to(settings.workspace.resolve())) for path in settings.named)
    return prompts.WITH_FILES.format(files=attached(paths, settings)) if paths else ""


def attached(paths: list[str], settings: Settings) -> str:
    """Files shown to the model, each under its name, as read_file reads them (the same checks and cap:
    a large one as its head); a file shown whole counts as read, so write_file may replace it."""
    shown = []
    for path in paths:
        text = dispatch("read_file", json.dumps({"path": path}), settings).text
        shown.append(prompts.ATTACHED.format(path=path, content=text.rstrip("\n")))
    return "".join(shown)


# --- the one model call -----------------------------------------------------------------------

def model_caller(send, model: str, totals: dict, max_turns: int, n_ctx: int | None = None,
                 log=lambda event, **data: None, show_request: bool = False, sampling: dict = SAMPLING,
                 deadline: float = math.inf):
    """call_model(messages, stop) for one attempt's `run`: the request (`request_for`), sent with
    `send(request, show, stop)` (endpoint.sender's, or a recording's for --replay), then the reply counted
    and shown. A parser error gets one note and one retry; an overflow compacts and retries; past
    `deadline` (time.monotonic) the next request, or the reply being streamed, is runs.OutOfTime."""
    show, turn = (show_json if show_request else lambda title, body: None), 0  # (turn: this attempt's)

    def call_model(messages: list, stop=lambda text: None):
        nonlocal turn
        retried, turn, bounded = False, turn + 1, within(deadline, stop)
        while bounded("") is None:  # (none is sent past the deadline; the seed counts the run's requests)
            request = request_for(messages, model, sampling, totals["turns"] + 1, llama=n_ctx is not None)
            log("request", turn=turn, body=request)
            show("request", request)
            started = time.monotonic()
            try:
                with Streamed() as screen:  # each piece shown as it arrives
                    response = send(request, screen, bounded)
            except ParserError as error:
                if retried:
                    raise Exit(1, f"error: the server could not parse the model's reply twice ({error})") from None
                retried = True
                note("parser_error", f"the server could not parse the reply ({error}); asking again", log)
                messages.append({"role": "user", "content": prompts.SERVER_PARSE_ERROR.format(error=error)})
                continue
            except ContextOverflow as error:
                if not aids.compact(messages, *error.args, log=log):  # aid: a context overflow
                    raise Exit(4, "stopped: the conversation no longer fits the model's context, even with "
                                  "old tool results removed (use a larger -c on the server)") from None
                continue
            body, seconds = account(totals, response, started, log, turn)
            show("response", body)
            if not screen.kind:  # nothing was streamed (a replay)
                show_reply(response.choices[0].message)
            show_usage(turn, max_turns, body, seconds, n_ctx)
            return response

    return call_model


def within(deadline: float, stop):
    """`stop` for a reply that may not go on past `deadline` (time.monotonic): runs.OutOfTime."""
    def bounded(text: str):
        if time.monotonic() > deadline:
            raise runs.OutOfTime
        return stop(text) if text else None
    return bounded


def request_for(messages: list, model: str, sampling: dict, turn: int, llama: bool) -> dict:
    """One turn's request. Only llama-server (its GET /props gave n_ctx) gets its own fields and the
    replies' reasoning_content back: OpenAI answers HTTP 400 to the one, DeepSeek to the other."""
    return dict(model=model, messages=messages if llama else [  # (what other servers take back)
                    {k: v for k, v in m.items() if k != "reasoning_content"} for m in messages],
                tools=TOOLS, tool_choice="auto", parallel_tool_calls=False,
                **{**sampling, "seed": sampling["seed"] + turn}, stream=True, stream_options={"include_usage": True},
                **({"timings_per_token": True} if llama else {}))


def account(totals: dict, response, started: float, log, turn: int) -> tuple[dict, float]:
    """Count one reply in the run's totals and record it: (the reply as the transcript keeps it, seconds).
    A reply stopped once its call was complete (the text-calls aid) gets a note."""
    seconds = time.monotonic() - started
    totals["turns"] += 1
    totals["seconds"] += seconds
    if usage := response.usage:
        totals["prompt_tokens"] += usage.prompt_tokens
        totals["cached_tokens"] += getattr(usage.prompt_tokens_details, "cached_tokens", None) or 0
        totals["completion_tokens"] += usage.completion_tokens
    body = response.model_dump(exclude_none=True)
    log("response", turn=turn, body=body, seconds=round(seconds, 3))
    if body.get("stopped_after_call"):  # (or it began to imagine the result)
        note("stopped", "the reply's call was complete, so generation stopped there", log)
    return body, seconds


# --- the user's check, and the attempts ---------------------------------------------------------

def run_check(command: str, settings: Settings, turn: int, log=lambda event, **data: None) -> Result:
    """Run the user's check as run_shell runs a command (the sandbox, its time limit: a check that hangs
    fails) on a view of the attempt holding only the changes that cannot change how the check runs
    (checkview.for_check), so changing the tests cannot pass it; the check event records the changes
    it held (`seen`: only these may land) and those it left out. No permission asks: no model proposed it."""
    seen = {}
    if settings.original:
        view = checkview.for_check(settings.original, settings.workspace, command)
        settings, seen = replace(settings, workspace=view.path), {"seen": sorted(view.seen), "left_out": view.left_out}
        if view.left_out:
            note("check_view", "the check does not see these changes (they do not land): " + "; ".join(
                f"{path}: {why}" for path, why in view.left_out.items()), log)
    try:
        result = run_shell(command, settings=settings)
    finally:
        if seen:  # what the check wrote through its view to the attempt's files is made again
            checkview.settle(view)
    result = Result(redact(result.text, settings.secrets), result.ok, result.exit_code)
    show_check(command, result.text, result.ok)
    log("check", turn=turn, command=command, passed=result.ok, exit_code=result.exit_code, result=result.text, **seen)
    return result


def check_failed(command: str, result: Result, settings: Settings) -> str:
    """What follows the task when the conversation starts again after a failed check: a fixed text,
    the check's output (head and tail), and the files the run wrote and the user named as they are
    now: the failure and the code together, in one message, as in aider's benchmark protocol.
    Failure answered: the same reply again after a note. With its claim "done, the tests pass"
    still in the history, a small model answers the failed check with that claim again, word for
    word; started again from the task, it has no claim to repeat, only the code and the failure."""
    root = settings.workspace.resolve()
    paths = sorted(str(p.relative_to(root)) for p in settings.named | settings.state.written if p.is_file())
    # subtle: what the model read in the discarded conversation it no longer sees, so it counts as
    # unread again; the files shown whole below (named, written) count as read once more
    settings.state.seen.clear()
    output = result.text if len(result.text) <= CHECK_OUTPUT else (
        result.text[:CHECK_OUTPUT // 2] + prompts.SHORTENED.format(cut=len(result.text) - CHECK_OUTPUT)
        + result.text[-CHECK_OUTPUT // 2:])
    files = prompts.FIX_THESE.format(attached=attached(paths, settings)) if paths else prompts.FIX_FOUND
    return prompts.CHECK_FAILED.format(command=command, output=output, files=files)


def attempts(task: str, model, settings: Settings, max_turns: int, hooks, check: str | None, rounds: int,
             tries: int, folder: Path, log=lambda event, **data: None, budget: float = math.inf) -> runs.Attempt:
    """Independent attempts, the check choosing, while the `budget` lasts (`spending`), each the loop
    from the task alone in a fresh copy of the workspace (under `folder`); `model(log, deadline)` makes
    its call_model, `hooks(settings, log)` its aids. Failures answered: the same reply again after a
    note (a fresh sample is sometimes right); a plan or prose instead of an action (half the dev tasks'
    attempts changed no file: such one does not count); an attempt that rambles (cut, then checked)."""
    def attempt(n: int, counted: int, deadline: float) -> runs.Attempt:
        began = runs.begin(settings.workspace, folder, n)  # the record of the attempt: runs.py

        def logged(event, **data):
            if event == "check" and "seen" in data:  # what the last check saw is all that may land
                began.only, began.left_out = set(data["seen"]), dict(data["left_out"])
            log(event, attempt=n, **data)
        copy = began.copy
        if began.unread:
            note("not_copied", "cannot be read, so not in the attempt's copy: " + ", ".join(began.unread), logged)
        here = replace(settings, workspace=copy, original=settings.workspace,  # a fresh state for the attempt
                       named=frozenset(copy / path.relative_to(settings.workspace) for path in settings.named),
                       state=RunState(removed=settings.state.removed), approve=settings.approve and asker(copy))
        if check:
            which = f"{n} of {tries}" if n == counted else f"{n} (counted as {counted} of {tries})"
            note("attempt", f"attempt {which}: the task alone, in a fresh copy of the workspace ({copy})",
                 logged, n=n, workspace=str(copy))
        try:
            began.code, began.answer = run(task, model(logged, deadline), here, max_turns, hooks(here, logged),
                                           check, rounds, logged)
            began.ended = ENDS.get(began.code, "ended")
        except runs.OutOfTime:
            note("out_of_time", f"attempt {n} has spent its share of --budget; its check runs on what it left", logged)
            began.code = 0 if run_check(check, here, 0, logged).ok else 6
            began.ended = "passed" if began.code == 0 else "out of time"
        began.seconds = time.monotonic() - began.began
        if began.code and runs.wrote_nothing(began):
            began.ended = "wrote nothing"
            note("wrote_nothing", f"attempt {n} changed no file, so it does not count", logged)
        return began

    tried = spending(attempt, tries, budget)  # (lazy: the next attempt begins only when asked for)
    return first_passing(tried) if check else next(tried)


def spending(attempt, tries: int, budget: float):
    """`attempt(n, counted, deadline)` while the budget (seconds) lasts: at most `tries` that count,
    twice that in all, each until half the budget has passed (the last that counts: all that is left)."""
    n, counted, end = 0, 0, time.monotonic() + budget
    while counted < tries and n < 2 * tries and (left := end - time.monotonic()) > 0:
        n += 1
        began = attempt(n, counted + 1, time.monotonic() + (left if counted + 1 == tries else min(left, budget / 2)))
        counted += began.ended != "wrote nothing"
        yield began


def first_passing(tried) -> runs.Attempt:
    """The first attempt whose check passed wins; when none did, the last one, ending with exit 6."""
    for attempt in tried:
        if attempt.code == 0:
            attempt.passed = True
            return attempt
    return replace(attempt, code=6)


if __name__ == "__main__":  # `python agent.py "task"`: the command line (cli.py), as `tooloop` runs it
    import runpy
    runpy.run_module("cli", run_name="__main__")
