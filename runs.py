"""A run's life on disk: its folder under TOOLOOP_RUNS, its attempts, and landing the chosen one.

Each run gets a folder of its own (`folder()`), locked for as long as the run lives (an
fcntl.flock on `lock` in it, which the kernel drops when the process ends, however it ends), so
another run pruning old folders never takes a live one. Each attempt is a record (`Attempt`,
made by `begin()`): its number, its copy of the workspace, what the copy held as it began, and
an open handle on the copy's folder, held from its creation to the landing. The handle proves
the copy's identity: a copy that vanished (a cache clean-up) or was made again by something else
is another folder, and lands nothing. At the end `land()` plans and applies the chosen attempt's
change set (changes.plan, changes.apply), from the attempt's own copy only, never from what the
check ran on, and of it only what the check saw. An attempt that will not land (again) keeps only
what it changed (`shrink()`): a run costs about its workspace once, a kept run only its changes.

Left out on purpose: keeping runs' folders forever (only the KEEP_RUNS newest stay, and any that
is still running).
"""

import fcntl
import os
import re
import shutil
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import changes
import checkview
import protect
from tools import Settings

KEEP_RUNS = 20  # the newest runs' folders kept under TOOLOOP_RUNS
RUN_NAME = re.compile(r"\d{8}-\d{6}-\w{8}")  # what folder() names them: the time the run began
HELD: dict[Path, int] = {}  # each live run folder's lock, held open by this process
BEGUN: dict[Path, list] = {}  # each live run's attempts, in order, until land()
CRASHED = 70  # cli's exit code for tooloop's own failure
STOPPED = {130: "the run was interrupted", CRASHED: "tooloop itself failed"}  # ends after which nothing lands


class Unusable(Exception):
    """TOOLOOP_RUNS cannot hold this run's copies (a configuration error: one line, exit 2)."""


@dataclass
class Attempt:
    number: int
    copy: Path  # the attempt's copy of the workspace: the tools and the sandbox work there
    start: changes.Start  # what the copy held as it began: what the run saw
    unread: list[str] = field(default_factory=list)  # what could not be copied
    code: int = 130
    answer: str = ""
    passed: bool = False
    ended: str = "interrupted"  # how it ended, for the end line: "passed", "wrote nothing", "out of time", ...
    seconds: float = 0.0  # how long it ran, from `began` (time.monotonic)
    began: float = field(default_factory=time.monotonic)
    only: set[str] | None = None  # the changes the check's view held, which may land (None: all)
    left_out: dict[str, str] = field(default_factory=dict)  # changes the view left out: path -> why
    handle: int = -1  # an open fd on the copy's folder, from begin() to land()


