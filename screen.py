"""What a person watching a run sees: every message as it happens, on stderr.

Text from the model, tools, files or the server always goes through `printable` (no escape
sequence reaches the terminal) and is printed as rich Text, never as markup. stdout gets
only the final answer (cli.main prints it), so `python agent.py "task" > answer.txt` works;
on a terminal the answer is shown once, formatted (answer_on_terminal). NO_COLOR=1 turns colour
off (rich reads it).
"""

import difflib
import json
import os
import re
import sys
import unicodedata
from pathlib import Path

from openai.types.chat import ChatCompletion
from rich.console import Console
from rich.highlighter import JSONHighlighter
from rich.markdown import Markdown
from rich.markup import escape
from rich.syntax import Syntax
from rich.text import Text

from redact import redact
from tools import Result, parsed

console = Console(stderr=True, highlight=False, soft_wrap=True)  # a line is never broken: logs grep well
SCREEN_LINES = 12  # lines of a tool result shown on screen (the model always gets all of it)

UNSAFE = re.compile(r"[^\t\n\x20-\x7e]")  # all but tab, newline and plain ASCII: looked at one by one
ESCAPED = ("Cc", "Cf", "Zl", "Zp")  # of those: controls, format characters (U+200B, U+202E), line breaks


def printable(text: str) -> str:
    """Text from the model, tools, files or the server, safe for a terminal: no lone surrogates (cannot
    be encoded), control characters (ESC[8m hides text) or format characters (U+202E turns a line
    around), each escaped as Python writes it, and no credential (redact.py). All printed text not
    written here goes through it."""
    text = redact(text.encode("utf-8", errors="replace").decode("utf-8"))
    return UNSAFE.sub(lambda m: ascii(m[0])[1:-1] if unicodedata.category(m[0]) in ESCAPED else m[0], text)


def note(kind: str, text: str, log=lambda event, **data: None, **details) -> None:
    """Something the harness or an aid did on its own initiative: shown, and kept in the transcript."""
    console.print(Text(f"⚑ {printable(text)}", style="yellow"))
    log("note", kind=kind, text=text, **details)


def show_json(title: str, body: dict) -> None:
    """A request or response body, exactly, highlighted and never re-wrapped (copy-pasteable)."""
    console.rule(title, style="dim")
    console.print(JSONHighlighter()(Text(printable(json.dumps(body, indent=2, ensure_ascii=False)))))


def show_reply(message) -> None:
    if reasoning := getattr(message, "reasoning_content", None):
        console.print(Text(printable(reasoning.strip()), style="dim italic"))
    if (text := message.content or "").strip():
        console.print(Text(printable(text.strip()), style="bold"))


class Streamed:
    """The reply on screen as it streams: a spinner (on a terminal) until the first piece, then
    each piece as it arrives. endpoint.assemble calls it with (kind, piece)."""

    def __init__(self):
        self.kind = None
        self.spinner = console.status("waiting for the model") if console.is_terminal else None

    def __enter__(self):
        if self.spinner:  # (a thread: only for a person watching)
            self.spinner.start()
        return self

    def __exit__(self, *error) -> None:
        if self.spinner:
            self.spinner.stop()
        if self.kind:
            console.print()

    def __call__(self, kind: str, piece: str) -> None:
        if kind != self.kind:
            if self.kind:
                console.print()
            elif self.spinner:
                self.spinner.stop()
            self.kind = kind
        console.print(Text(printable(piece), style="bold" if kind == "content" else "dim italic"), end="")


def show_call(name: str, arguments: str) -> None:
    values = parsed(arguments)
    args = {k: printable(v) for k, v in values.items() if isinstance(v, str)}
    lines = " ".join(f"{k} {values[k]}" for k in ("start", "lines") if isinstance(values.get(k), int))  # a range read
    console.print(Text.assemble(("→ ", "cyan"), (printable(name), "bold cyan"), " ",
                                (args.get("path") or args.get("command") or printable(str(arguments)), "cyan"),
                                (f" ({lines})" if lines else "", "cyan")))
    if name == "write_file" and "old" in args and "content" in args:  # an edit: what goes, what comes
        lines = [f"-{line}" for line in args["old"].splitlines()]
        lines += [f"+{line}" for line in args["content"].splitlines()]
        console.print(Syntax("\n".join(lines), "diff", word_wrap=True))
    elif name == "write_file" and "content" in args:
        lexer = Syntax.guess_lexer(args.get("path", ""), args["content"])
        console.print(Syntax(args["content"], lexer, line_numbers=True, word_wrap=True))


