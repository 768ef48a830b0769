#!/usr/bin/env python3
"""Run the agent on the public task suite (tasks/) against a live server and print one table.

    python scripts/suite.py                          # every task, server from OPENAI_BASE_URL
    python scripts/suite.py --split dev --label base --out runs/   # the dev tasks, into runs/base/
    python scripts/suite.py --only fix-bug --max-turns 10
    python scripts/suite.py --agent-flag=--plain --label plain --out runs/   # the aids off: their ablation
    python scripts/suite.py --checks --label checks --out runs/   # each task's own check decides when it is done
    python scripts/suite.py --report runs/           # one Markdown row per label; no server needed

For each task: copy tasks/NAME/files/ into a fresh workspace, run `python agent.py` there on
the prompt in tasks/NAME/task.md (a subprocess, with a wall-clock timeout), then run
tasks/NAME/check.py on the workspace and the agent's final answer: it exits 0 only if the task
is solved. The check runs code the model wrote, so it runs in the same bubblewrap sandbox as
the agent's shell when one is available. Turns and tokens come from the last line of the
agent's JSONL transcript (`--transcript`); "?" when there is none (a run killed at the
timeout). Each run's workspace, answer, screen log, transcript and check verdict stay in
OUT/LABEL/TASK/ for a post-mortem, with result.json: the verdict, the counts, the agent flags
and the git commit, written last and atomically. So a suite can run unattended (nohup, progress
on stderr) and be resumed with the same --out and --label: a task with a result.json is not run
again, a task folder without one (an interrupted run) is cleared and run again.

tasks/split.json splits the tasks into `dev`, to tune on, and `holdout`, run only to report
(tasks/README.md). --split picks one; --only picks tasks by name whatever their split.

--checks gives the agent, for each task that has a tasks/NAME/task.json, the task's `check`
command (`--check`, the command a user would pass: the one the prompt names, made strict where
the prompt gives the expected output) and its `files` (`--file`, the files the prompt names for
changing: not the tests, nor the data). Tasks without one run as they would without --checks.

Exit codes: 0 the suite ran (whatever the solve rate) or the report was printed, 1 the server is
unreachable, 2 usage. Left out on purpose: running tasks in parallel (a small local server does
one request well at a time), retries, and any score finer than solved / not solved.
"""

import argparse
import collections
import contextlib
import json
import os
import shlex
import shutil
import subprocess
import statistics
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
import recover  # noqa: E402
import sandbox  # noqa: E402

CHECK_TIMEOUT = 120  # seconds; a check runs a few small scripts
SPLITS = ("dev", "holdout")
console = Console(highlight=False, width=None if sys.stdout.isatty() else 120)  # tables, on stdout
log = Console(stderr=True, highlight=False, soft_wrap=True)  # progress, on stderr (rich flushes each print)


def task_names() -> list[str]:
    return sorted(p.name for p in TASKS.iterdir() if (p / "task.md").is_file())


def splits() -> dict[str, str]:
    """Each task's split from tasks/split.json: {"fix-bug": "dev", ...}."""
    lists = json.loads((TASKS / "split.json").read_text())
    return {name: split for split in SPLITS for name in lists[split]}


def chosen(args) -> list[str]:
    """The tasks to run: --only's names, else every task in --split (all: every task)."""
    if args.only:
        return args.only
    of = splits()
    return [name for name in task_names() if args.split == "all" or of.get(name) == args.split]


def commit() -> str:
    """The code that runs: `git rev-parse --short HEAD`, plus "+dirty" when tracked files differ from it."""
    def git(*words: str) -> str:
        return subprocess.run(["git", *words], cwd=ROOT, capture_output=True, text=True, timeout=30).stdout.strip()
    try:
        head = git("rev-parse", "--short", "HEAD")
        return (head or "unknown") + ("+dirty" if git("status", "--porcelain", "--untracked-files=no") else "")
    except OSError:
        return "unknown"


def run_task(name: str, args, flags: list[str], run_dir: Path) -> dict:
    """One task in a fresh workspace: the agent, then the check. Returns its result (result.json)."""
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
               "--transcript", str(transcript), *flags, *checked(name, args), "--", (task / "task.md").read_text().strip()]
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
    return {"task": name, "split": splits().get(name, "none"), "label": args.label, "solved": solved, "why": why,
            "exit": code, "seconds": round(seconds, 1), **totals(transcript), "model": args.model,
            "max_turns": args.max_turns, "timeout": args.timeout, "agent_flags": flags + checked(name, args), "commit": args.commit,
            "timestamp": datetime.now().astimezone().isoformat(timespec="seconds")}


