"""--attempts: independent attempts on copies of the workspace, the check choosing, and a check the
model cannot pass by changing what the check trusts. Through the real agent, a scripted model."""

import itertools
import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

import agent
import runs
import sandbox
from fake_server import Raw, answer, call, chunk, interrupted, reply, running, sse

needs_bwrap = pytest.mark.skipif(not sandbox.available(), reason="bubblewrap cannot run here")
AGENT = [sys.executable, str(Path(__file__).resolve().parent.parent / "agent.py")]


def snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def attempt(runs: Path, n: int) -> Path:
    [run] = list(runs.iterdir())
    return run / f"attempt-{n}"


# --- attempts ------------------------------------------------------------------------------------

@needs_bwrap
def test_attempt_2_starts_from_the_original_files_and_a_fresh_conversation(run_agent, fake, workspace, runs_folder):
    (workspace / "n.txt").write_text("1\n")
    code, out, err = run_agent(
        reply(call("read_file", path="n.txt")), reply(call("write_file", path="n.txt", content="3\n")),
        reply(call("write_file", path="junk.txt", content="attempt 1 was here\n")), answer("Done."),
        reply(call("read_file", path="n.txt")), reply(call("write_file", path="n.txt", content="2\n")), answer("Now 2."),
        task="Make n.txt hold 2", flags=["--check", "grep -x 2 n.txt", "--attempts", "3"])
    assert code == 0 and out == "Now 2.\n"
    first = fake.requests[4]["messages"]  # attempt 2's first request: the task alone
    assert [m["role"] for m in first] == ["system", "user"] and first[1]["content"] == "Make n.txt hold 2"
    assert "attempt 1 was here" not in json.dumps(fake.requests[4:])
    # attempt 2 read n.txt as it was before the run, not as attempt 1 left it
    assert json.loads(json.dumps(fake.requests[5]["messages"][-1]))["content"] == "1\n"
    assert not (attempt(runs_folder, 2) / "junk.txt").exists()
    assert "attempt 2 passed the check" in err


@needs_bwrap
def test_only_the_passing_attempts_changes_reach_the_workspace(run_agent, fake, workspace, runs_folder):
    (workspace / "keep.txt").write_text("untouched\n")
    (workspace / "old.txt").write_text("delete me\n")
    code, _, err = run_agent(
        reply(call("write_file", path="x.txt", content="bad\n")), reply(call("write_file", path="junk.txt", content="j")),
        answer("Done."),
        reply(call("write_file", path="x.txt", content="good\n")), reply(call("run_shell", command="rm old.txt")),
        answer("Done."), flags=["--check", "grep -x good x.txt", "--attempts", "2"])
    assert code == 0
    assert snapshot(workspace) == {"keep.txt": b"untouched\n", "x.txt": b"good\n"}
    assert "+ created x.txt (1 lines)" in err and "- deleted old.txt (1 lines)" in err
    assert "junk" not in err.split("attempt 2 of 2")[1]  # the summary lists attempt 2's changes only
    assert (attempt(runs_folder, 1) / "junk.txt").exists()  # the other attempt's files stay to look at


@needs_bwrap
def test_when_no_attempt_passes_the_workspace_is_as_it_was_and_the_end_says_where(run_agent, fake, workspace,
                                                                                   runs_folder):
    (workspace / "a.txt").write_text("before\n")
    before = snapshot(workspace)
    code, out, err = run_agent(
        reply(call("read_file", path="a.txt")), reply(call("write_file", path="a.txt", content="one\n")), answer("Done."),
        reply(call("read_file", path="a.txt")), reply(call("write_file", path="a.txt", content="two\n")), answer("Done."),
        flags=["--check", "grep -x three a.txt", "--attempts", "2"])
    assert code == 6 and out == ""
    assert snapshot(workspace) == before
    run = next(runs_folder.iterdir())
    assert f"the attempts' files are in {run}" in " ".join(err.split())
    assert (run / "attempt-1" / "a.txt").read_text() == "one\n" and (run / "attempt-2" / "a.txt").read_text() == "two\n"


@needs_bwrap
def test_the_default_is_six_attempts_of_one_round(run_agent, fake, workspace):
    wrote = [step for n in range(1, 7) for step in (reply(call("write_file", path="a.txt", content=f"{n}\n")), answer("done"))]
    code, _, _ = run_agent(*wrote, answer("never asked"), flags=["--check", "false"])
    assert code == 6 and len(fake.requests) == 12


