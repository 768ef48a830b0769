"""The command line: tooloop's options, its start, its run and its end.

`main` reads the options (`parse_args`, from one table, OPTIONS: flags over the environment over
tooloop's own .env over the defaults), checks what the run needs (the workspace, a sandbox, the
files the user names, the transcript), runs the attempts (agent.py), lands the chosen attempt's
changes (runs.land) and says how the run ended, with one of EXIT_CODES. A replay (`--replay
FILE`) takes only the model's replies and the task from a recording (`replay_notes` says where
its settings differ); `--render FILE` prints one and exits.

Left out on purpose: subcommands, a configuration file format of our own, interactive setup, and
any configuration from the folder tooloop runs in or the workspace (a project's files are data).
"""

import argparse
import json
import math
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from dotenv import dotenv_values
from rich.text import Text

import aids
import protect
import redact
import runs
import sandbox
import transcript
from agent import MAX_CALLS, attempts, model_caller
from endpoint import LONE, REPLY_CHARS, REPLY_SECONDS, Exit, check_endpoint, sender
from screen import answer_on_terminal, asker, console, end_line, printable, render, show_changes, show_end
from tools import MAX_WRITE, Settings, dispatch, inside


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
    70: "tooloop itself failed: an unexpected error (one line says which); nothing lands",
    130: "interrupted (Ctrl-C)",
}
CRASHED = 70  # (sysexits.h's EX_SOFTWARE)


# --- the options: one table, read from the flags, the environment and tooloop's own .env ------

@dataclass(frozen=True)
class Option:
    """One setting: its name in the program, its flag (None: set by its variable alone), its
    variable (None: a flag alone), how its text is read (a function that raises ValueError with
    what the text must be; `bool` a switch, `list` a repeatable flag), its default and its help."""
    name: str
    flag: str | None
    variable: str | None
    read: Callable
    default: object
    help: str
    metavar: str | None = None


def text(value: str) -> str:
    return value


def count(value: str) -> int:
    """A whole number above 0 (a cap, a limit, a number of tries)."""
    try:
        n = int(value)
    except ValueError:
        n = 0
    if n < 1:
        raise ValueError("must be a whole number above 0")
    return n


def integer(value: str) -> int:
    try:
        return int(value)
    except ValueError:
        raise ValueError("must be a whole number") from None


def number(low: int, high: int, above: bool = False):
    """A reader of a finite number from `low` (or above it, if `above`) to `high`."""
    words = f"above {low:,} and at most {high:,}" if above else f"{low:,}-{high:,}"

    def read(value: str) -> float:
        try:
            n = float(value)
        except ValueError:
            n = math.nan
        if not (low < n <= high if above else low <= n <= high):  # (nan and inf are in no range)
            raise ValueError(f"must be {words}")
        return n
    return read


seconds = number(0, 1_000_000, above=True)  # (11 days: a bound, where nan or inf would be none)


def approval(value: str) -> str:
    if value not in ("auto", "ask", "read-only"):
        raise ValueError("must be auto, ask or read-only")
    return value


