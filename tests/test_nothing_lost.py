"""Nothing lost: the real copy -> plan -> apply against a simple reference, on generated runs.

Hypothesis builds a workspace (text and binary files, executables, links, a `.env`, odd and
244-byte names), takes the run's copy with changes.take, plays an attempt's file operations on
the copy (create, change, delete, rename, file <-> folder, links, chmod) and the user's own edits
on the workspace meanwhile, then lands with changes.plan and changes.apply. The reference is
what must hold, whatever happened:

- every file of the user's that is not a change the run landed is byte for byte as it was just
  before the landing (a file the run never saw, like `.env`, or one the user edited meanwhile);
- every change of the run's is either in the workspace exactly as in the copy, or named in a
  `not applied` line with its reason;
- one refused change never stops the others: the apply never fails and undoes all;
- nothing of the landing's own is left behind (.tooloop/landing-*).

CI runs NOTHING_LOST_CASES cases (default 400); `NOTHING_LOST_CASES=10000` runs the long one
(docs/results.md has the command and its counts).
"""

import collections
import io
import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import changes
import runs
import sandbox
import tools
from fake_server import answer, call, interrupted, reply

AGENT = [sys.executable, str(Path(__file__).resolve().parent.parent / "agent.py")]

CASES = int(os.environ.get("NOTHING_LOST_CASES", "400"))
TALLY = collections.Counter()  # what the generated cases did, printed at the end with `pytest -s`
OLD = 1_600_000_000  # the workspace's files were last written long before the run (2020)

# few names, so the run and the user often meet at the same path; odd ones among them
NAMES = ["a.py", "conf", ".env", "é [x]", "L" * 240 + ".py"]
paths = st.lists(st.sampled_from(NAMES), min_size=1, max_size=2).map("/".join)
texts = st.text(st.characters(codec="utf-8", exclude_characters="\0"), max_size=30).map(str.encode)
contents = st.one_of(texts, texts, texts, st.just(b"\0\x01binary\xff"))
modes = st.sampled_from([0o644, 0o644, 0o644, 0o755])
writes = st.tuples(st.just("write"), paths, contents, modes)
SECRET = ("write", "conf/.env", b"API_KEY=1\n", 0o600)  # in every workspace: a secret in a folder, never copied
ops = st.one_of(  # mostly what a command does most: write files, and delete them
    writes, writes, writes, writes, st.tuples(st.just("write"), st.just("conf"), contents, modes),  # over the folder
    st.tuples(st.just("delete"), paths), st.tuples(st.just("delete"), paths),
    st.tuples(st.just("rename"), paths, paths),
    st.tuples(st.just("link"), paths, st.sampled_from(["a.py", "/etc/passwd", "../../x", "conf"])),
    st.tuples(st.just("chmod"), paths, st.sampled_from([0o600, 0o755])),
)


def play(root: Path, op: tuple) -> None:
    """One file operation on `root`, as a command would do it (rm -rf, mkdir -p, mv, ln -s)."""
    kind, path = op[0], root / op[1]
    try:
        if kind == "write":
            for parent in reversed(path.relative_to(root).parents[:-1]):
                if (root / parent).is_symlink() or (root / parent).is_file():
                    (root / parent).unlink()  # a file in the way becomes a folder
            path.parent.mkdir(parents=True, exist_ok=True)
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path)  # a folder in the way becomes a file
            elif path.is_symlink():
                path.unlink()
            path.write_bytes(op[2])
            os.chmod(path, op[3])
        elif kind == "delete":
            shutil.rmtree(path) if path.is_dir() and not path.is_symlink() else path.unlink()
        elif kind == "rename":
            target = root / op[2]
            if target.is_relative_to(path) or not target.parent.is_dir():
                return
            os.rename(path, target)
        elif kind == "link":
            path.parent.mkdir(parents=True, exist_ok=True)
            path.symlink_to(op[2])
        elif kind == "chmod" and path.is_file() and not path.is_symlink():
            os.chmod(path, op[2])
    except OSError:
        pass  # the command failed (a file in the way, a missing source): nothing changed