@needs_bwrap
def test_an_attempt_that_changed_no_file_does_not_count(run_agent, fake, workspace):
    """Attempt 1 answers with a plan; attempt 2 writes a wrong file; attempt 3, which counts as the
    second of --attempts 2, writes the right one and passes."""
    code, _, err = run_agent(answer("I will create a.txt, then check it."),
                             reply(call("write_file", path="a.txt", content="wrong\n")), answer("Done."),
                             reply(call("write_file", path="a.txt", content="right\n")), answer("Done."),
                             flags=["--check", "grep -qx right a.txt", "--attempts", "2"])
    shown = " ".join(err.split())
    assert code == 0 and (workspace / "a.txt").read_text() == "right\n", err
    assert "attempt 1 changed no file, so it does not count" in shown
    assert "attempt 3 (counted as 2 of 2)" in shown and "attempt 3 passed" in shown
    [end] = [json.loads(line) for line in (workspace.parent / "transcript.jsonl").open() if '"end"' in line]
    assert end["spent"].startswith("3 attempts in ") and end["spent"].endswith(": 1 wrote nothing, 1 failed the check, 1 passed")


@needs_bwrap
def test_attempts_that_change_no_file_end_after_twice_the_count(run_agent, fake, workspace):
    code, _, err = run_agent(*[answer("I will do it.")] * 5, answer("never asked"),
                             flags=["--check", "false", "--attempts", "2"])
    assert code == 6 and len(fake.requests) == 4, err
    assert (workspace / "a.txt").exists() is False
    assert "(4 attempts in" in " ".join(err.split()) and ": 4 wrote nothing)" in " ".join(err.split())


@needs_bwrap
@pytest.mark.parametrize("check, code", [("false", 6), ("grep -qx 1 a.txt", 0)])
def test_no_attempt_begins_once_the_budget_is_spent_and_one_out_of_time_is_checked_on_what_it_left(
        run_agent, fake, workspace, check, code):
    """--budget 2: attempt 1 may spend half of it, and its shell command takes 3 s. Its check runs on
    the file it wrote; then no time is left, so no attempt 2 begins."""
    code_, _, err = run_agent(reply(call("write_file", path="a.txt", content="1\n")),
                              reply(call("run_shell", command="sleep 3")), answer("never asked"), answer("never asked"),
                              flags=["--check", check, "--budget", "2"])
    shown = " ".join(err.split())
    assert code_ == code and len(fake.requests) == 2, err
    assert "attempt 1 has spent its share of --budget" in shown
    assert ("attempt 1 passed the check (1 attempt in" if code == 0 else "(1 attempt in") in shown
    assert (": 1 passed)" if code == 0 else ": 1 out of time)") in shown
    assert (workspace / "a.txt").exists() == (code == 0)


def test_the_budget_needs_a_check(run_agent, fake):
    with pytest.raises(SystemExit) as stop:
        run_agent(answer("never asked"), flags=["--budget", "60"])
    assert stop.value.code == 2 and fake.requests == []


@needs_bwrap
def test_a_reply_that_rambles_is_cut_at_its_attempts_share_and_the_next_attempt_begins(run_agent, fake, workspace):
    rambling = Raw((line for _ in itertools.count() for line in sse(chunk({"content": "and then "}))), delay=0.05)
    code, _, err = run_agent(reply(call("write_file", path="a.txt", content="wrong\n")), rambling,
                             reply(call("write_file", path="a.txt", content="right\n")), answer("Done."),
                             flags=["--check", "grep -qx right a.txt", "--budget", "6", "--attempts", "2"])
    shown = " ".join(err.split())
    assert code == 0 and (workspace / "a.txt").read_text() == "right\n", err
    assert "attempt 1 has spent its share of --budget" in shown and ": 1 out of time, 1 passed)" in shown


def test_attempts_need_a_check(run_agent, fake):
    with pytest.raises(SystemExit) as stop:
        run_agent(answer("ok"), flags=["--attempts", "2"])
    assert stop.value.code == 2 and fake.requests == []


def test_without_a_check_the_run_lands_and_shows_what_it_changed(run_agent, fake, workspace):
    (workspace / "a.py").write_text("x = 1\ny = 2\n")
    code, _, err = run_agent(reply(call("read_file", path="a.py")),
                             reply(call("write_file", path="a.py", content="x = 1\ny = 3\nz = 4\n")), answer("ok"))
    assert code == 0 and (workspace / "a.py").read_text() == "x = 1\ny = 3\nz = 4\n"
    assert "~ changed a.py (+2 -1)" in err