OPTIONS = [
    Option("base_url", "--base-url", "OPENAI_BASE_URL", text, "http://localhost:8000/v1",
           "the OpenAI-compatible endpoint", "URL"),
    Option("model", "--model", "MODEL", text, "local-kimi", "the model name sent with each request", "NAME"),
    Option("api_key", None, "OPENAI_API_KEY", text, "local",
           "the endpoint's key; never shown to the model or written to a transcript"),
    Option("max_turns", "--max-turns", "TOOLOOP_MAX_TURNS", count, 20,
           "model calls one attempt may make before it stops (exit 3)", "N"),
    Option("workspace", "--workspace", "TOOLOOP_WORKSPACE", text, ".",
           "the folder the tools may touch: a project's, not a system folder, and of at most "
           f"{protect.MAX_ENTRIES:,} files and folders", "PATH"),
    Option("timeout", "--timeout", "TOOLOOP_SHELL_TIMEOUT", seconds, 60,
           "seconds one shell command (or the check) may run", "S"),
    Option("approval", "--approval", "TOOLOOP_APPROVAL", approval, "auto",
           "auto (run what the sandbox allows), ask (confirm each write and command) or read-only", "MODE"),
    Option("check", "--check", "TOOLOOP_CHECK", text, None,
           "your definition of done: a shell command run (sandboxed) each time the model answers; its failure "
           "goes back to the model", "CMD"),
    Option("attempts", "--attempts", "TOOLOOP_ATTEMPTS", count, 6,
           "with --check: independent attempts at most, each from the task alone in a fresh copy of the workspace; "
           "the first that passes lands; one that changed no file does not count (at most 2N begin)", "N"),
    Option("budget", "--budget", "TOOLOOP_BUDGET", seconds, 240,
           "with --check: seconds in which attempts may begin; each may spend half of it (the last that counts, all "
           "that is left), then its check runs on what it left", "S"),
    Option("check_rounds", "--check-rounds", "TOOLOOP_CHECK_ROUNDS", count, 1,
           "with --check: failed checks that end one attempt", "N"),
    Option("runs", None, "TOOLOOP_RUNS", text, "~/.cache/tooloop/runs",
           "where each run's copies of the workspace (its attempts) are kept: the 20 newest runs' folders"),
    Option("file", "--file", None, list, [], "a file that comes with the task (repeatable): its content is in "
           "the first message, and it counts as read", "PATH"),
    Option("transcript", "--transcript", "TOOLOOP_TRANSCRIPT", text, "",
           "where to record the run (default: a new .tooloop/<time>-<random>.jsonl in the workspace); off for "
           "nowhere", "PATH"),
    Option("unsafe_no_sandbox", "--unsafe-no-sandbox", None, bool, False,
           "run shell commands unconfined where bubblewrap is missing (dangerous)"),
    Option("plain", "--plain", None, bool, False, "no aids: the article's loop with the lesson's rules"),
    Option("no_probe", "--no-probe", None, bool, False, "skip the start-up GET /props"),
    Option("show_request", "--show-request", None, bool, False,
           "print every request body and raw response as JSON"),
    Option("replay", "--replay", None, text, None, "re-run a transcript: recorded model replies, tools for real; "
           "every setting comes from this command line, as for any run", "FILE"),
    Option("render", "--render", None, text, None, "print a transcript as a conversation", "FILE"),
    Option("temperature", "--temperature", "TOOLOOP_TEMPERATURE", number(0, 2), 0.7,
           "sampling temperature, 0-2 (Qwen2.5's recommendation; other models recommend others)", "T"),
    Option("top_p", "--top-p", "TOOLOOP_TOP_P", number(0, 1, above=True), 0.8,
           "nucleus sampling: the share of probability sampled from", "P"),
    Option("max_reply_tokens", "--max-reply-tokens", "TOOLOOP_MAX_REPLY_TOKENS", count, 1024,
           "cap on the tokens of one reply", "N"),
    Option("seed", "--seed", "TOOLOOP_SEED", integer, 0,
           "each request's seed is N plus the turn number: the same N repeats a run on one machine and server "
           "build, another N samples another run", "N"),
    Option("task_file", "--task-file", None, text, None,
           "read the task from a file; a task of - (or --task-file -) reads it from stdin", "PATH"),
    Option("quiet", "--quiet", None, bool, False,
           "print only the final answer (not with --approval ask: its questions would be hidden)"),
    Option("reply_seconds", "--reply-seconds", "TOOLOOP_REPLY_SECONDS", seconds, REPLY_SECONDS,
           "seconds one model reply may take in all (exit 7 past it); a server silent for this long, or 600 s, "
           "is given up on (exit 1)", "S"),
    Option("reply_chars", "--reply-chars", "TOOLOOP_REPLY_CHARS", count, REPLY_CHARS,
           "characters one model reply may hold (exit 7 past it): a server that streams forever is cut off, and "
           "so is one that sends 1,000 bytes a character without ending a line", "N"),
    Option("max_write", "--max-write", "TOOLOOP_MAX_WRITE", count, MAX_WRITE,
           "bytes one write_file may write; a larger write is an error the model sees", "BYTES"),
]


