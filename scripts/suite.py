#!/usr/bin/env python3
"""Run the agent on the public task suite (tasks/) against a live server and print one table.

    python scripts/suite.py                          # every task, server from OPENAI_BASE_URL
    python scripts/suite.py --only fix-bug --max-turns 10
    python scripts/suite.py --agent-flag=--no-recover
    python scripts/suite.py --compare-recovery       # the suite twice: with and without recovery

For each task: copy tasks/NAME/files/ into a fresh workspace, run `python agent.py` there on
the prompt in tasks/NAME/task.md (a subprocess, with a wall-clock timeout), then run
tasks/NAME/check.py on the workspace and the agent's final answer: it exits 0 only if the task
is solved. The check runs code the model wrote, so it runs in the same bubblewrap sandbox as
the agent's shell when one is available. Turns and tokens come from the last line of the
agent's JSONL transcript (`--transcript`); "?" when there is none (a run killed at the
timeout). Each run's workspace, answer, screen log, transcript and check verdict stay in the
--out folder for a post-mortem.

Exit codes: 0 the suite ran (whatever the solve rate), 1 the server is unreachable, 2 usage.
Left out on purpose: running tasks in parallel (a small local server does one request well at
a time), retries, and any score finer than solved / not solved.
"""

import argparse
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from datetime import datetime
from pathlib import Path

from dotenv import dotenv_values
from rich.console import Console
from rich.table import Table
from rich.text import Text

ROOT = Path(__file__).resolve().parent.parent
TASKS = ROOT / "tasks"
sys.path.insert(0, str(ROOT))
import sandbox  # noqa: E402

CHECK_TIMEOUT = 120  # seconds; a check runs a few small scripts
console = Console(highlight=False, width=None if sys.stdout.isatty() else 120)  # tables, on stdout
log = Console(stderr=True, highlight=False, soft_wrap=True)  # progress, on stderr


def task_names() -> list[str]:
    return sorted(p.name for p in TASKS.iterdir() if (p / "task.md").is_file())


def run_task(name: str, args, flags: list[str], run_dir: Path) -> dict:
    """One task in a fresh workspace: the agent, then the check. Returns one row of the table."""
    task = TASKS / name
    workspace = run_dir / "workspace"
    if (task / "files").is_dir():
        shutil.copytree(task / "files", workspace)
    else:  # a task that starts from an empty folder (git keeps no empty files/)
        workspace.mkdir()
    transcript = run_dir / "transcript.jsonl"  # beside the workspace: the model never sees it
    # --approval auto: a TOOLOOP_APPROVAL=ask in the environment would wait for a y/n forever.
    command = [sys.executable, str(ROOT / "agent.py"), "--base-url", args.base_url, "--model", args.model,
               "--workspace", str(workspace), "--max-turns", str(args.max_turns), "--approval", "auto",
               "--transcript", str(transcript), *flags, "--", (task / "task.md").read_text().strip()]
    started = time.monotonic()
    # cwd=run_dir: the agent reads .env from its cwd, and the suite's settings are all on its command line.
    with open(run_dir / "answer.txt", "w") as out, open(run_dir / "agent.log", "w") as err:
        try:
            code = subprocess.run(command, cwd=run_dir, stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                                  env={**os.environ, "OPENAI_API_KEY": args.api_key}, timeout=args.timeout).returncode
        except subprocess.TimeoutExpired:  # run() has killed the agent; its sandboxes die with it
            code = "timeout"
    seconds = time.monotonic() - started
    solved, why = check(task, run_dir)
    (run_dir / "check.txt").write_text(f"solved: {solved}\n{why}\n")
    return {**totals(transcript), "task": name, "solved": solved, "why": why, "exit": code, "seconds": seconds}


def check(task: Path, run_dir: Path) -> tuple[bool, str]:
    """Run the task's check.py on run_dir/workspace and run_dir/answer.txt: (solved, why not)."""
    # A pristine copy of the task: the check restores originals from its files/ folder.
    shutil.copytree(task, run_dir / "task", ignore=shutil.ignore_patterns("solution", "reference_answer.txt"))
    command = [sys.executable, "task/check.py", "workspace", "answer.txt"]
    argv, preexec = command, None
    if sandbox.available():
        argv, preexec = sandbox.wrap(shlex.join(command), run_dir), sandbox.limit_resources
    try:
        result = subprocess.run(argv, cwd=run_dir, env=sandbox.environment(), preexec_fn=preexec,
                                stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=CHECK_TIMEOUT)
    except subprocess.TimeoutExpired:
        return False, f"the check took more than {CHECK_TIMEOUT} s"
    if result.returncode == 0:
        return True, ""
    return False, (result.stderr.strip().splitlines() or [f"check.py exited {result.returncode}"])[-1]


def totals(transcript: Path) -> dict:
    """The agent's own counts from the transcript's last line, or {} (the cells show "?")."""
    try:
        end = json.loads(transcript.read_text().splitlines()[-1])
        numbers = end["totals"] if end.get("event") == "end" else {}
        return {**numbers, "processed": numbers["prompt_tokens"] - numbers["cached_tokens"]}
    except (OSError, IndexError, ValueError, KeyError, TypeError, AttributeError):
        return {}