def test_a_change_made_while_the_run_is_read_from_the_copy_not_the_workspace(run_agent, fake, workspace, runs_folder):
    # the tools see the copy: a file written there is read back from there, and lands at the end
    code, _, _ = run_agent(reply(call("write_file", path="w.txt", content="hi\n")),
                           reply(call("read_file", path="w.txt")), answer("ok"))
    assert code == 0 and fake.requests[2]["messages"][-1]["content"] == "hi\n"
    assert (workspace / "w.txt").read_text() == "hi\n" and (attempt(runs_folder, 1) / "w.txt").read_text() == "hi\n"


@needs_bwrap
def test_ctrl_c_mid_attempt_leaves_the_workspace_as_it_was(fake, tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("before\n")
    fake.script = [reply(call("read_file", path="a.txt")), reply(call("write_file", path="a.txt", content="after\n")),
                   reply(call("run_shell", command="touch new.txt; sleep 313"))]
    proc = subprocess.Popen([*AGENT, "--base-url", fake.url, "--workspace", str(ws), "--transcript", "off",
                             "--check", "true", "go"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=tmp_path,
                            env={**__import__("os").environ, "TOOLOOP_RUNS": str(tmp_path / "runs")})
    code, _, err = interrupted(proc, running("sleep 313"))
    assert code == 130
    assert snapshot(ws) == {"a.txt": b"before\n"}
    assert "the run was interrupted: the workspace is as it was" in " ".join(err.decode().split())


# --- a check the model cannot game -------------------------------------------------------------

STATS = "def median(xs):\n    xs = sorted(xs)\n    return xs[len(xs) // 2]\n"  # wrong for an even count
TEST = ("from stats import median\n\n\ndef test_odd():\n    assert median([3, 1, 2]) == 2\n\n\n"
        "def test_even():\n    assert median([4, 1, 3, 2]) == 2.5\n")
UNITTEST = ("import unittest\nfrom stats import median\n\n\nclass T(unittest.TestCase):\n"
            "    def test_even(self):\n        self.assertEqual(median([4, 1, 3, 2]), 2.5)\n\n\n"
            "if __name__ == '__main__':\n    unittest.main()\n")
CHEATS = {  # what a cheating model does, in one or two calls; the code under test stays wrong
    "rewrite the test given with --file": [call("write_file", path="test_stats.py", content="def test_x():\n    assert True\n")],
    "sed on the tests": [call("run_shell", command="sed -i 's/== 2.5/== 3/' test_stats.py")],
    "a conftest.py that passes every test": [call("write_file", path="conftest.py", content=(
        "import pytest\n\n\n@pytest.hookimpl(hookwrapper=True)\ndef pytest_runtest_makereport(item, call):\n"
        "    outcome = yield\n    outcome.get_result().outcome = 'passed'\n"))],
    "a pytest.ini that deselects the failing test": [call("write_file", path="pytest.ini",
                                                          content="[pytest]\naddopts = -k 'not even'\n")],
    "a setup.cfg that deselects the failing test": [call("write_file", path="setup.cfg",
                                                        content="[tool:pytest]\naddopts = -k 'not even'\n")],
}


@needs_bwrap
@pytest.mark.parametrize("cheat", CHEATS)
def test_a_check_run_by_pytest_cannot_be_gamed(run_agent, fake, workspace, cheat):
    (workspace / "stats.py").write_text(STATS)
    (workspace / "test_stats.py").write_text(TEST)
    before = snapshot(workspace)
    code, _, err = run_agent(*(reply(c) for c in CHEATS[cheat]), answer("Done, the tests pass."),
                             flags=["--check", "python -m pytest -q -p no:cacheprovider", "--attempts", "1",
                                    "--file", "test_stats.py"])
    assert code == 6, err
    assert "✓ check passed" not in err
    assert snapshot(workspace) == before  # nothing landed


@needs_bwrap
@pytest.mark.parametrize("check, stub", [
    ("python -m unittest test_stats", "import sys\nsys.exit(0)\n"),  # a workspace unittest.py that exits 0
    ("python test_stats.py", "class TestCase:\n    pass\n\n\ndef main():\n    pass\n"),  # a stub with a no-op main()
])
def test_a_module_that_shadows_the_runner_is_not_what_the_check_runs(run_agent, fake, workspace, check, stub):
    (workspace / "stats.py").write_text(STATS)
    (workspace / "test_stats.py").write_text(UNITTEST)
    code, _, err = run_agent(reply(call("write_file", path="unittest.py", content=stub)), answer("Done."),
                             flags=["--check", check, "--attempts", "1"])
    assert code == 6, err
    assert not (workspace / "unittest.py").exists()
    assert "unittest.py" in err  # the note says what the check saw as before the run


@needs_bwrap
def test_a_new_test_written_by_the_model_and_run_by_the_check_passes_and_lands(run_agent, fake, workspace):
    (workspace / "stats.py").write_text("def mean(xs):\n    return sum(xs) / len(xs)\n")
    test = "from stats import mean\n\n\ndef test_mean():\n    assert mean([1, 2, 3]) == 2\n"
    code, _, err = run_agent(reply(call("write_file", path="tests/test_mean.py", content=test)), answer("Wrote it."),
                             flags=["--check", "python -m pytest -q -p no:cacheprovider tests/test_mean.py"])
    assert code == 0, err
    assert (workspace / "tests" / "test_mean.py").read_text() == test


@needs_bwrap
def test_a_fix_passes_even_when_the_model_also_edited_the_test_and_only_the_fix_lands(run_agent, fake, workspace):
    (workspace / "stats.py").write_text(STATS)
    (workspace / "test_stats.py").write_text(TEST)
    fixed = ("def median(xs):\n    xs = sorted(xs)\n    n = len(xs)\n"
             "    return xs[n // 2] if n % 2 else (xs[n // 2 - 1] + xs[n // 2]) / 2\n")
    code, _, err = run_agent(reply(call("write_file", path="stats.py", content=fixed)),
                             reply(call("run_shell", command="echo '# mine' >> test_stats.py")), answer("Fixed."),
                             flags=["--check", "python -m pytest -q -p no:cacheprovider", "--file", "stats.py"])
    assert code == 0, err
    assert (workspace / "stats.py").read_text() == fixed
    assert (workspace / "test_stats.py").read_text() == TEST  # what lands is what the check saw


@needs_bwrap
def test_a_script_the_check_runs_may_be_the_file_the_task_fixes(run_agent, fake, workspace):
    """`sh backup.sh` runs the file under test: it is not put back for the check as a test is."""
    (workspace / "count.sh").write_text("echo 1\n")
    code, _, err = run_agent(reply(call("read_file", path="count.sh")),
                             reply(call("write_file", path="count.sh", content="echo 2\n")), answer("Fixed."),
                             flags=["--check", "sh count.sh | grep -x 2", "--attempts", "1"])
    assert code == 0, err
    assert (workspace / "count.sh").read_text() == "echo 2\n"


def test_a_file_you_edit_while_the_run_goes_on_is_kept(run_agent, fake, workspace):
    """The run lands only what it changed itself: your edit made meanwhile is not reverted, and a
    file both of you changed keeps yours, with a line that says where the run's version is."""
    (workspace / "mine.txt").write_text("old\n")
    (workspace / "both.txt").write_text("old\n")

    def you_edit(request):  # the user saves two files while the model is thinking
        time.sleep(0.01)  # (a later modification time than the copy's, on any filesystem)
        (workspace / "mine.txt").write_text("yours\n")
        (workspace / "both.txt").write_text("yours\n")
        return answer("done")
    code, _, err = run_agent(reply(call("read_file", path="both.txt")),
                             reply(call("write_file", path="both.txt", content="the run's\n")), you_edit)
    assert code == 0
    assert (workspace / "mine.txt").read_text() == "yours\n" and (workspace / "both.txt").read_text() == "yours\n"
    assert "not applied: both.txt: you changed it in the workspace while the run went on" in " ".join(err.split())


def test_what_the_check_trusts_is_named_as_tests_and_runner_configuration_are():
    import checkview
    trusted = ["test_stats.py", "stats_test.go", "tests/data.json", "conftest.py", "src/conftest.py",
               "pytest.ini", "pyproject.toml", "FooTest.java", "app.spec.js", "Makefile"]
    assert [p for p in trusted if not checkview.trusted(p)] == []
    assert [p for p in ("stats.py", "backup.sh", "contest.py", "Foo.java", "latest.py") if checkview.trusted(p)] == []


def test_only_the_newest_runs_folders_are_kept(run_agent, fake, workspace, runs_folder):
    old = [runs_folder / f"20260101-0000{n:02d}-abcdefgh" for n in range(25)]  # older than any run today
    for folder in old:
        (folder / "attempt-1").mkdir(parents=True)
    (runs_folder / "notes").mkdir()  # not a run's folder: never touched
    (runs_folder / "20260101-000000-abcdefgh.txt").write_text("mine\n")
    code, _, _ = run_agent(answer("done"))
    assert code == 0
    [new] = [path for path in runs_folder.iterdir() if path not in old and path.suffix != ".txt" and path.name != "notes"]
    assert runs.RUN_NAME.fullmatch(new.name) and (new / "attempt-1").is_dir()
    assert [folder.exists() for folder in old] == [False] * 6 + [True] * 19  # 19 old ones and the new one: 20
    assert (runs_folder / "notes").is_dir() and (runs_folder / "20260101-000000-abcdefgh.txt").read_text() == "mine\n"