def folder(runs: Path, workspace: Path) -> Path:
    """A new folder for this run's attempts, under `runs` (TOOLOOP_RUNS, default
    ~/.cache/tooloop/runs; a relative path or a link is resolved once, here), locked while the
    run lives. Each holds copies of a workspace, so only the KEEP_RUNS newest stay: older runs'
    folders go as a run begins, unless their run still holds the lock. Nothing else is touched."""
    runs = Path(os.path.abspath(runs)).resolve()
    if runs == workspace or workspace in runs.parents:
        raise Unusable(f"TOOLOOP_RUNS ({runs}) is inside the workspace ({workspace}): each run would copy the "
                       "workspace into itself. Set TOOLOOP_RUNS to a folder outside it.")
    try:
        runs.mkdir(parents=True, exist_ok=True)
        made = Path(tempfile.mkdtemp(prefix=time.strftime("%Y%m%d-%H%M%S-"), dir=runs))
    except OSError as error:
        raise Unusable(f"cannot make a folder for the run's copies in TOOLOOP_RUNS ({runs}): {error.strerror}")
    lock = os.open(made / "lock", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    fcntl.flock(lock, fcntl.LOCK_EX)
    HELD[made] = lock
    kept = sorted(path for path in runs.iterdir() if RUN_NAME.fullmatch(path.name) and not path.is_symlink())
    for old in kept[:-KEEP_RUNS]:
        prune(old)
    return made


def prune(old: Path) -> None:
    """Delete an old run's folder, unless its run is alive (it holds the lock)."""
    try:
        lock = os.open(old / "lock", os.O_RDWR | os.O_NOFOLLOW)
    except FileNotFoundError:  # a run of a tooloop without locks: long over
        shutil.rmtree(old, ignore_errors=True)
        return
    except OSError:
        return
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(lock)
        return  # alive
    try:
        shutil.rmtree(old, ignore_errors=True)
    finally:
        os.close(lock)


def release(run: Path) -> None:
    """The run is over: its folder may be pruned by later runs."""
    if (lock := HELD.pop(run, None)) is not None:
        os.close(lock)


def begin(workspace: Path, run: Path, n: int) -> Attempt:
    """Attempt n: a fresh copy of the workspace in the run's folder, its start, and its handle."""
    for done in BEGUN.get(run, []):  # a new attempt begins only when the one before failed: it never lands
        shrink(done)
    copy = run / f"attempt-{n}"
    began, unread = changes.take(workspace, copy)
    handle = os.open(copy, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    BEGUN.setdefault(run, []).append(Attempt(n, copy, began, unread, handle=handle))
    return BEGUN[run][-1]


class OutOfTime(Exception):
    """The attempt's share of the run's --budget is spent (raised between turns, or in a reply)."""


def wrote_nothing(attempt: Attempt) -> bool:
    """Is the attempt's copy as it began, but for what tools cache for themselves (`__pycache__`,
    `.pytest_cache`): did the model answer with a plan or prose instead of changing a file?"""
    return all(any(part == "__pycache__" or protect.inert(part) for part in change.path.split("/")[:-1])
               for change in changes.changed(attempt.copy, attempt.start))


def spent(run: Path) -> str:
    """How the run's attempts were spent, for the end line: "3 attempts in 212 s: 1 wrote nothing,
    2 failed the check" (the counts in the order they first happened)."""
    began = BEGUN.get(run, [])
    ends = Counter(a.ended for a in began)  # counts in the order each end first happened
    return (f"{len(began)} attempt{'s' * (len(began) != 1)} in {sum(a.seconds for a in began):.0f} s: "
            + ", ".join(f"{count} {end}" for end, count in ends.items()))


def intact(attempt: Attempt) -> bool:
    """Is the attempt's copy the very folder begin() made? (An open handle keeps its inode from
    being reused, so a folder made again at the same path is told apart.)"""
    try:
        held, there = os.fstat(attempt.handle), os.lstat(attempt.copy)
    except OSError:
        return False
    return held.st_nlink > 0 and (held.st_dev, held.st_ino) == (there.st_dev, there.st_ino)


def land(workspace: Path, attempt: Attempt | None, settings: Settings, code: int, check: str | None,
         run: Path) -> tuple[list, list[str], str, int]:
    """Apply the chosen attempt's change set to the user's workspace, if it may land: without a
    check, the one attempt's, unless the run was interrupted or tooloop failed (STOPPED); with one,
    only the passing attempt's, and of it only what its check saw (`attempt.only`). Returns
    (changes applied, why others were not, a line that says where the attempts' files are, the
    run's exit code: 130 after a Ctrl-C while landing, CRASHED when the landing could not be
    made at all: an error undid it, or the copy is not the one the attempt began in)."""
    release(run)
    if attempt is None and not check and BEGUN.get(run):
        attempt = BEGUN[run][-1]  # without a check, the one attempt lands however it ended (not on Ctrl-C)
    try:
        return landed_from(workspace, attempt, settings, code, check, run)
    finally:
        for each in BEGUN.pop(run, []):
            shrink(each)
            os.close(each.handle)


def shrink(attempt: Attempt) -> None:
    """What an attempt that will not land (again) keeps in the run's folder: the files it created or
    changed, and its start beside it (attempt-N.json, which names what it deleted). Its unchanged
    files and the view its check ran on go, so a run costs about its workspace once plus what it
    changed, and a kept run only what it changed. Never through a link: only names are removed."""
    shutil.rmtree(checkview.place(attempt.copy), ignore_errors=True)  # (a check cut short leaves its view)
    if not intact(attempt):
        return  # not the folder begin() made: leave it alone
    for folder, dirs, names in os.walk(attempt.copy, topdown=False):
        rel = os.path.relpath(folder, attempt.copy).replace(os.sep, "/")
        for name in names + [d for d in dirs if os.path.islink(os.path.join(folder, d))]:
            path = name if rel == "." else f"{rel}/{name}"
            info = os.lstat(os.path.join(folder, name))
            if attempt.start.files.get(path) == changes.stamp(info):
                os.unlink(os.path.join(folder, name))
        if rel != "." and rel in attempt.start.folders and not os.listdir(folder):
            os.rmdir(folder)


def landed_from(workspace: Path, attempt: Attempt | None, settings: Settings, code: int, check: str | None,
                run: Path) -> tuple[list, list[str], str, int]:
    if attempt is None and not (run.is_dir() and any(path.name.startswith("attempt-") for path in run.iterdir())):
        shutil.rmtree(run, ignore_errors=True)
        return [], [], "no attempt began: the workspace is as it was", code
    if code in STOPPED or (check and code != 0) or attempt is None:
        what = STOPPED.get(code) or ("no attempt passed the check" if check else "the run failed")
        return [], [], f"{what}: the workspace is as it was; the attempts' files are in {run}", code
    if not intact(attempt):
        return [], [f"(all changes): the run's copy {attempt.copy} vanished or was replaced while the run went on, "
                    "so what it holds is not the run's work"], "nothing was applied: the workspace is as it was", CRASHED
    named = {str(path.relative_to(workspace)) for path in settings.named}
    try:
        plan = changes.plan(workspace, attempt.copy, attempt.start, named, attempt.only, attempt.left_out)
        landed, refused = changes.apply(plan, attempt.copy, workspace, attempt.handle)
    except KeyboardInterrupt:
        return [], [], f"interrupted while landing: nothing was applied; the run's files are in {run}", 130
    except OSError as error:
        return [], [f"(all changes): none applied, the workspace is as it was: an error ({error})"], \
            f"the run's files are in {attempt.copy}", CRASHED
    if plan.interrupted:
        return landed, refused, f"interrupted while landing, after all of it was applied; the run's files are kept " \
                                f"in {run}", 130
    chosen = f"attempt {attempt.number} passed the check; " if check else ""
    return landed, refused, f"{chosen}the run's files are kept in {run}", code