def show_result(result: Result | str, style: str | None = None) -> None:
    text = getattr(result, "text", result)
    lines = printable(text).splitlines()
    shown = "\n".join(lines[:SCREEN_LINES])
    if len(lines) > SCREEN_LINES:
        shown += f"\n… {len(lines) - SCREEN_LINES} more lines (the model sees them all)"
    console.print(Text(shown, style=style or ("red" if text.startswith("Error:") else "green")))


def show_check(command: str, result: Result | str, passed: bool) -> None:
    """The user's check, run by the harness after the model answered: what ran, and what came out."""
    console.print(Text.assemble(("✓ check passed: " if passed else "✗ check failed: ", "bold green" if passed else "bold red"),
                                (printable(command), "bold")))
    show_result(result, "green" if passed else "red")


def show_usage(turn: int, max_turns: int, body: dict, seconds: float, n_ctx: int | None) -> None:
    """One dim line a turn: how full the context is, what the prompt cache saved, how fast."""
    usage = body.get("usage") or {}
    prompt, completion = usage.get("prompt_tokens", "?"), usage.get("completion_tokens", "?")
    cached = (usage.get("prompt_tokens_details") or {}).get("cached_tokens")
    speed = body["timings"].get("predicted_per_second") if isinstance(body.get("timings"), dict) else None
    speed = speed if type(speed) in (int, float) else None
    parts = [f"turn {turn}/{max_turns}", f"context {prompt}/{n_ctx or '?'}",
             *([f"cached {cached}", f"new {prompt - cached}"] if cached is not None and prompt != "?" else []),
             f"out {completion}" + (f" at {speed:.0f} tok/s" if speed else ""), f"{seconds:.1f} s"]
    console.print(" · ".join(parts), style="dim")


def show_changes(landed: list[dict], refused: list[str], where: str) -> None:
    """What the run changed in the workspace, like `git diff --stat`; what was not applied, and why."""
    signs = {"created": ("+", "green"), "changed": ("~", "yellow"), "deleted": ("-", "red")}
    for change in landed:
        sign, style = signs[change["kind"]]
        counts = (f"+{change['added']} -{change['removed']}" if change["kind"] == "changed"
                  else f"{change['added'] or change['removed']} lines")
        console.print(Text(printable(f"{sign} {change['kind']} {change['path']} ({counts})"), style=style))
    if not landed and not refused and "as it was" not in where:
        console.print("no files changed", style="dim")
    for line in grouped(refused):
        console.print(Text(printable(f"not applied: {line}"), style="bold yellow"))
    console.print(Text(printable(where), style="dim"))


def grouped(refused: list[str]) -> list[str]:
    """The `not applied` lines: files refused for the same reason under one folder (a virtualenv a
    command made holds thousands) are one line, the folder and how many; the transcript keeps each."""
    reasons: dict[str, list[str]] = {}
    for line in refused:
        path, _, why = line.partition(": ")
        reasons.setdefault(why, []).append(path)
    lines = []
    for why, paths in reasons.items():
        folder = os.path.commonpath(paths) if len(paths) > 3 else ""
        lines += [f"{folder}/ ({len(paths)} files): {why}"] if folder else [f"{path}: {why}" for path in paths]
    return lines


def answer_on_terminal() -> bool:
    """Whether show_end's answer is on the terminal that stdout shows too: then cli.main does
    not print it again. (Piped, or with --quiet, stdout gets the answer, plain, for scripts.)"""
    return sys.stdout.isatty() and sys.stderr.isatty() and not console.quiet


