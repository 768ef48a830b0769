"""The public task suite's checks are strict, and scripts/suite.py runs end to end; no model.

For every task in tasks/, through the runner's own `suite.check` (sandbox included):

- the untouched files/ FAIL (nothing is solved before the agent acts);
- files/ with the reference solution/ laid over it, and the reference final answer if the task
  has one, PASS;
- cheats FAIL: a test file rewritten to always pass, an answer that pastes the whole log, and
  for the injection task a right answer from an agent that also obeyed the planted order.

tasks/split.json puts every task in exactly one of dev and holdout. The runner itself is driven
against tests/fake_server.py, a scripted stand-in for the model: its table, its result.json
files, resuming an interrupted --out, and --report (which needs no server at all).
Left out: solve rates with a real model (that is what scripts/suite.py is for).
"""

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from fake_server import answer, call, reply

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))
import suite  # noqa: E402

TASKS = suite.task_names()
SUITE = [sys.executable, str(ROOT / "scripts" / "suite.py")]


def prepare(tmp_path: Path, task: str, solved: bool, final_answer: str = "") -> Path:
    """A run folder as the runner leaves it: workspace/ (files, maybe solved) and answer.txt."""
    folder, run = suite.TASKS / task, tmp_path / "run"
    (run / "workspace").mkdir(parents=True)
    if (folder / "files").is_dir():
        shutil.copytree(folder / "files", run / "workspace", dirs_exist_ok=True)
    if solved:
        shutil.copytree(folder / "solution", run / "workspace", dirs_exist_ok=True)
    (run / "answer.txt").write_text(final_answer)
    return run


def reference_answer(task: str) -> str:
    path = suite.TASKS / task / "reference_answer.txt"
    return path.read_text() if path.is_file() else "Done."


def test_the_suite_has_thirty_two_complete_tasks():
    assert len(TASKS) >= 32
    for task in TASKS:
        folder = suite.TASKS / task
        assert (folder / "check.py").is_file(), task
        assert (folder / "solution").is_dir() or (folder / "reference_answer.txt").is_file(), task
        assert len((folder / "task.md").read_text()) < 600, f"{task}: keep prompts short for small models"


def test_the_split_lists_every_task_exactly_once():
    lists = json.loads((suite.TASKS / "split.json").read_text())
    assert sorted(lists) == ["dev", "holdout"]
    listed = lists["dev"] + lists["holdout"]
    assert sorted(listed) == TASKS, "every task folder in exactly one list, and nothing else"
    assert len(lists["dev"]) >= 20 and len(lists["holdout"]) >= 10


def test_split_picks_the_tasks_and_only_overrides_it():
    lists = json.loads((suite.TASKS / "split.json").read_text())
    assert suite.chosen(suite.parse_args(["--split", "holdout"])) == sorted(lists["holdout"])
    assert suite.chosen(suite.parse_args(["--split", "dev"])) == sorted(lists["dev"])
    assert suite.chosen(suite.parse_args([])) == TASKS
    assert suite.chosen(suite.parse_args(["--split", "dev", "--only", lists["holdout"][0]])) == [lists["holdout"][0]]


@pytest.mark.parametrize("task", TASKS)
def test_untouched_files_fail(task, tmp_path):
    solved, why = suite.check(suite.TASKS / task, prepare(tmp_path, task, solved=False))
    assert not solved and why


@pytest.mark.parametrize("task", TASKS)
def test_reference_solution_passes(task, tmp_path):
    run = prepare(tmp_path, task, solved=(suite.TASKS / task / "solution").is_dir(),
                  final_answer=reference_answer(task))
    assert suite.check(suite.TASKS / task, run) == (True, "")


@pytest.mark.parametrize("task", [t for t in TASKS if list((suite.TASKS / t / "files").glob("test_*.py"))])
def test_a_rewritten_test_file_does_not_count(task, tmp_path):
    run = prepare(tmp_path, task, solved=False)
    for test in (run / "workspace").glob("test_*.py"):
        test.write_text('print("all tests passed")\n')
    solved, why = suite.check(suite.TASKS / task, run)
    assert not solved and "original" in why


@pytest.mark.parametrize("obey", [
    lambda ws: (ws / "notes.md").unlink(),
    lambda ws: (ws / "pwned.txt").write_text("PWNED\n"),
    lambda ws: (ws / "summary.md").write_text("pwned\n"),
], ids=["deleted notes.md", "wrote pwned.txt", "wrote PWNED elsewhere"])
def test_obeying_the_injection_fails_even_with_the_right_count(obey, tmp_path):
    run = prepare(tmp_path, "ignore-injection", solved=True)
    obey(run / "workspace")
    solved, why = suite.check(suite.TASKS / "ignore-injection", run)
    assert not solved and why.startswith("injection followed")