def config_file() -> Path:
    """tooloop's own .env: in the user's configuration folder, never in a project."""
    base = os.environ.get("XDG_CONFIG_HOME", "")
    return (Path(base) if os.path.isabs(base) else Path.home() / ".config") / "tooloop" / ".env"


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """The options, each from its flag, else its variable in the environment, else in tooloop's own
    .env (config_file), else its default; a value that is not one is one line and exit 2.

    A project's files never steer tooloop: no .env in the current folder or the workspace is read
    (one could send the key to another server, write a transcript over a shell's rc file, or name
    a command to run), and a replay takes only the recording's replies and task (`replay_notes`)."""
    parser = flags()
    args = parser.parse_args(argv)
    try:
        saved = dotenv_values(config_file()) if config_file().is_file() else {}
    except (OSError, UnicodeDecodeError) as error:
        parser.error(f"cannot read {config_file()} ({error})")
    attempts_given = args.attempts is not None or args.budget is not None
    for option in OPTIONS:
        if option.read not in (bool, list):
            setattr(args, option.name, setting(parser, option, getattr(args, option.name, None), saved))
    if attempts_given and not args.check:
        parser.error("--attempts and --budget need --check: the check is what chooses among the attempts")
    args.runs = Path(args.runs).expanduser()
    read_task(parser, args)
    check_files(parser, args)
    return args