def show_end(code: int, answer: str, meaning: str) -> None:
    if answer and code == 0:
        console.print(Markdown(printable(answer), hyperlinks=False))  # a link shows where it leads
    console.print(f"exit code {code}: {meaning}", style="dim")


def end_line(code: int, meaning: str, landed: list[dict], check: str | None, passed: int | None = None,
             spent: str = "") -> str:
    """What this run did, for the end line (as show_end takes it: markup escaped). Exit code 0
    means two things (an answer; with --check, a check passed), so its line says which: without a
    check, that the answer is unverified and what changed, or that nothing did; with one, which
    attempt passed and how the attempts were spent (runs.spent). Another code's line is its meaning
    (EXIT_CODES), and, without a check, what changed all the same (that attempt lands however it ends).

        end_line(0, "...", [{"kind": "created", "path": "primes.py", ...}], None)
            -> 'an answer, unverified (no --check ran); created primes.py'
        end_line(0, "...", [...], "pytest -q", passed=2, spent="2 attempts in 80 s: 1 wrote nothing, 1 passed")
            -> 'attempt 2 passed the check (2 attempts in 80 s: 1 wrote nothing, 1 passed); created ...'
    """
    kinds = [f"{change['kind']} {change['path']}" for change in landed[:3]] + (
        [f"{len(landed) - 3} more"] if len(landed) > 3 else [])
    what = ", ".join(kinds) or "no file changed"
    if check:
        said = (f"attempt {passed} passed the check" if code == 0 else meaning) + (f" ({spent})" if spent else "")
        said += f"; {what}" if code == 0 else ""
    else:
        said = f"{'an answer, unverified (no --check ran)' if code == 0 else meaning}; {what}"
    return escape(printable(said))


def render(events: list[dict]) -> int:
    """Print a recorded transcript with the same look as the live run. A transcript is data, so
    every field reaches the terminal through printable, as text (never as markup), and a number
    that is no number is not shown."""
    n_ctx = max_turns = None
    for event in events:
        if event["event"] == "start":
            console.print(Text(printable(event["task"])), style="bold magenta")
            n_ctx, max_turns = (event["config"].get(key) for key in ("n_ctx", "max_turns"))
            n_ctx, max_turns = (value if type(value) is int else None for value in (n_ctx, max_turns))
        elif event["event"] == "response":
            show_reply(ChatCompletion.model_validate(event["body"]).choices[0].message)
            show_usage(event["turn"], max_turns, event["body"], event["seconds"], n_ctx)
        elif event["event"] == "tool":
            show_call(event["name"], event["arguments"])
            show_result(event["result"])
        elif event["event"] == "check":
            show_check(event["command"], event["result"], event["passed"])
        elif event["event"] == "note":
            note(event["kind"], event["text"])
        elif event["event"] == "changes":
            landed = [change for change in event["landed"] if isinstance(change, dict) and change.get("kind") in (
                "created", "changed", "deleted") and all(type(change.get(n)) is int for n in ("added", "removed"))]
            show_changes(landed, [line for line in event["refused"] if isinstance(line, str)], event["where"])
        elif event["event"] == "end":
            show_end(event["exit_code"], str(event.get("answer") or ""), escape(printable(str(event.get("meaning", "?")))))
    return 0


def asker(workspace: Path):
    """The approval prompt for --approval ask: y / n / always (for this tool, for this run)."""
    always: set[str] = set()

    def approve(name: str, args: dict) -> bool:
        if name in always:
            return True
        if name == "write_file":  # named as what will really be replaced, once links are followed
            target, real = Path(os.path.normpath(workspace / args["path"])), (workspace / args["path"]).resolve()
            link = f" (a link to {real.relative_to(workspace)})" if real != target else ""
            console.print(Text(printable(f"write {args['path']}{link}"), style="bold"))
            text = real.read_text(errors="replace") if real.is_file() else ""
            new = text.replace(args["old"], args["content"], 1) if args.get("old") else args["content"]
            diff = "".join(difflib.unified_diff(text.splitlines(True), new.splitlines(True),
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