def snapshot(root: Path) -> dict[str, tuple]:
    """Every file and link under root (secrets, .tooloop included), with what it holds."""
    found = {}
    for folder, dirs, names in os.walk(root):
        for name in names + [d for d in dirs if os.path.islink(os.path.join(folder, d))]:
            path = Path(folder, name)
            info = os.lstat(path)
            rel = path.relative_to(root).as_posix()
            found[rel] = ("link", os.readlink(path)) if stat.S_ISLNK(info.st_mode) else (
                "file", info.st_mode, path.read_bytes())
    return found


def snapshot_bytes(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def refused_paths(refused: list[str]) -> set[str]:
    return {line.split(": ", 1)[0] for line in refused}


def land_case(tmp_path: Path, initial: list, run_ops: list, user_ops: list) -> None:
    ws, copy = tmp_path / "ws", tmp_path / "run" / "attempt-1"
    shutil.rmtree(tmp_path, ignore_errors=True)
    ws.mkdir(parents=True)
    for op in initial:
        play(ws, op)
    for folder, dirs, names in os.walk(ws):
        for name in names + dirs:
            os.utime(Path(folder, name), (OLD, OLD), follow_symlinks=False)
    began, _ = changes.take(ws, copy)
    for op in run_ops:
        play(copy, op)
    for op in user_ops:
        play(ws, op)
    before = snapshot(ws)
    plan = changes.plan(ws, copy, began, set())
    landed, refused = changes.apply(plan, copy, ws)
    after, theirs = snapshot(ws), snapshot(copy)
    done = {change.path for change in landed}
    named = refused_paths(refused)
    assert not named & done  # (and apply raised no error: one refusal never stops the rest)
    # every byte of the user's that is not a landed change is as it was
    for path, was in before.items():
        if path not in done:
            assert after.get(path) == was, f"{path} was lost or altered"
    # every change of the run's landed exactly, or is named with its reason
    for change in changes.changed(copy, began):
        if change.path in named:
            continue
        if change.kind == "deleted":
            assert change.path not in after, f"{change.path}: deleted by the run, still there, not named"
        else:
            assert after.get(change.path) == theirs[change.path], f"{change.path}: not landed, not named"
    for line in refused:
        assert line.split(": ", 1)[1], "a refusal without its reason"
    assert not list((ws / ".tooloop").glob("landing-*")) if (ws / ".tooloop").is_dir() else True
    TALLY.update({"cases": 1, "changes landed": len(landed), "changes refused": len(refused),
                  "user files kept": sum(path not in done for path in before),
                  "user bytes kept": sum(len(was[-1]) for path, was in before.items() if path not in done)})


@settings(max_examples=CASES, deadline=None, suppress_health_check=list(HealthCheck))
@given(initial=st.lists(writes, max_size=8).map(lambda ops: [SECRET, *ops]), run_ops=st.lists(ops, max_size=8),
       user_ops=st.lists(ops, max_size=4))
def test_a_run_lands_its_changes_or_names_them_and_never_loses_a_user_byte(tmp_path_factory, initial, run_ops,
                                                                           user_ops):
    land_case(tmp_path_factory.mktemp("case"), initial, run_ops, user_ops)


def test_the_generated_cases_landed_and_refused_changes():
    """(Runs after the property test:) the cases were not all trivial; `pytest -s` prints the tally."""
    print("nothing lost:", dict(TALLY))
    assert TALLY["changes landed"] and TALLY["changes refused"]


def test_the_issue_cases_hold_against_the_reference(tmp_path):
    """The examples of the issue, as fixed cases of the same reference."""
    # a folder turned into a file, the folder holding a .env the run never saw
    land_case(tmp_path / "1", [("write", "conf/settings.py", b"A = 1\n", 0o644), ("write", "conf/.env", b"K=1\n", 0o644),
                               ("write", "main.py", b"x = 1\n", 0o644)],
              [("delete", "conf"), ("write", "conf", b"DEBUG = True\n", 0o644), ("write", "main.py", b"x = 2\n", 0o644)],
              [])
    assert (tmp_path / "1" / "ws" / "conf" / ".env").read_bytes() == b"K=1\n"
    assert (tmp_path / "1" / "ws" / "main.py").read_bytes() == b"x = 2\n"
    # the user creates notes/todo.md while the run writes a file notes
    land_case(tmp_path / "2", [], [("write", "notes", b"run\n", 0o644)], [("write", "notes/todo.md", b"mine\n", 0o644)])
    assert (tmp_path / "2" / "ws" / "notes" / "todo.md").read_bytes() == b"mine\n"
    # a 244-byte name beside an ordinary change, and a file turned into a folder
    long = "L" * 240 + ".py"
    land_case(tmp_path / "3", [("write", long, b"a\n", 0o644), ("write", "src", b"s\n", 0o644)],
              [("write", long, b"b\n", 0o644), ("write", "src/app.py", b"ok\n", 0o644)], [])
    assert (tmp_path / "3" / "ws" / long).read_bytes() == b"b\n"
    assert (tmp_path / "3" / "ws" / "src" / "app.py").read_bytes() == b"ok\n"


# --- the issue's cases, through the real agent (a scripted model, tests/conftest.py) -------------

needs_bwrap = pytest.mark.skipif(not sandbox.available(), reason="bubblewrap cannot run here")


def then(action, step):
    """A script step that first does what the user does meanwhile (`action`), then replies `step`."""
    return lambda request: (action(), step)[1]


@needs_bwrap
def test_a_file_landed_over_a_folder_never_removes_the_secret_the_run_never_saw(run_agent, fake, workspace):
    (workspace / "conf").mkdir()
    (workspace / "conf" / "settings.py").write_text("DEBUG = False\n")
    (workspace / "conf" / ".env").write_text("API_KEY=abc123\n")  # never copied: the run never saw it
    (workspace / "main.py").write_text("x = 1\n")
    code, _, err = run_agent(reply(call("run_shell", command="rm -rf conf && printf 'DEBUG = True\\n' > conf")),
                             reply(call("run_shell", command="printf 'x = 2\\n' > main.py")), answer("Done."))
    err = " ".join(err.split())
    assert code == 0
    assert (workspace / "conf" / ".env").read_text() == "API_KEY=abc123\n"
    assert (workspace / "main.py").read_text() == "x = 2\n"  # the rest lands
    assert "not applied: conf: the folder conf/ in the workspace holds conf/.env, which the run did not see" in err
    assert "cannot apply" not in err


def test_a_folder_the_user_creates_while_the_run_writes_a_file_there_is_kept(run_agent, fake, workspace):
    def user():
        (workspace / "notes").mkdir()
        (workspace / "notes" / "todo.md").write_text("- call Ann\n")
    code, _, err = run_agent(reply(call("write_file", path="notes", content="the run's notes\n")),
                             reply(call("write_file", path="ok.txt", content="ok\n")),
                             then(user, answer("Done.")))
    err = " ".join(err.split())
    assert code == 0
    assert (workspace / "notes" / "todo.md").read_text() == "- call Ann\n"
    assert (workspace / "ok.txt").read_text() == "ok\n"
    assert "not applied: notes: you created the folder notes/ in the workspace while the run went on" in err


def test_a_file_the_user_edits_while_the_run_changes_it_is_not_overwritten(run_agent, fake, workspace):
    (workspace / "a.py").write_text("a = 1\n")
    code, _, err = run_agent(reply(call("read_file", path="a.py")),
                             reply(call("write_file", path="a.py", content="a = 2\n")),
                             then(lambda: (workspace / "a.py").write_text("a = 'mine'\n"), answer("Done.")))
    assert code == 0 and (workspace / "a.py").read_text() == "a = 'mine'\n"
    assert "not applied: a.py: you changed it in the workspace while the run went on" in " ".join(err.split())


@needs_bwrap
def test_a_long_name_and_a_file_turned_folder_land_beside_an_ordinary_change(run_agent, fake, workspace):
    long = "L" * 240 + ".py"  # 244 bytes: legal, but a staging name beside it would pass 255
    (workspace / long).write_text("a = 1\n")
    (workspace / "src").write_text("a file, to become a folder\n")
    (workspace / "main.py").write_text("x = 1\n")
    code, _, err = run_agent(
        reply(call("run_shell", command=f"printf 'a = 2\\n' > {long} && rm src && mkdir src && "
                                        "printf 'ok\\n' > src/app.py && printf 'x = 2\\n' > main.py")),
        answer("Done."))
    assert code == 0, err
    assert (workspace / long).read_text() == "a = 2\n" and (workspace / "main.py").read_text() == "x = 2\n"
    assert (workspace / "src" / "app.py").read_text() == "ok\n"
    assert "not applied" not in err


# --- the landing's own failures, on real files -----------------------------------------------

def test_a_run_that_crashed_lands_nothing(tmp_path, workspace):
    (workspace / "a.py").write_text("a = 1\n")
    run = runs.folder(tmp_path / "runs", workspace)
    attempt = runs.begin(workspace, run, 1)
    (attempt.copy / "a.py").write_text("a = 2\n")
    settings = tools.Settings(workspace=workspace)
    landed, refused, where, code = runs.land(workspace, None, settings, runs.CRASHED, None, run)
    assert (landed, code) == ([], runs.CRASHED) and "tooloop itself failed" in where
    assert (workspace / "a.py").read_text() == "a = 1\n"


def test_the_landing_reads_the_folder_it_holds_open_even_if_another_takes_its_path(tmp_path):
    ws, copy = tmp_path / "ws", tmp_path / "run" / "attempt-1"
    ws.mkdir()
    began, _ = changes.take(ws, copy)
    (copy / "a.py").write_text("the run's\n")
    held = os.open(copy, os.O_RDONLY | os.O_DIRECTORY)
    plan = changes.plan(ws, copy, began, set())
    copy.rename(tmp_path / "moved")  # another folder takes the copy's path (a link out, a folder made again)
    copy.mkdir()
    (copy / "a.py").write_text("planted\n")
    try:
        changes.apply(plan, copy, ws, held)
    finally:
        os.close(held)
    assert (ws / "a.py").read_text() == "the run's\n"


def test_an_error_part_way_through_the_apply_undoes_every_step(tmp_path):
    ws, copy = tmp_path / "ws", tmp_path / "run" / "attempt-1"
    (ws / "old").mkdir(parents=True)
    (ws / "old" / "gone.py").write_text("gone\n")
    (ws / "a.py").write_text("a = 1\n")
    began, _ = changes.take(ws, copy)
    shutil.rmtree(copy / "old")
    (copy / "a.py").write_text("a = 2\n")
    (copy / "new").mkdir()
    (copy / "new" / "b.py").write_text("b\n")
    (copy / "z.py").write_text("z\n")
    plan = changes.plan(ws, copy, began, set())
    (ws / "z.py").write_text("mine, made while landing\n")  # after the plan, before the apply
    before = snapshot(ws)
    with pytest.raises(FileExistsError):
        changes.apply(plan, copy, ws)
    assert snapshot(ws) == before  # the deletion, the new folder and the changed file are all undone
    assert not (ws / "new").exists()


# --- the run's folder: never pruned while the run lives, its copy proven from start to end -----

def test_a_run_folder_removed_mid_run_lands_nothing_and_no_tool_makes_it_again(run_agent, fake, workspace,
                                                                              runs_folder):
    for name, text in {"README.md": "# app\n", "app.py": "x = 1\n", "src/lib.py": "y = 2\n"}.items():
        (workspace / name).parent.mkdir(parents=True, exist_ok=True)
        (workspace / name).write_text(text)
    before = snapshot_bytes(workspace)
    clean_up = lambda: [shutil.rmtree(run) for run in runs_folder.iterdir()]  # noqa: E731  (a cache clean-up)
    code, _, err = run_agent(reply(call("write_file", path="a.txt", content="a\n")),
                             then(clean_up, reply(call("write_file", path="CHANGELOG.md", content="- new\n"))),
                             answer("Done."))
    assert snapshot_bytes(workspace) == before  # on a32ed05: + CHANGELOG.md, - README.md, - app.py, - src/lib.py
    assert fake.requests[2]["messages"][-1]["content"].startswith("Error:")  # the write found no workspace
    assert not any(runs_folder.iterdir())  # nothing made the copy again
    assert code == runs.CRASHED and "not applied" in err and "vanished" in " ".join(err.split())


def test_a_live_runs_folder_is_never_pruned_by_the_runs_that_start_after_it(tmp_path, workspace):
    held = runs.folder(tmp_path / "runs", workspace)  # held, as a running run holds it
    live = held.rename(held.with_name("20190101-000000-liverun1"))  # and older than any
    old = runs.folder(tmp_path / "runs", workspace)
    runs.release(old)  # a run that ended, in 2020
    old = old.rename(old.with_name("20200101-000000-oldrun01"))
    for _ in range(runs.KEEP_RUNS + 1):
        runs.release(runs.folder(tmp_path / "runs", workspace))
    assert live.is_dir() and not old.exists()
    runs.release(held)


def test_a_live_run_is_not_pruned_by_twenty_runs_that_start_while_it_sleeps(run_agent, fake, workspace, runs_folder):
    (workspace / "app.py").write_text("x = 1\n")
    def others():  # twenty runs start and end while this one waits on its command
        for _ in range(runs.KEEP_RUNS):
            runs.release(runs.folder(runs_folder, workspace))
    code, _, err = run_agent(reply(call("write_file", path="CHANGELOG.md", content="- new\n")),
                             then(others, answer("Done.")))
    assert code == 0 and (workspace / "CHANGELOG.md").read_text() == "- new\n"
    assert (workspace / "app.py").read_text() == "x = 1\n"


def test_tooloop_runs_inside_the_workspace_is_one_line_and_exit_2(run_agent, fake, workspace, monkeypatch):
    monkeypatch.setenv("TOOLOOP_RUNS", str(workspace / "cache" / "runs"))
    code, _, err = run_agent(answer("never asked"))
    assert code == 2 and fake.requests == []
    assert "TOOLOOP_RUNS" in err and "inside the workspace" in err and "Traceback" not in err
    assert not (workspace / "cache").exists()


@pytest.mark.parametrize("how", ["relative", "symlinked"])
def test_a_relative_or_symlinked_tooloop_runs_works_with_approval(run_agent, fake, workspace, monkeypatch, how):
    real = workspace.parent / "real-runs"
    real.mkdir()
    if how == "relative":  # the tests run in workspace.parent
        monkeypatch.setenv("TOOLOOP_RUNS", "real-runs")
    else:
        (workspace.parent / "linked-runs").symlink_to(real)
        monkeypatch.setenv("TOOLOOP_RUNS", str(workspace.parent / "linked-runs"))
    monkeypatch.setattr("sys.stdin", io.StringIO("y\n"))
    code, _, err = run_agent(reply(call("write_file", path="a.txt", content="a\n")), answer("Done."),
                             flags=["--approval", "ask"])
    assert code == 0, err
    assert (workspace / "a.txt").read_text() == "a\n"


@needs_bwrap
def test_a_finished_attempt_keeps_only_what_it_changed(run_agent, fake, workspace, runs_folder):
    (workspace / "data.bin").write_bytes(os.urandom(1 << 20))  # unchanged by every attempt
    (workspace / "a.txt").write_text("a\n")
    script = [step for n in (1, 2, 3) for step in (
        reply(call("write_file", path="b.txt", content=f"attempt {n}\n")), answer("Done."))]
    code, _, err = run_agent(*script, flags=["--check", "false", "--attempts", "3"])
    assert code == 6
    [run] = runs_folder.iterdir()
    for n in (1, 2, 3):
        assert snapshot_bytes(run / f"attempt-{n}") == {"b.txt": f"attempt {n}\n".encode()}
    assert sorted(path.name for path in run.iterdir()) == [
        "attempt-1", "attempt-1.json", "attempt-2", "attempt-2.json", "attempt-3", "attempt-3.json", "lock"]


@needs_bwrap
def test_ctrl_c_while_landing_leaves_all_of_it_or_none_and_the_transcript_ends(fake, workspace, tmp_path):
    """The Ctrl-C comes once the landing stages its files: whenever it lands, the workspace holds
    the whole change set or none of it, no staging folder, and the transcript's last event."""
    (workspace / "old.txt").write_text("old\n")
    (workspace / "keep").mkdir()
    (workspace / "keep" / "gone.txt").write_text("gone\n")
    fake.script = [reply(call("run_shell", command="yes 'a line of text' | head -c 150000000 > big.txt && "
                                                    "mkdir -p new/deep && echo n > new/deep/n.txt && "
                                                    "echo changed > old.txt && rm -r keep")), answer("Done.")]
    log = tmp_path / "run.jsonl"
    proc = subprocess.Popen([*AGENT, "--base-url", fake.url, "--workspace", str(workspace), "--no-probe",
                             "--transcript", str(log), "go"],
                            env={**os.environ, "TOOLOOP_RUNS": str(tmp_path / "runs")}, cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    code, _, err = interrupted(proc, lambda: any((workspace / ".tooloop").glob("landing-*")))
    assert code == 130 and "Traceback" not in err
    landed = (workspace / "big.txt").exists()
    assert (workspace / "new" / "deep" / "n.txt").exists() == landed  # all of it, or none of it
    assert (workspace / "old.txt").read_text() == ("changed\n" if landed else "old\n")
    assert (workspace / "keep").exists() != landed
    assert not list(workspace.glob(".tooloop/landing-*"))
    assert json.loads(log.read_text().splitlines()[-1])["event"] == "end"


# --- the model sees the workspace's own path; a parent's runner configuration counts ------------

@needs_bwrap
def test_commands_and_errors_show_the_workspace_path_never_the_copys(run_agent, fake, workspace, runs_folder):
    code, _, _ = run_agent(reply(call("run_shell", command="pwd; python3 -c 'open(\"nope.txt\")'")),
                           reply(call("write_file", path="a.txt/b", content="x\n")), answer("Done."))
    shell, write = (request["messages"][-1]["content"] for request in fake.requests[1:3])
    assert f"\n{workspace}\n" in shell and f'File "<string>", line 1' in shell
    assert str(runs_folder) not in shell + write and "attempt-1" not in shell + write


def test_a_path_under_the_workspaces_own_path_reaches_the_copy(run_agent, fake, workspace):
    """The model sees its workspace's own path (in pwd, in tracebacks) and writes there by that path:
    the call reaches the run's copy, and lands; a path beside it is still outside."""
    code, _, _ = run_agent(reply(call("write_file", path=f"{workspace}/fizz.py", content="print(1)\n")),
                           reply(call("read_file", path=f"{workspace}/fizz.py")),
                           reply(call("write_file", path=f"{workspace}x/evil.py", content="x\n")), answer("Done."))
    written, read, outside = (request["messages"][-1]["content"] for request in fake.requests[1:4])
    assert not written.startswith("Error") and read.startswith("print(1)"), (written, read)
    assert outside.startswith("Error: permission denied") and not (workspace.parent / f"{workspace.name}x").exists()
    assert code == 0 and (workspace / "fizz.py").read_text() == "print(1)\n"


@needs_bwrap
def test_a_check_finds_the_parent_projects_runner_configuration(run_agent, fake, workspace):
    """The workspace is a package of a larger project: its pytest.ini and conftest.py (a fixture)
    are in the folder above, as in the real folder, where the check passes."""
    parent = workspace.parent
    (parent / "pytest.ini").write_text("[pytest]\naddopts = -p no:cacheprovider\n")
    (parent / "conftest.py").write_text("import pytest\n\n\n@pytest.fixture\ndef answer():\n    return 42\n")
    (workspace / "test_answer.py").write_text("def test_answer(answer):\n    assert answer == 42\n")
    check = f"{sys.executable} -m pytest -q test_answer.py"
    assert subprocess.run(check.split(), cwd=workspace, capture_output=True).returncode == 0  # the real folder
    code, _, err = run_agent(answer("Nothing to do."), flags=["--check", check, "--attempts", "1"])
    assert code == 0, err


@needs_bwrap
def test_a_replay_of_a_run_whose_output_holds_its_path_does_not_diverge(run_agent, workspace, tmp_path):
    (workspace / "a.py").write_text("x = 1\n")
    run_agent(reply(call("run_shell", command="pwd && ls \"$PWD\"")), answer("Done."))
    log = workspace.parent / "transcript.jsonl"
    proc = subprocess.run([*AGENT, "--replay", str(log), "--base-url", "http://127.0.0.1:9/v1", "--workspace",
                           str(workspace), "--transcript", str(tmp_path / "replayed.jsonl")],
                          capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert "replay: 0 divergence(s) from the recording" in proc.stderr, proc.stderr


@needs_bwrap
def test_a_folder_turned_into_a_file_under_a_check_lands_whole(run_agent, fake, workspace):
    (workspace / "conf").mkdir()
    (workspace / "conf" / "settings.py").write_text("DEBUG = False\n")
    code, _, err = run_agent(reply(call("run_shell", command="rm -rf conf && printf 'DEBUG = True\\n' > conf")),
                             answer("Done."), flags=["--check", "grep -q 'DEBUG = True' conf", "--attempts", "1"])
    assert code == 0, err  # on a32ed05: a traceback, recorded as exit 130
    assert (workspace / "conf").read_text() == "DEBUG = True\n"
    assert "not applied" not in err and "- deleted conf/settings.py" in err and "+ created conf" in err


@needs_bwrap
def test_what_the_check_writes_never_lands(run_agent, fake, workspace):
    (workspace / "main.py").write_text("x = 1\n")
    code, _, err = run_agent(reply(call("run_shell", command="printf 'x = 2\\n' > main.py")), answer("Done."),
                             flags=["--check", "grep -q 'x = 2' main.py && echo passed > report.txt && mkdir -p "
                                    ".pytest_cache/v && echo '{}' > .pytest_cache/v/lastfailed", "--attempts", "1"])
    assert code == 0, err
    assert (workspace / "main.py").read_text() == "x = 2\n"
    assert not (workspace / "report.txt").exists() and not (workspace / ".pytest_cache").exists()


@needs_bwrap
def test_a_run_folder_removed_mid_run_with_no_write_after_is_no_traceback(run_agent, fake, workspace, runs_folder):
    (workspace / "app.py").write_text("x = 1\n")
    clean_up = lambda: [shutil.rmtree(run) for run in runs_folder.iterdir()]  # noqa: E731
    code, _, err = run_agent(reply(call("run_shell", command="printf 'x = 2\\n' > app.py")),
                             then(clean_up, answer("Done.")))
    assert code == runs.CRASHED and "Traceback" not in err  # on a32ed05: a traceback, exit 1
    assert (workspace / "app.py").read_text() == "x = 1\n"


@needs_bwrap
@pytest.mark.parametrize("name", ["tests", "docs"])
def test_a_link_the_model_leaves_in_its_copy_leads_no_host_side_step_outside(run_agent, fake, workspace, name):
    """The model turns a folder of its copy into a link to a host folder. Building the check's view
    restores the tests and runner configuration as they were (tests/test_stats.py, docs/conftest.py);
    that may neither write through the link (test_stats.py at the host) nor remove what the host
    has under the restored name (a folder conftest.py/)."""
    host = workspace.parent / "host"
    (host / "conftest.py").mkdir(parents=True)
    (host / "test_stats.py").write_text("host's own\n")
    (host / "conftest.py" / "keep.txt").write_text("host's own\n")
    (workspace / "tests").mkdir()
    (workspace / "tests" / "test_stats.py").write_text("def test_ok():\n    assert True\n")
    (workspace / "docs").mkdir()
    (workspace / "docs" / "conftest.py").write_text("X = 1\n")
    (workspace / "docs" / "a.md").write_text("# a\n")
    before = {str(p.relative_to(workspace)): p.read_bytes() for p in workspace.rglob("*") if p.is_file()}
    code, _, err = run_agent(reply(call("run_shell", command=f"rm -rf {name} && ln -s {host} {name}")),
                             answer("Done."), flags=["--check", "python -m pytest -q -p no:cacheprovider tests",
                                                     "--attempts", "1"])
    assert {str(p.relative_to(host)): p.read_text() for p in host.rglob("*") if p.is_file()} == {
        "test_stats.py": "host's own\n", "conftest.py/keep.txt": "host's own\n"}
    after = {str(p.relative_to(workspace)): p.read_bytes() for p in workspace.rglob("*") if p.is_file()}
    shown = " ".join(err.split())
    assert all(after.get(path) == data or f"- deleted {path}" in shown for path, data in before.items())
    assert not (workspace / name).is_symlink() and f"not applied: {name}:" in shown and code == 0, err