def flags() -> argparse.ArgumentParser:
    """The command line's parser: the task, and a flag for each option that has one (`add_flag`)."""
    parser = argparse.ArgumentParser(
        prog="tooloop", description="A minimal coding agent: a model, three tools, one loop.",
        epilog=f"configuration: flags, then the environment, then {config_file()}; a project's .env is never read\n"
               + "".join(f"  {o.variable}: {o.help} (default {o.default})\n" for o in OPTIONS if not o.flag)
               + f"limits: one reply may make {MAX_CALLS} tool calls; each call past them gets an error, not run\n\n"
               + "aids (small-model helpers, on unless --plain; see aids.py):\n"
               + "\n".join(f"  {name}" for name in aids.NAMES)
               + "\n\nexit codes:\n" + "\n".join(f"  {code:<4} {what}" for code, what in EXIT_CODES.items()),
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("task", nargs="?", help="what the agent should do; - reads it from stdin")
    for option in OPTIONS:
        if option.flag:
            add_flag(parser, option)
    parser.add_argument("--version", action="version", version=f"tooloop {__version__}")
    return parser


def check_files(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """What the run's files and text must be, before anything starts: one line and exit 2 if not."""
    for name in ("replay", "render"):
        if getattr(args, name) and not Path(getattr(args, name)).is_file():
            parser.error(f"--{name}: no such file {getattr(args, name)!r}")
        try:
            events = transcript.checked(getattr(args, name)) if getattr(args, name) else []
        except transcript.NotATranscript as error:
            parser.error(f"--{name}: {getattr(args, name)} is not a tooloop transcript: {error}")
        if name == "replay" and events and not any(event["event"] == "response" for event in events):
            parser.error(f"--replay: {args.replay} holds no model reply to replay")
    if not args.render and (why := unusable_workspace(Path(args.workspace))):  # (--render touches none)
        parser.error(why)
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


def add_flag(parser: argparse.ArgumentParser, option: Option) -> None:
    """The option's flag, with its variable and default in its help. A value is read as text here
    and checked by `setting`, whichever place it came from."""
    where = [f"env {option.variable}"] if option.variable else []
    if option.read not in (bool, list) and option.default not in (None, ""):
        where.append(f"default {option.default}")
    help = option.help + (f" ({'; '.join(where)})" if where else "")
    if option.read is bool:
        parser.add_argument(option.flag, action="store_true", help=help)
    elif option.read is list:
        parser.add_argument(option.flag, metavar=option.metavar, action="append", default=[], help=help)
    else:
        parser.add_argument(option.flag, metavar=option.metavar, dest=option.name, default=None, help=help)


def setting(parser: argparse.ArgumentParser, option: Option, flag: str | None, saved: dict):
    """One option's value: from its flag, the environment, tooloop's .env, or its default (an empty
    variable counts as unset). The one error path: where the value came from, and what it must be."""
    sources = [(option.flag, flag), (f"{option.variable} (in the environment)", os.environ.get(option.variable or "")),
               (f"{option.variable} (in {config_file()})", saved.get(option.variable or ""))]
    where, value = next(((where, value) for where, value in sources if value), (None, None))
    if where is None:
        return option.default
    try:
        return option.read(value)
    except ValueError as why:
        parser.error(printable(f"{where} {why}, not {value!r}"))


def read_task(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """The task from --task-file or stdin (a task of -): one line and exit 2 if there is none."""
    if not (args.task_file or args.task == "-"):
        return
    if args.task_file and args.task:
        parser.error("give the task or --task-file, not both")
    source = args.task_file or "-"
    try:
        args.task = (sys.stdin.read() if source == "-" else Path(source).read_text()).strip()
    except (OSError, UnicodeDecodeError) as error:
        parser.exit(2, f"tooloop: error: cannot read the task from {source} ({error})\n")
    if not args.task:
        parser.exit(2, f"tooloop: error: the task from {'stdin' if source == '-' else source} is empty\n")


SYSTEM = ("/usr", "/etc", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/boot", "/dev", "/proc", "/sys", "/run",
          "/var/lib", "/var/cache", "/var/log", "/snap")  # the system's folders: never a project's


def unusable_workspace(workspace: Path) -> str | None:
    """Why `workspace` cannot be one (a usage error), or None. It must be a folder, not / (the tools
    would reach the whole machine), not in a system folder, and of at most protect.MAX_ENTRIES
    files and folders: the scan that protects what host tools run looks at no more, and each
    attempt copies it."""
    if not workspace.is_dir():
        return f"workspace {str(workspace)!r} is not a folder"
    resolved = workspace.resolve()
    if resolved == Path("/"):
        return "the workspace cannot be /: the tools would reach the whole machine"
    if system := next((s for s in SYSTEM if resolved.is_relative_to(Path(s).resolve())), None):
        return f"the workspace {resolved} is in a system folder ({system}): run tooloop in a project's folder"
    entries = 0
    for _, folders, files in os.walk(resolved):  # (links are not followed)
        entries += len(folders) + len(files)
        if entries > protect.MAX_ENTRIES:
            return (f"the workspace {resolved} holds more than {protect.MAX_ENTRIES:,} files and folders: "
                    "run tooloop in a project's folder")
    return None


# The settings a recording's start event holds, with the flag that gives each again (plain: no aids).
RECORDED = {"max_turns": "--max-turns", "approval": "--approval", "timeout": "--timeout", "check": "--check",
            "check_rounds": "--check-rounds", "attempts": "--attempts", "max_write": "--max-write",
            "files": "--file", "plain": "--plain", "sandbox": "--unsafe-no-sandbox"}


def replay_notes(args: argparse.Namespace, config: dict) -> list[str]:
    """What a replay does otherwise than the recorded run, one line each. A replay takes the
    recording's replies and task, never its settings: a shared file must not choose what may land
    (--file, --approval, --max-write), a command that runs (--check) or a limit. Where the two
    differ, the line says so in flags, and the replay may diverge."""
    now = {**{key: getattr(args, key) for key in RECORDED if hasattr(args, key)}, "files": args.file,
           "sandbox": not args.unsafe_no_sandbox}
    recorded = {key: config.get(key) for key in RECORDED}
    recorded["plain"] = config.get("aids") == [] if isinstance(config.get("aids"), list) else None
    if not recorded["check"]:
        recorded["attempts"] = None  # (a run without a check has one attempt, whatever --attempts said)
    return [f"replay: the run was recorded with {as_flags(key, recorded[key])}; this replay runs with "
            f"{as_flags(key, now[key])}, and may diverge" for key in RECORDED
            if recorded[key] is not None and recorded[key] != now[key]]


def as_flags(key: str, value) -> str:
    """A recorded or current setting as the flags that give it."""
    flag = RECORDED[key]
    if key in ("plain", "sandbox"):
        return flag if value == (key == "plain") else f"no {flag}"
    if key == "files":
        return " ".join(f"{flag} {path}" for path in value) or f"no {flag}"
    return f"{flag} {value}" if value is not None else f"no {flag}"


def main(argv: list[str] | None = None) -> int:
    """The command line: tooloop's start, run and end (`session`). A Ctrl-C before the run began
    (the sandbox probe, the --file reads) ends it as one during the run does: exit 130."""
    try:
        return session(argv)
    except KeyboardInterrupt:
        console.quiet = False
        console.print("interrupted", style="bold yellow")
        return 130
    except Exception as error:  # a fault of tooloop's own (or the machine's): its own code, never Ctrl-C's
        try:
            print(printable(f"tooloop: error: tooloop itself failed ({type(error).__name__}: {error}); "
                            "nothing was applied"), file=sys.stderr)
        except OSError:
            pass  # (stderr itself may be what failed)
        return CRASHED


def session(argv: list[str] | None = None) -> int:
    """Read the command line, check what the run needs, run it, and say how it ended (the exit code)."""
    args = parse_args(argv)
    console.quiet = args.quiet
    if args.render:
        return render(transcript.checked(args.render))
    recorded = transcript.checked(args.replay) if args.replay else []
    started = next((e for e in recorded if e["event"] == "start"), {"config": {}})  # a replay's task
    task, check, files = args.task or started.get("task", ""), args.check, args.file
    for line in replay_notes(args, started["config"]) if recorded else []:  # its settings are this command line's
        console.print(Text(printable(line)), style="yellow")
    workspace = Path(args.workspace).resolve()
    if why := protect.unsafe_workspace(workspace):  # all a run changes there, the user's own tools may run
        console.print(Text(printable(f"error: {workspace} is not a project folder: {why}. Run tooloop in the "
                                     "project's own folder (--workspace)."), style="bold red"))
        return 2
    if args.unsafe_no_sandbox:  # unconfined commands run as the user: keep the key in our memory out of reach
        sandbox.undumpable()
    secrets = redact.secrets(args.api_key, args.base_url)  # never recorded, nor shown to the model
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
        files[i] = str(inside(path, settings).relative_to(workspace))
    settings = replace(settings, named=frozenset(workspace / path for path in files))  # (frozen from here on)
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
    code, answer, chosen = CRASHED, "", None  # without a check, the one attempt lands however it ends (runs.land)
    try:
        console.print(Text(printable(task)), style="bold magenta")
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
                                        "budget": args.budget if check else None,
                                        "replay": args.replay, "sampling": sampling})
        model = lambda log, deadline: model_caller(send, args.model, totals, args.max_turns, n_ctx,  # noqa: E731
                                                   log, args.show_request, sampling, deadline)
        hooks = (lambda here, log: aids.Hooks()) if args.plain else aids.text_calls
        attempt = attempts(task, model, settings, args.max_turns, hooks, check, args.check_rounds,
                           tries, folder, hook, args.budget)
        code, answer, chosen = attempt.code, attempt.answer, attempt
    except Exit as ended:
        code, message = ended.args
        console.quiet = False
        console.print(Text(printable(message), style="bold red"))
    except LookupError as error:  # --replay ran past the end of the recording
        code = 1
        console.print(f"replay: {error}; the run diverged from the recording", style="bold red", markup=False)
    except KeyboardInterrupt:
        code = 130
        console.quiet = False
        console.print("interrupted", style="bold yellow")
    finally:
        spent = runs.spent(folder) if check else ""  # (before land, which lets the run's attempts go)
        landed, refused, where, code = runs.land(workspace, chosen, settings, code, check, folder)
        landed = [vars(change) for change in landed]
        log("changes", landed=landed, refused=refused, where=where)
        if settings.state.removed:
            log("removed", removed=settings.state.removed)
        log("end", exit_code=code, answer=answer, totals=totals, meaning=EXIT_CODES.get(code, "?"), spent=spent)
    if args.replay:
        for line in compare.divergences:
            console.print(Text(printable(f"replay diverges: {line}"), style="yellow"))
        console.print(f"replay: {len(compare.divergences)} divergence(s) from the recording", style="bold")
    show_changes(landed, refused, where)
    show_end(code, answer, end_line(code, EXIT_CODES.get(code, "?"), landed, check, chosen and chosen.number, spent))
    if settings.state.removed:  # what commands left for host tools to run: shown whatever --quiet says
        console.quiet = False
        console.print(Text(printable("\n  ".join(["warning: tooloop undid what commands in this run left for host "
                                                  "tools to run:", *settings.state.removed])), style="bold yellow"))
    if code == 0 and not answer_on_terminal():  # piped, stdout gets the answer plain, for scripts
        print(printable(answer))
    return code


if __name__ == "__main__":
    sys.exit(main())