def checked(name: str, args) -> list[str]:
    """The agent flags for the task's own check and files (tasks/NAME/task.json), with --checks."""
    spec = load(TASKS / name / "task.json") if args.checks else None
    if not spec:
        return []
    return ["--check", spec["check"], *[word for path in spec.get("files", []) for word in ("--file", path)]]


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
    """The agent's own counts from the transcript's last line: turns and tokens, None when unknown."""
    try:
        end = json.loads(transcript.read_text().splitlines()[-1])
        numbers = end["totals"] if end.get("event") == "end" else {}
        return {"turns": numbers["turns"],
                "tokens": {"prompt": numbers["prompt_tokens"], "cached": numbers["cached_tokens"],
                           "processed": numbers["prompt_tokens"] - numbers["cached_tokens"],
                           "completion": numbers["completion_tokens"]}}
    except (OSError, IndexError, ValueError, KeyError, TypeError, AttributeError):
        return {"turns": None, "tokens": None}


def save(path: Path, result: dict) -> None:
    """Write result.json atomically: a run killed mid-write leaves no half file to resume from."""
    temporary = path.with_name(path.name + ".tmp")
    temporary.write_text(json.dumps(result, indent=2) + "\n")
    os.replace(temporary, path)


def load(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def counts(r: dict) -> dict:
    """The numbers of one row of the table, by column header; None when unknown."""
    tokens = r.get("tokens") or {}
    return {"turns": r.get("turns"), "seconds": r.get("seconds"), "prompt": tokens.get("processed"),
            "cached": tokens.get("cached"), "generated": tokens.get("completion")}


def rate(rows: list[dict]) -> str:
    solved = sum(r["solved"] for r in rows)
    return f"{solved}/{len(rows)} ({100 * solved / max(len(rows), 1):.0f}%)"


def total(rows: list[dict], header: str) -> str:
    values = [counts(r)[header] for r in rows]
    return "?" if None in values else f"{sum(values):.0f}"


def table(title: str, rows: list[dict]) -> Table:
    t = Table(title=title, title_justify="left", caption_justify="left",
              caption="seconds: wall clock; prompt: prompt tokens processed (not from the cache)")
    t.add_column("task")
    headers = list(counts({}))
    for header in ("solved", "exit", *headers):
        t.add_column(header, justify="right")
    for r in rows:
        cells = ["?" if v is None else f"{v:.0f}" for v in counts(r).values()]
        t.add_row(r["task"], "yes" if r["solved"] else "no", str(r["exit"]), *cells)
    t.add_section()
    t.add_row("total", rate(rows), "", *(total(rows, h) for h in headers))
    return t


def run_suite(label: str, names: list[str], args, flags: list[str]) -> list[dict]:
    """Run the tasks into OUT/LABEL/TASK/, skipping those that already have a result.json."""
    results = []
    for i, name in enumerate(names, 1):
        run_dir = args.out / label / name
        progress = Text(f"{datetime.now():%H:%M} [{label} {i}/{len(names)}] {name} …")
        done = load(run_dir / "result.json")
        if done is not None:
            log.print(progress.append(f" {'solved' if done['solved'] else 'not solved'} earlier (result.json kept)"))
            if done.get("agent_flags") != flags + checked(name, args):
                log.print(Text(f"warning: {name} ran with agent flags {done.get('agent_flags')}, "
                               f"not {flags + checked(name, args)}"),
                          style="yellow")
            results.append(done)
            continue
        shutil.rmtree(run_dir, ignore_errors=True)  # an interrupted run: start it over
        run_dir.mkdir(parents=True)
        log.print(progress, end=" ")
        result = run_task(name, args, flags, run_dir)
        save(run_dir / "result.json", result)
        verdict = "solved" if result["solved"] else f"not solved ({result['why']})"
        log.print(Text(f"{verdict} · exit {result['exit']} · {result['seconds']:.0f} s"))
        results.append(result)
    return results


def by_split(results: list[dict]) -> str:
    """'dev 12/20 · holdout 5/14': the solve rate of each split among these results."""
    parts = []
    for split in SPLITS:
        rows = [r for r in results if r.get("split") == split]
        if rows:
            parts.append(f"{split} {sum(r['solved'] for r in rows)}/{len(rows)}")
    return " · ".join(parts)


def report(folder: Path) -> str:
    """A Markdown table of every OUT/LABEL/TASK/result.json under folder: one row per label.

    A cell reads solved/ran, plus "of N" when fewer than the split's N tasks have a result (a
    run still going, or one that ran --only some tasks); "with a check" counts only the tasks that
    have a tasks/NAME/task.json, so runs with and without --checks compare on the same tasks.
    """
    labels: dict[str, list[dict]] = {}
    for path in sorted(folder.glob("*/*/result.json")):
        result = load(path)
        if result is not None:
            result["events"] = events(path.parent / "transcript.jsonl")
            result["generation"] = generation(result["events"])
            result["check_round"] = check_round(result["events"])
            labels.setdefault(path.parent.parent.name, []).append(result)
    size = {split: sum(1 for s in splits().values() if s == split) for split in SPLITS}
    has_check = {name for name in task_names() if (TASKS / name / "task.json").is_file()}
    lines = ["| label | " + " | ".join(f"{split} | {split} with a check" for split in SPLITS) + " | commit |",
             "| --- | " + "--- | " * 2 * len(SPLITS) + "--- |"]
    for label, results in sorted(labels.items()):
        cells = []
        for split in SPLITS:
            rows = [r for r in results if r.get("split") == split]
            checked_rows = [r for r in rows if r["task"] in has_check]
            cells.append(f"{sum(r['solved'] for r in rows)}/{len(rows)}"
                         + (f" of {size[split]}" if len(rows) < size[split] else ""))
            cells.append(f"{sum(r['solved'] for r in checked_rows)}/{len(checked_rows)}")
        commits = ", ".join(sorted({str(r.get("commit", "unknown")) for r in results}))
        lines.append(f"| {label} | " + " | ".join(cells) + f" | {commits} |")
    lines += ["", "| label | seconds per turn | generated tokens per task | generated tokens/s | "
                  "median seconds per task | median seconds per solved task | timeouts |",
              "| --- | --- | --- | --- | --- | --- | --- |"]
    for label, results in sorted(labels.items()):
        lines.append(f"| {label} | " + " | ".join(speed(results)) + " |")
    checked = {label: rounds for label, results in sorted(labels.items())
               if (rounds := [r["check_round"] for r in results if r.get("check_round") is not None])}
    if checked:  # which round's check passed first: what --check-rounds buys (a higher cap holds the lower ones)
        most = max(max(rounds) for rounds in checked.values()) or 1  # (a round-1 column even if none passed)
        lines += ["", "| label | tasks checked | " + " | ".join(f"passed at round {n}" for n in range(1, most + 1))
                  + " | never passed |", "| --- | --- | " + "--- | " * most + "--- |"]
        for label, rounds in checked.items():
            lines.append(f"| {label} | {len(rounds)} | " + " | ".join(str(rounds.count(n)) for n in range(1, most + 1))
                         + f" | {rounds.count(0)} |")
    fired = {label: rules_fired(results) for label, results in sorted(labels.items())}
    if any(fired.values()):  # which of recover's rules read the calls: a rule that never fires is a candidate to delete
        lines += ["", "| rule | " + " | ".join(fired) + " |", "|" + " --- |" * (1 + len(fired))]
        lines += [f"| {name} | " + " | ".join(str(counts[name]) for counts in fired.values()) + " |"
                  for name, _ in recover.RULES]
    return "\n".join(lines)


def rules_fired(results: list[dict]) -> collections.Counter:
    """How often each of recover.RULES read a call, over the transcripts of a label's runs (the
    `rules` of its `recovered` notes; a transcript from before the rules were named has none)."""
    names = {name for name, _ in recover.RULES}
    return collections.Counter(rule for result in results for event in result["events"]
                               if event.get("event") == "note" and event.get("kind") == "recovered"
                               for rule in event.get("rules") or [] if rule in names)


def check_round(transcript: list[dict]) -> int | None:
    """The round (1 = the first final answer) at which the run's check first passed; 0 if no
    check passed; None if the run had no check (no `check` event in its transcript)."""
    checks = [event for event in transcript if event.get("event") == "check"]
    return next((n for n, event in enumerate(checks, 1) if event.get("passed")), 0) if checks else None


def events(transcript: Path) -> list[dict]:
    """The events of a JSONL transcript that parse as JSON objects ([] if there is none)."""
    try:
        lines = transcript.read_text().splitlines()
    except OSError:
        return []
    found = []
    for line in lines:
        with contextlib.suppress(ValueError):
            if isinstance(event := json.loads(line), dict):
                found.append(event)
    return found


def generation(transcript: list[dict]) -> tuple[int, float]:
    """Tokens generated and seconds spent generating them, from the server's `timings` in the
    transcript's replies (llama-server sends them; (0, 0.0) when there are none)."""
    made, seconds = 0, 0.0
    for event in transcript:
        try:
            timings = event["body"].get("timings") or {}
            made, seconds = made + timings["predicted_n"], seconds + timings["predicted_ms"] / 1000
        except (ValueError, KeyError, TypeError, AttributeError):
            continue
    return made, seconds


def speed(results: list[dict]) -> list[str]:
    """Where the time went, over all of a label's tasks: seconds per model turn and generated
    tokens per task (from the runs that ended on their own: a run killed at the timeout has no
    transcript end), the generation speed the server reported over every reply, the median wall
    time of a task and of a solved task, and how many hit the timeout."""
    ended = [r for r in results if isinstance(r.get("turns"), int) and r["turns"] > 0 and "seconds" in r]
    tokens = [r["tokens"]["completion"] for r in ended if isinstance(r.get("tokens"), dict)]
    wall = [r["seconds"] for r in results if "seconds" in r]
    solved = [r["seconds"] for r in results if r.get("solved") and "seconds" in r]
    made = sum(r.get("generation", (0, 0.0))[0] for r in results)
    seconds = sum(r.get("generation", (0, 0.0))[1] for r in results)
    return [f"{sum(r['seconds'] for r in ended) / sum(r['turns'] for r in ended):.1f}" if ended else "?",
            f"{statistics.mean(tokens):.0f}" if tokens else "?",
            f"{made / seconds:.1f}" if seconds else "?",
            f"{statistics.median(wall):.0f}" if wall else "?",
            f"{statistics.median(solved):.0f}" if solved else "?",
            str(sum(r.get("exit") == "timeout" for r in results))]


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    env = {**dotenv_values(ROOT / ".env"), **os.environ}  # flags > environment > .env > defaults
    parser = argparse.ArgumentParser(description="Run the agent on the public task suite and print a table.",
                                     epilog="exit codes: 0 the suite ran or the report was printed, 1 server unreachable, "
                                            "2 usage error")
    parser.add_argument("--base-url", default=env.get("OPENAI_BASE_URL") or "http://localhost:8000/v1")
    parser.add_argument("--model", default=env.get("MODEL"), help="default: the first model the server lists")
    parser.add_argument("--max-turns", type=int, default=15, help="passed to the agent (default 15)")
    parser.add_argument("--timeout", type=float, default=480, help="wall-clock seconds per task (default 480)")
    parser.add_argument("--split", choices=("dev", "holdout", "all"), default="all",
                        help="the tasks of this list in tasks/split.json (default all)")
    parser.add_argument("--only", action="append", choices=task_names(), metavar="TASK",
                        help="run only this task, whatever its split (repeatable)")
    parser.add_argument("--agent-flag", action="append", default=[], metavar="FLAG",
                        help="extra agent flag, written --agent-flag=--plain (repeatable)")
    parser.add_argument("--label", default="run", help="name of this run: results go to OUT/LABEL/ (default run)")
    parser.add_argument("--out", type=Path, help="folder for results, workspaces and logs; an existing one "
                                                 "resumes (default: new temp folder)")
    parser.add_argument("--checks", action="store_true",
                        help="pass each task's check and files (tasks/NAME/task.json) as --check and --file")
    parser.add_argument("--report", type=Path, metavar="DIR",
                        help="print the solve rates of every label under DIR as Markdown, and stop")
    args = parser.parse_args(argv)
    args.api_key = env.get("OPENAI_API_KEY") or "local"
    if args.report and not args.report.is_dir():
        parser.error(f"--report {args.report} is not a folder")
    if "/" in args.label or args.label in ("", ".", ".."):
        parser.error(f"--label {args.label!r} must be a plain folder name")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.report:
        console.print(Text(report(args.report)), soft_wrap=True)
        return 0
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
    args.commit = commit()
    if not sandbox.available():
        log.print("warning: no bubblewrap sandbox here: checks run the model's code unconfined", style="yellow")
    header = (f"{datetime.now():%Y-%m-%d %H:%M} · {args.model} at {args.base_url} · max {args.max_turns} turns"
              f" · {args.label} · commit {args.commit}")
    results = run_suite(args.label, chosen(args), args, args.agent_flag)
    console.print(Text(header))
    console.print(table("" if args.label == "run" else args.label, results))
    console.print(Text(f"solve rate by split: {by_split(results)}"))
    log.print(f"results, workspaces, answers, logs and transcripts: {args.out / args.label}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
