"""tooloop: a coding agent that is one readable loop.

    python agent.py "Write fizzbuzz.py and run it for 1..20"

`run` is the whole agent: send the conversation and the tool schemas to an OpenAI-compatible
endpoint, append the reply exactly as it came back, run the tool it asks for through
`tools.dispatch`, append the result, and repeat until the model answers in plain text or the
turn cap is hit. Everything else in this file is the command line and printing.

Printing goes to stderr through rich, always with markup off for model and tool text (code is
full of [brackets]); stdout gets only the final answer, so `python agent.py ... > answer.txt`
captures just that.

Left out on purpose: streaming, several tool calls run in parallel, a chat REPL, and any
memory between runs.
"""

import argparse
import difflib
import json
import os
import sys
import time
from pathlib import Path

import openai
from dotenv import dotenv_values
from rich.console import Console
from rich.markdown import Markdown
from rich.syntax import Syntax
from rich.text import Text

from prompts import SYSTEM_PROMPT
from tools import TOOLS, Settings, dispatch

EXIT_CODES = {
    0: "the model gave a final answer (printed on stdout)",
    1: "the model endpoint failed (unreachable, or an HTTP error after retries)",
    2: "usage or configuration error",
    3: "the turn cap was reached without a final answer",
    130: "interrupted (Ctrl-C)",
}
MAX_REPLY_TOKENS = 2048  # one reply; enough for a whole small file in a write_file call
SCREEN_LINES = 12  # lines of a tool result shown on screen (the model always gets all of it)

console = Console(stderr=True, highlight=False)


class EndpointError(Exception):
    """The model endpoint failed in a way only the user can fix."""


def run(task: str, client: openai.OpenAI, model: str, settings: Settings, max_turns: int) -> tuple[int, str]:
    """The agent loop. Returns (exit code, final answer)."""
    messages = [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": task}]
    for turn in range(1, max_turns + 1):
        started = time.monotonic()
        response = complete(client, model=model, messages=messages, tools=TOOLS, tool_choice="auto",
                            parallel_tool_calls=False, temperature=0, max_completion_tokens=MAX_REPLY_TOKENS)
        message = response.choices[0].message
        messages.append(message.model_dump(exclude_none=True))  # exactly as returned: append-only
        show_reply(message)
        show_usage(turn, max_turns, response, time.monotonic() - started)
        if not message.tool_calls:
            return 0, message.content or ""
        for call in message.tool_calls:  # every call gets exactly one answer, matched by id
            show_call(call.function.name, call.function.arguments)
            result = dispatch(call.function.name, call.function.arguments, settings)
            show_result(result)
            messages.append({"role": "tool", "tool_call_id": call.id, "content": result})
    console.print(f"stopped: {max_turns} model calls without a final answer "
                  "(raise --max-turns to allow more)", style="bold yellow")
    return 3, ""


def complete(client: openai.OpenAI, **request):
    """One model call. The client already retries connection errors and 5xx with backoff."""
    with console.status("waiting for the model"):
        try:
            response = client.chat.completions.create(**request)
        except openai.APIConnectionError as error:
            raise EndpointError(f"cannot reach the model endpoint at {client.base_url} ({error})") from None
        except openai.APIStatusError as error:
            raise EndpointError(f"the model endpoint at {client.base_url} answered HTTP "
                                f"{error.status_code}: {error.message}") from None
    if not getattr(response, "choices", None):
        raise EndpointError(f"the model endpoint at {client.base_url} sent a reply with no choices")
    return response


# --- printing -------------------------------------------------------------------------------

def printable(text: str) -> str:
    """Model text can hold lone surrogates (a JSON "\\ud800"), which no terminal can encode."""
    return text.encode("utf-8", errors="replace").decode("utf-8")


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


def show_usage(turn: int, max_turns: int, response, seconds: float) -> None:
    usage = response.usage
    prompt, completion = (usage.prompt_tokens, usage.completion_tokens) if usage else ("?", "?")
    details = getattr(usage, "prompt_tokens_details", None)
    cached = getattr(details, "cached_tokens", None)
    console.print(f"turn {turn}/{max_turns} · prompt {prompt} tokens"
                  f"{f' ({cached} cached)' if cached is not None else ''} · completion {completion}"
                  f" · {seconds:.1f} s", style="dim")


def parse_json_object(text: str) -> dict:
    try:
        value = json.loads(text or "{}")
    except json.JSONDecodeError:
        return {}
    return value if isinstance(value, dict) else {}


def asker(workspace: Path):
    """The approval prompt for --approval ask: y / n / always (for this tool, for this run)."""
    always: set[str] = set()

    def approve(name: str, args: dict) -> bool:
        if name in always:
            return True
        if name == "write_file":
            target = (workspace / args["path"])
            old = target.read_text(errors="replace").splitlines(True) if target.is_file() else []
            diff = "".join(difflib.unified_diff(old, args["content"].splitlines(True),
                                                f"a/{args['path']}", f"b/{args['path']}"))
            console.print(Syntax(diff or "(no change)", "diff"))
        else:
            console.print(Text(f"$ {args['command']}", style="bold"))
        try:
            answer = console.input("allow? [y]es / [n]o / [a]lways for this run: ").strip().lower()
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
    parser.add_argument("task", help="what the agent should do")
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
    parser.add_argument("--quiet", action="store_true", help="print only the final answer")
    args = parser.parse_args(argv)
    args.api_key = env.get("OPENAI_API_KEY") or "local"
    if args.max_turns < 1 or args.timeout <= 0:
        parser.error("--max-turns and --timeout must be positive")
    if not Path(args.workspace).is_dir():
        parser.error(f"workspace {args.workspace!r} is not a folder")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    console.quiet = args.quiet
    workspace = Path(args.workspace).resolve()
    settings = Settings(workspace=workspace, timeout=args.timeout, approval=args.approval,
                        sandbox=not args.unsafe_no_sandbox, approve=asker(workspace),
                        secrets=[args.api_key] if args.api_key != "local" and len(args.api_key) >= 6 else [])
    client = openai.OpenAI(base_url=args.base_url, api_key=args.api_key, timeout=600, max_retries=2)
    console.print(Text(args.task), style="bold magenta")
    try:
        code, answer = run(args.task, client, args.model, settings, args.max_turns)
    except EndpointError as error:
        console.quiet = False
        console.print(f"error: {error}. Is the server running? Start it with scripts/serve.py, "
                      "or point --base-url / OPENAI_BASE_URL at another one.", style="bold red", markup=False)
        return 1
    except KeyboardInterrupt:
        console.quiet = False
        console.print("interrupted", style="bold yellow")
        return 130
    if code == 0:
        console.print(Markdown(printable(answer)))
        print(printable(answer))
    return code


if __name__ == "__main__":
    sys.exit(main())
