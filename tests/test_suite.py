"""The public task suite's checks are strict, and scripts/suite.py runs end to end; no model.

For every task in tasks/, through the runner's own `suite.check` (sandbox included):

- the untouched files/ FAIL (nothing is solved before the agent acts);
- files/ with the reference solution/ laid over it, and the reference final answer if the task
  has one, PASS;
- cheats FAIL: a test file rewritten to always pass, an answer that pastes the whole log, and
  for the injection task a right answer from an agent that also obeyed the planted order.

The runner itself is driven against tests/fake_server.py, a scripted stand-in for the model.
Left out: solve rates with a real model (that is what scripts/suite.py is for).
"""

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


def test_the_suite_has_ten_complete_tasks():
    assert len(TASKS) >= 10
    for task in TASKS:
        folder = suite.TASKS / task
        assert (folder / "check.py").is_file(), task
        assert (folder / "solution").is_dir() or (folder / "reference_answer.txt").is_file(), task
        assert len((folder / "task.md").read_text()) < 600, f"{task}: keep prompts short for small models"


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
                   *[answer("I do not know.")] * 5]  # csv-total: gives up (nudged up to the cap of 4)
    run = subprocess.run([*SUITE, "--base-url", fake.url, "--only", "fizzbuzz", "--only", "csv-total",
                          "--out", str(tmp_path / "out")], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert re.search(r"fizzbuzz\W+yes\W+0\W", run.stdout), run.stdout
    assert re.search(r"csv-total\W+no\W+0\W", run.stdout), run.stdout
    assert re.search(r"total\W+1/2 \(50%\)", run.stdout), run.stdout
    assert "north_total.txt holds None" in run.stderr  # the check's reason, on the progress line
    assert all(r["model"] == "scripted" for r in fake.requests)  # the default model: the server's own
    assert (tmp_path / "out" / "run" / "fizzbuzz" / "workspace" / "fizzbuzz.py").read_text() == fizzbuzz


def test_unreachable_server_is_one_line_and_exit_1(tmp_path):
    run = subprocess.run([*SUITE, "--base-url", "http://127.0.0.1:9/v1", "--out", str(tmp_path / "out")],
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 1 and run.stdout == ""
    assert run.stderr.count("\n") == 1 and run.stderr.startswith("error: no model server answers")


def test_unknown_task_is_a_usage_error():
    run = subprocess.run([*SUITE, "--only", "no-such-task"], capture_output=True, text=True, timeout=60)
    assert run.returncode == 2 and "invalid choice" in run.stderr