COLUMNS = {"turns": "turns", "seconds": "seconds", "processed": "prompt", "cached_tokens": "cached",
           "completion_tokens": "generated"}


def rate(rows: list[dict]) -> str:
    solved = sum(r["solved"] for r in rows)
    return f"{solved}/{len(rows)} ({100 * solved / max(len(rows), 1):.0f}%)"


def total(rows: list[dict], key: str) -> str:
    values = [r.get(key) for r in rows]
    return "?" if None in values else f"{sum(values):.0f}"


def table(title: str, rows: list[dict]) -> Table:
    t = Table(title=title, title_justify="left", caption_justify="left",
              caption="seconds: wall clock; prompt: prompt tokens processed (not from the cache)")
    t.add_column("task")
    for header in ("solved", "exit", *COLUMNS.values()):
        t.add_column(header, justify="right")
    for r in rows:
        cells = [f"{r[k]:.0f}" if isinstance(r.get(k), (int, float)) else "?" for k in COLUMNS]
        t.add_row(r["task"], "yes" if r["solved"] else "no", str(r["exit"]), *cells)
    t.add_section()
    t.add_row("total", rate(rows), "", *(total(rows, k) for k in COLUMNS))
    return t


def run_suite(label: str, names: list[str], args, flags: list[str]) -> list[dict]:
    rows = []
    for i, name in enumerate(names, 1):
        run_dir = args.out / label / name
        run_dir.mkdir(parents=True)
        log.print(Text(f"[{label} {i}/{len(names)}] {name} …"), end=" ")
        row = run_task(name, args, flags, run_dir)
        verdict = "solved" if row["solved"] else f"not solved ({row['why']})"
        log.print(Text(f"{verdict} · exit {row['exit']} · {row['seconds']:.0f} s"))
        rows.append(row)
    return rows


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    env = {**dotenv_values(ROOT / ".env"), **os.environ}  # flags > environment > .env > defaults
    parser = argparse.ArgumentParser(description="Run the agent on the public task suite and print a table.",
                                     epilog="exit codes: 0 the suite ran, 1 server unreachable, 2 usage error")
    parser.add_argument("--base-url", default=env.get("OPENAI_BASE_URL") or "http://localhost:8000/v1")
    parser.add_argument("--model", default=env.get("MODEL"), help="default: the first model the server lists")
    parser.add_argument("--max-turns", type=int, default=15, help="passed to the agent (default 15)")
    parser.add_argument("--timeout", type=float, default=600, help="wall-clock seconds per task (default 600)")
    parser.add_argument("--only", action="append", choices=task_names(), help="run only this task (repeatable)")
    parser.add_argument("--agent-flag", action="append", default=[], metavar="FLAG",
                        help="extra agent flag, written --agent-flag=--no-recover (repeatable)")
    parser.add_argument("--compare-recovery", action="store_true", help="run with and without --no-recover")
    parser.add_argument("--out", type=Path, help="folder for workspaces and logs (default: new temp folder)")
    args = parser.parse_args(argv)
    args.api_key = env.get("OPENAI_API_KEY") or "local"
    if args.out and args.out.exists() and any(args.out.iterdir()):
        parser.error(f"--out {args.out} is not empty")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    request = urllib.request.Request(args.base_url.rstrip("/") + "/models",
                                     headers={"Authorization": f"Bearer {args.api_key}"})
    try:  # one cheap request first, so a missing server is one line, not ten failed tasks
        with urllib.request.urlopen(request, timeout=10) as response:
            listed = [m.get("id") for m in json.load(response).get("data", [])]
    except (OSError, ValueError, AttributeError) as error:
        log.print(Text(f"error: no model server answers GET {args.base_url}/models ({error}); "
                       "start one with scripts/serve.py or pass --base-url", style="bold red"))
        return 1
    args.model = args.model or (listed[0] if listed else "default")
    args.out = (args.out or Path(tempfile.mkdtemp(prefix="tooloop-suite-"))).resolve()
    if not sandbox.available():
        log.print("warning: no bubblewrap sandbox here: checks run the model's code unconfined", style="yellow")
    modes = {"run": args.agent_flag}
    if args.compare_recovery:
        modes = {"recovery": args.agent_flag, "no-recover": [*args.agent_flag, "--no-recover"]}
    header = f"{datetime.now():%Y-%m-%d %H:%M} · {args.model} at {args.base_url} · max {args.max_turns} turns"
    results = {mode: run_suite(mode, args.only or task_names(), args, flags) for mode, flags in modes.items()}
    console.print(Text(header))
    for mode, rows in results.items():
        console.print(table("" if mode == "run" else mode, rows))
    if args.compare_recovery:
        console.print("solve rate: " + " · ".join(f"{mode} {rate(rows)}" for mode, rows in results.items()))
    log.print(f"workspaces, answers, logs and transcripts: {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
