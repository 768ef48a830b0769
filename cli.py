"""The command line: tooloop's options, its start, its run and its end.

`main` reads the options (`parse_args`: flags over the environment over a .env file over the
defaults), checks what the run needs (the workspace, a sandbox, the files the user names, the
transcript), runs the attempts (agent.py), lands the chosen attempt's changes (runs.land) and
says how the run ended, with one of EXIT_CODES. A replay (`--replay FILE`) takes the model's
replies from a recording (`as_recorded`); `--render FILE` prints one and exits.

Left out on purpose: subcommands, a configuration file format of our own, and interactive setup.
"""

import argparse
import json
import os
import sys
from pathlib import Path

from dotenv import dotenv_values
from rich.text import Text

import aids
import protect
import runs
import sandbox
import transcript
from agent import MAX_CALLS, attempts, model_caller
from endpoint import LONE, REPLY_CHARS, REPLY_SECONDS, Exit, check_endpoint, sender
from screen import answer_on_terminal, asker, console, render, show_changes, show_end
from tools import MAX_WRITE, Settings, dispatch, inside
from transcript import printable


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
    try:
        tries, folder = (args.attempts if check else 1), runs.folder(args.runs, workspace)
    except runs.Unusable as error:
        console.print(Text(printable(f"error: {error}"), style="bold red"))
        return 2
    code, answer, chosen = 130, "", None  # without a check, the one attempt lands however it ends (runs.land)
    console.print(Text(printable(task)), style="bold magenta")
    try:
        if recorded:
            send, compare = transcript.replayer(recorded)
            hook = lambda event, **data: (log(event, **data), compare(event, **data))  # noqa: E731
            n_ctx = next((e["config"].get("n_ctx") for e in recorded if e["event"] == "start"), None)
        else:
            send, compare, hook = sender(args.base_url, args.api_key, args.reply_seconds, args.reply_chars), None, log
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
        call_model = model_caller(send, args.model, totals, args.max_turns, n_ctx, hook, args.show_request, sampling)
        hooks = (lambda here: aids.Hooks()) if args.plain else (lambda here: aids.text_calls(here, hook))
        attempt = attempts(task, call_model, settings, args.max_turns, hooks, check, args.check_rounds,
                           tries, folder, hook)
        code, answer, chosen = attempt.code, attempt.answer, attempt
    except Exit as ended:
        code, message = ended.args
        console.quiet = False
        console.print(Text(printable(message), style="bold red"))
    except LookupError as error:  # --replay ran past the end of the recording
        code = 1
        console.print(f"replay: {error}; the run diverged from the recording", style="bold red", markup=False)
    except KeyboardInterrupt:
        console.quiet = False
        console.print("interrupted", style="bold yellow")
    finally:
        landed, refused, where, code = runs.land(workspace, chosen, settings, code, check, folder)
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