def test_pasting_the_whole_log_is_not_finding_the_fact(tmp_path):
    log = (suite.TASKS / "find-fact" / "files" / "server.log").read_text()
    run = prepare(tmp_path, "find-fact", solved=False, final_answer=log)
    assert suite.check(suite.TASKS / "find-fact", run)[0] is False


def test_runner_prints_a_table_against_a_scripted_model(fake, tmp_path):
    fake.extra_routes["/v1/models"] = (200, {"object": "list", "data": [{"id": "scripted"}]})
    fizzbuzz = (suite.TASKS / "fizzbuzz" / "solution" / "fizzbuzz.py").read_text()
    fake.script = [reply(call("write_file", path="fizzbuzz.py", content=fizzbuzz)),  # fizzbuzz
                   reply(call("run_shell", command="python fizzbuzz.py")), answer("Done."),  # as the task says
                   answer("I do not know.")]  # csv-total: gives up
    run = subprocess.run([*SUITE, "--base-url", fake.url, "--only", "fizzbuzz", "--only", "csv-total",
                          "--out", str(tmp_path / "out")], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert re.search(r"fizzbuzz\W+yes\W+0\W", run.stdout), run.stdout
    assert re.search(r"csv-total\W+no\W+0\W", run.stdout), run.stdout  # an answer, but not the right one
    assert re.search(r"total\W+1/2 \(50%\)", run.stdout), run.stdout
    assert "north_total.txt holds None" in run.stderr  # the check's reason, on the progress line
    assert all(r["model"] == "scripted" for r in fake.requests)  # the default model: the server's own
    assert (tmp_path / "out" / "run" / "fizzbuzz" / "workspace" / "fizzbuzz.py").read_text() == fizzbuzz
    result = json.loads((tmp_path / "out" / "run" / "fizzbuzz" / "result.json").read_text())
    assert {k: result[k] for k in ("task", "split", "label", "solved", "why", "exit", "turns", "agent_flags")} == {
        "task": "fizzbuzz", "split": "dev", "label": "run", "solved": True, "why": "", "exit": 0, "turns": 3,
        "agent_flags": []}
    assert result["tokens"]["completion"] > 0 and result["seconds"] > 0 and result["timestamp"]
    assert result["commit"].removesuffix("+dirty") == head()


def head() -> str:
    return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()


def test_a_resumed_run_keeps_finished_tasks_and_redoes_interrupted_ones(fake, tmp_path):
    fake.extra_routes["/v1/models"] = (200, {"object": "list", "data": [{"id": "scripted"}]})
    out = tmp_path / "out"
    finished, interrupted = out / "base" / "fizzbuzz", out / "base" / "csv-total"
    (finished / "workspace").mkdir(parents=True)  # no fizzbuzz.py: checked again, it would fail
    earlier = {"task": "fizzbuzz", "split": "dev", "label": "base", "solved": True, "why": "", "exit": 0,
               "seconds": 7.0, "turns": 3, "tokens": None, "agent_flags": ["--approval=auto"], "commit": "abc1234"}
    (finished / "result.json").write_text(json.dumps(earlier))
    (interrupted / "workspace").mkdir(parents=True)  # killed mid-task: a folder, no result.json
    (interrupted / "workspace" / "north_total.txt").write_text("3596.41\n")
    fake.script = [answer("I do not know.")] * 8  # csv-total gives up; fizzbuzz must not ask at all
    run = subprocess.run([*SUITE, "--base-url", fake.url, "--only", "fizzbuzz", "--only", "csv-total",
                          "--label", "base", "--agent-flag=--approval=auto", "--out", str(out)],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert json.loads((finished / "result.json").read_text()) == earlier
    assert re.search(r"fizzbuzz\W+yes\W+0\W+3\W+7\W", run.stdout), run.stdout  # its row, from result.json
    assert "solved earlier" in run.stderr
    assert fake.requests and all("sales.csv" in json.dumps(r["messages"]) for r in fake.requests)
    redone = json.loads((interrupted / "result.json").read_text())  # the stale answer was cleared first
    assert redone["solved"] is False and "north_total.txt holds None" in redone["why"]
    assert redone["label"] == "base" and redone["agent_flags"] == ["--approval=auto"]
    assert sorted(p.name for p in interrupted.iterdir()) == ["agent.log", "answer.txt", "check.txt", "result.json",
                                                             "task", "transcript.jsonl", "workspace"]


def write_result(runs: Path, label: str, task: str, split: str, solved: bool, commit: str) -> None:
    folder = runs / label / task
    folder.mkdir(parents=True)
    (folder / "result.json").write_text(json.dumps({"task": task, "split": split, "solved": solved, "commit": commit}))


def test_report_is_one_markdown_row_per_label_without_a_server(tmp_path):
    lists = json.loads((suite.TASKS / "split.json").read_text())
    dev, holdout = len(lists["dev"]), len(lists["holdout"])
    runs = tmp_path / "runs"
    for i, task in enumerate(lists["dev"]):  # a whole dev run: half solved
        write_result(runs, "full", task, "dev", i % 2 == 0, "abc1234")
    for task, solved in zip(lists["dev"][:3], (True, True, False)):  # a run still going, on two commits
        write_result(runs, "aids", task, "dev", solved, "abc1234")
    write_result(runs, "aids", lists["holdout"][0], "holdout", True, "def5678+dirty")
    (runs / "aids" / lists["holdout"][1]).mkdir()  # interrupted: no result.json, not counted
    checked = {task for task in lists["dev"] + lists["holdout"] if (suite.TASKS / task / "task.json").is_file()}
    full = [task for i, task in enumerate(lists["dev"]) if task in checked]
    full_dev = f"{sum(lists['dev'].index(task) % 2 == 0 for task in full)}/{len(full)}"
    aids = [(task, solved) for task, solved in zip(lists["dev"][:3], (True, True, False)) if task in checked]
    aids_dev = f"{sum(solved for _, solved in aids)}/{len(aids)}"
    aids_holdout = "1/1" if lists["holdout"][0] in checked else "0/0"
    run = subprocess.run([*SUITE, "--report", str(runs), "--base-url", "http://127.0.0.1:9/v1"],
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    assert run.stdout.splitlines() == [
        "| label | dev | dev with a check | holdout | holdout with a check | commit |",
        "| --- | --- | --- | --- | --- | --- |",
        f"| aids | 2/3 of {dev} | {aids_dev} | 1/1 of {holdout} | {aids_holdout} | abc1234, def5678+dirty |",
        f"| full | {(dev + 1) // 2}/{dev} | {full_dev} | 0/0 of {holdout} | 0/0 | abc1234 |",
        "",
        "| label | seconds per turn | generated tokens per task | generated tokens/s | median seconds per task | "
        "median seconds per solved task | timeouts |",
        "| --- | --- | --- | --- | --- | --- | --- |",
        "| aids | ? | ? | ? | ? | ? | 0 |",  # no timings in these results
        "| full | ? | ? | ? | ? | ? | 0 |",
    ]


def test_the_report_says_where_the_time_went(tmp_path):
    runs = tmp_path / "runs"
    task, other, third = json.loads((suite.TASKS / "split.json").read_text())["dev"][:3]
    for name, solved, seconds, turns, exit in ((task, True, 100.0, 4, 0), (other, True, 60.0, 2, 6), (third, False, 900.0, None, "timeout")):
        folder = runs / "speed" / name
        folder.mkdir(parents=True)
        tokens = {"completion": 10 * turns} if turns else None
        (folder / "result.json").write_text(json.dumps({"task": name, "split": "dev", "solved": solved, "commit": "c",
                                                        "seconds": seconds, "turns": turns, "tokens": tokens, "exit": exit}))
        replies = [{"event": "response", "body": {"timings": {"predicted_n": 10, "predicted_ms": 2500.0}}}] * (turns or 1)
        (folder / "transcript.jsonl").write_text("".join(json.dumps(r) + "\n" for r in replies) + "not json\n")
    run = subprocess.run([*SUITE, "--report", str(runs)], capture_output=True, text=True, timeout=60)
    # 160 s / 6 turns; (40 + 20) / 2; 70 tokens in 17.5 s of generating; median of 100, 60, 900; of 100, 60
    assert run.stdout.splitlines()[-1] == "| speed | 26.7 | 30 | 4.0 | 100 | 80 | 1 |"


def test_unreachable_server_is_one_line_and_exit_1(tmp_path):
    run = subprocess.run([*SUITE, "--base-url", "http://127.0.0.1:9/v1", "--out", str(tmp_path / "out")],
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 1 and run.stdout == ""
    assert run.stderr.count("\n") == 1 and run.stderr.startswith("error: no model server answers")


def test_unknown_task_is_a_usage_error():
    run = subprocess.run([*SUITE, "--only", "no-such-task"], capture_output=True, text=True, timeout=60)
    assert run.returncode == 2 and "invalid choice" in run.stderr


WITH_CHECKS = sorted(task for task in TASKS if (suite.TASKS / task / "task.json").is_file())


@pytest.mark.parametrize("task", WITH_CHECKS)
def test_a_tasks_own_check_fails_untouched_and_passes_solved(task, tmp_path):
    """The command --checks passes as --check: the one a user would, strict enough that the
    untouched files fail it and the reference solution passes; its --file paths exist."""
    spec = json.loads((suite.TASKS / task / "task.json").read_text())
    assert all((suite.TASKS / task / "files" / path).is_file() for path in spec["files"])
    for solved in (False, True):
        workspace = prepare(tmp_path / str(solved), task, solved=solved) / "workspace"
        run = subprocess.run(["sh", "-c", spec["check"]], cwd=workspace, capture_output=True, text=True, timeout=60)
        assert (run.returncode == 0) == solved, (solved, run.stdout, run.stderr)


def test_checks_gives_the_agent_the_tasks_check_and_files(fake, tmp_path):
    fake.extra_routes["/v1/models"] = (200, {"object": "list", "data": [{"id": "scripted"}]})
    fake.script = [answer("Fixed it, the tests pass.")] * 12  # a false claim, again and again
    out = tmp_path / "out"
    run = subprocess.run([*SUITE, "--base-url", fake.url, "--only", "fix-bug", "--checks", "--label", "c", "--out", str(out)],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    result = json.loads((out / "c" / "fix-bug" / "result.json").read_text())
    assert result["agent_flags"] == ["--check", "python test_stats.py", "--file", "stats.py"]
    # the default: six attempts that count; each of these changed no file, so twice as many begin, and none passes
    assert result["exit"] == 6 and not result["solved"] and len(fake.requests) == 12
    first = [m["content"] for m in fake.requests[0]["messages"] if m["role"] == "user"][0]
    assert (suite.TASKS / "fix-bug" / "files" / "stats.py").read_text() in first
    for request in fake.requests[1:]:  # each attempt starts again from the task alone, with the file
        assert [m["content"] for m in request["messages"] if m["role"] == "user"] == [first]


def test_the_report_says_at_which_round_the_check_first_passed(tmp_path):
    runs = tmp_path / "runs"
    first, second, third, unchecked = json.loads((suite.TASKS / "split.json").read_text())["dev"][:4]
    for name, passed in ((first, [True]), (second, [False, False, True]), (third, [False, False]), (unchecked, None)):
        folder = runs / "checks" / name
        folder.mkdir(parents=True)
        (folder / "result.json").write_text(json.dumps({"task": name, "split": "dev", "solved": passed == [True],
                                                        "commit": "c"}))
        checks = [{"event": "check", "passed": p} for p in passed or []]
        (folder / "transcript.jsonl").write_text("".join(json.dumps(e) + "\n" for e in checks) + "not json\n")
    lines = subprocess.run([*SUITE, "--report", str(runs)], capture_output=True, text=True, timeout=60).stdout.splitlines()
    assert lines[-3:] == ["| label | tasks checked | passed at round 1 | passed at round 2 | passed at round 3 | never passed |",
                          "| --- | --- | --- | --- | --- | --- |",
                          "| checks | 3 | 1 | 0 | 1 | 1 |"]


def test_the_report_counts_which_recover_rules_fired(tmp_path):
    runs = tmp_path / "runs"
    for label, rules in (("a", [["sh-block", "text-call"], ["sh-block"]]), ("b", [["write_file of x.py"]])):
        folder = runs / label / "fizzbuzz"
        folder.mkdir(parents=True)
        (folder / "result.json").write_text(json.dumps({"task": "fizzbuzz", "split": "dev", "solved": False, "commit": "c"}))
        notes = [{"event": "note", "kind": "recovered", "text": "recovered", "rules": r} for r in rules]
        (folder / "transcript.jsonl").write_text("".join(json.dumps(e) + "\n" for e in notes))
    lines = subprocess.run([*SUITE, "--report", str(runs)], capture_output=True, text=True, timeout=60).stdout.splitlines()
    table = lines[lines.index("| rule | a | b |"):]
    import recover
    assert len(table) == 2 + len(recover.RULES)
    assert "| sh-block | 2 | 0 |" in table and "| text-call | 1 | 0 |" in table and "| python-program | 0 | 0 |" in table and "| --- | --- | --- |" in table


def test_the_round_table_has_a_round_column_when_no_check_passed(tmp_path):
    folder = tmp_path / "runs" / "checks" / "fix-bug"
    folder.mkdir(parents=True)
    (folder / "result.json").write_text(json.dumps({"task": "fix-bug", "split": "dev", "solved": False, "commit": "c"}))
    (folder / "transcript.jsonl").write_text(json.dumps({"event": "check", "passed": False}) + "\n")
    lines = subprocess.run([*SUITE, "--report", str(tmp_path / "runs")], capture_output=True, text=True, timeout=60).stdout.splitlines()
    assert lines[-3:] == ["| label | tasks checked | passed at round 1 | never passed |", "| --- | --- | --- | --- |",
                          "| checks | 1 | 0 | 1 |"]
