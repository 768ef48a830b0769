"""A run works on a copy of the workspace; what it changed reaches the user's files as a plan, then an apply.

Every attempt starts from a fresh copy of the workspace as it was before the run (`copy()`), and
what the copy held as it began is kept (`Start`: each file's size, time and mode, and its
folders). The tools and the sandbox see only that copy. At the end three states are compared,
as git's checkout compares the index, the commit and the working tree:

- the workspace as the run began (the start: what the run saw),
- the attempt's result (the copy as the run left it: `changed()` lists what the run created,
  changed and deleted, against its own start, whatever the workspace did meanwhile),
- the workspace now (the user may have worked on while the run went on).

`plan()` decides, change by change, what may land. A change whose target the user changed
meanwhile is refused ("would be overwritten"), and so is one that would remove anything the run
did not see: a file the user created, or a folder holding files that were never in the copy (a
`.env`, which is never copied, or `notes/todo.md` made while the run wrote a file `notes`).
Refusing one change never stops the others. `apply()` then lands the plan: first every new file
is staged under a short name in tooloop's own folder (`.tooloop/landing-*`), interruptible and
with nothing in the workspace touched yet; then, with Ctrl-C held, deletions before creations,
each by a rename, with every step journalled, so an error part-way undoes the steps done and the
workspace is as it was: the whole plan lands, or none of it, folders included.

Files are compared and copied in blocks (`BLOCK`), so memory does not grow with a file's size.

Left out on purpose: an attempt's copy is a plain copy. Hard links would cost nothing, but a
command writing in place (`>>`, an editor saving in place) would change the user's file through
them (the check's view links only to the attempt's own copy, and mends what a check writes
through: checkview.settle); reflinks exist only on btrfs and xfs. A crash of the machine (not of tooloop) during the renames of the
apply can leave part of them done; the old versions are then in `.tooloop/landing-*`. Empty
folders are not changes: a folder lands as the files in it do. What the check runs on is
checkview.py's; which files may land at all is protect.landing's.
"""

import difflib
import errno
import json
import os
import shutil
import signal
import stat
import threading
from dataclasses import dataclass, field
from pathlib import Path

import protect

SKIPPED = {".tooloop"}  # tooloop's own transcripts and state stay out of every copy
BLOCK = 1 << 20  # files are read in blocks of this size: memory does not grow with a file
COUNTED = 8 << 20  # a file larger than this is not diffed for the summary's line counts


@dataclass
class Change:
    path: str  # relative to the workspace, with forward slashes
    kind: str  # "created" | "changed" | "deleted"
    added: int = 0  # lines, for the summary (0 for a binary or a large file)
    removed: int = 0


@dataclass
class Start:
    """What an attempt's copy held as it began: the run saw exactly this."""
    files: dict[str, list[int]]  # relative path -> stamp() of each regular file and link in the copy
    folders: set[str] = field(default_factory=set)  # relative paths of its folders
    # the workspace's files just before the copy, by identity(): what the user's own edits change
    workspace: dict[str, list[int]] = field(default_factory=dict)


@dataclass
class Plan:
    deletions: list[Change]  # applied first
    writes: list[Change]  # created and changed files, each staged, then renamed into place
    emptied: list[str]  # folders of the run's start that a created file replaces: each empty by then
    pruned: list[str]  # folders the attempt removed, removed after the deletions if they are empty then
    refused: list[str]  # "path: why", for the end of the run and the transcript
    interrupted: bool = False  # a Ctrl-C came during the renames: held until all of them were done


def copy(workspace: Path, dest: Path, copy_file=shutil.copy2) -> list[str]:
    """Make a fresh copy of `workspace` at `dest`: regular files (with their modes, each by
    `copy_file(source, target)`), folders and symlinks. Sockets, FIFOs and devices are not copied
    (a host service's socket must not be reachable from the sandbox), nor .tooloop, nor secret
    files (.env: protect.SECRETS). Returns what could not be read, and so is not in the copy (nor,
    since the walk cannot read it either, in the change set)."""
    def ignore(folder: str, names: list[str]) -> set[str]:
        skipped = set()
        for name in names:
            path = os.path.join(folder, name)
            mode = os.lstat(path).st_mode
            if (folder == str(workspace) and name in SKIPPED) or protect.kind(name) == "secret" or not (
                    stat.S_ISREG(mode) or stat.S_ISDIR(mode) or stat.S_ISLNK(mode)):
                skipped.add(name)
        return skipped
    dest.parent.mkdir(parents=True, exist_ok=True)
    try:
        shutil.copytree(workspace, dest, symlinks=True, ignore=ignore, copy_function=copy_file)
    except shutil.Error as error:  # what could not be read (a folder its owner may not list) stays out
        return sorted(os.path.relpath(source, workspace) for source, _, _ in error.args[0])
    return []


def walk(root: Path) -> tuple[dict[str, os.stat_result], set[str]]:
    """Every regular file and symlink under `root` by relative path, as copy() would copy them, and
    every folder. A link is never followed: a link to a folder is listed as a file."""
    found, folders = {}, set()
    for folder, dirs, names in os.walk(root):
        rel = os.path.relpath(folder, root)
        for name in [*names, *(d for d in dirs if os.path.islink(os.path.join(folder, d)))]:
            path = name if rel == "." else f"{rel}/{name}".replace(os.sep, "/")
            if (rel == "." and name in SKIPPED) or protect.kind(name) == "secret":
                continue
            info = os.lstat(os.path.join(folder, name))
            if stat.S_ISREG(info.st_mode) or stat.S_ISLNK(info.st_mode):
                found[path] = info
        dirs[:] = [d for d in dirs if not (rel == "." and d in SKIPPED) and not os.path.islink(os.path.join(folder, d))]
        folders.update(d if rel == "." else f"{rel}/{d}".replace(os.sep, "/") for d in dirs)
    return found, folders


def stamp(info: os.stat_result) -> list[int]:
    return [info.st_size, info.st_mtime_ns, info.st_mode]


def identity(info: os.stat_result) -> list[int]:
    """A stamp that also changes when a file is replaced by one of the same size and time (cp -p,
    tar, rsync -t): its inode and its change time, which no one can set back."""
    return [info.st_size, info.st_mtime_ns, info.st_mode, info.st_ino, info.st_ctime_ns]


def take(workspace: Path, dest: Path) -> tuple[Start, list[str]]:
    """A fresh copy of the workspace at `dest` and its Start, kept beside it (attempt-N.json), and
    what could not be copied. The workspace is looked at first: a file the user changes while it is
    copied then counts as the user's, whose change the landing never overwrites."""
    before, _ = walk(workspace)
    unread = copy(workspace, dest)
    found, folders = walk(dest)
    began = Start({path: stamp(info) for path, info in found.items()}, folders,
                  {path: identity(info) for path, info in before.items()})
    dest.with_name(dest.name + ".json").write_text(json.dumps(
        {"files": began.files, "folders": sorted(folders), "workspace": began.workspace}))
    return began, unread


def untouched(info: os.stat_result, rel: str, began: Start) -> bool:
    """Has the user left the workspace's file `rel` as it was when the run's copy was taken?"""
    return identity(info) == began.workspace.get(rel)


def recalled(attempt: Path) -> Start | None:
    """The start that take() kept for this attempt's copy, if any."""
    kept = attempt.with_name(attempt.name + ".json")
    if not kept.is_file():
        return None
    data = json.loads(kept.read_text())
    return Start(data["files"], set(data["folders"]), data["workspace"])


def changed(copy: Path, began: Start) -> list[Change]:
    """What the attempt itself created, changed and deleted: its copy now against its start,
    whatever the workspace did meanwhile. A file whose size, time and mode are as they began is
    unchanged; one whose stamp moved is a candidate, which plan() compares byte for byte."""
    after, _ = walk(copy)
    found = []
    for path in sorted(after.keys() | began.files.keys()):
        if path not in after:
            found.append(Change(path, "deleted"))
        elif path not in began.files:
            found.append(Change(path, "created"))
        elif stamp(after[path]) != began.files[path]:
            found.append(Change(path, "changed"))
    return found


# --- comparing files, in blocks ---------------------------------------------------------------

def same(a: Path, b: Path) -> bool:
    """Do the two paths hold the same thing (type, mode, bytes or link target)? Read in blocks."""
    try:
        info_a, info_b = os.lstat(a), os.lstat(b)
    except OSError:
        return False
    if info_a.st_mode != info_b.st_mode:
        return False
    if stat.S_ISLNK(info_a.st_mode):
        return os.readlink(a) == os.readlink(b)
    if not stat.S_ISREG(info_a.st_mode) or info_a.st_size != info_b.st_size:
        return False
    with open(a, "rb") as fa, open(b, "rb") as fb:
        while block := fa.read(BLOCK):
            if block != fb.read(BLOCK):
                return False
    return True


def text_lines(path: Path) -> list[str] | None:
    """The file's lines, or None for a symlink, a binary file or one too large to diff."""
    if path.is_symlink() or not path.is_file() or path.stat().st_size > COUNTED:
        return None
    data = path.read_bytes()
    return None if b"\0" in data[:8192] else data.decode("utf-8", "replace").splitlines()


def lines(path: Path) -> int:
    return len(text_lines(path) or [])


def counted(old: Path, new: Path) -> tuple[int, int]:
    """(lines added, lines removed) from old to new, as `git diff --stat` counts them."""
    a, b = text_lines(old), text_lines(new)
    if a is None or b is None:
        return 0, 0
    added = removed = 0
    for line in difflib.unified_diff(a, b, lineterm="", n=0):
        if line.startswith("+") and not line.startswith("+++"):
            added += 1
        elif line.startswith("-") and not line.startswith("---"):
            removed += 1
    return added, removed


# --- the plan ---------------------------------------------------------------------------------

def plan(workspace: Path, copy: Path, began: Start, named: set[str], only: set[str] | None = None,
         left_out: dict[str, str] | None = None) -> Plan:
    """Which of the attempt's changes may land on the workspace as it is now, and why the others
    may not. `named`: relative paths the user named with --file; `only`: the changes the check saw
    (None: all); `left_out`: why the check's view left a change out.

    For example, with `conf/settings.py` and `conf/.env` in the workspace (the .env never copied)
    and a run that replaced the folder conf by a file: the deletion of conf/settings.py lands, the
    file conf is refused (conf/ holds .env, which the run never saw)."""
    mine = f"; the run's version is in {copy}"
    deletions, writes, emptied, refused = [], [], [], []
    allowed = []
    for change in changed(copy, began):  # first what the check's view and the policy say
        why = None
        if only is not None and change.path not in only:
            why = "left out of the check's view: " + (left_out or {}).get(change.path, "the check did not see it")
        if why := why or protect.landing(change.path, change.kind, copy, workspace, named):
            refused.append(f"{change.path}: {why}")
        else:
            allowed.append(change)
    for change in (c for c in allowed if c.kind == "deleted"):
        info = lstat(workspace / change.path)
        if info is None:
            continue  # already gone from the workspace: nothing to do
        if not untouched(info, change.path, began):
            refused.append(f"{change.path}: you changed it in the workspace while the run went on, so it was "
                           f"not deleted{mine}")
            continue
        change.removed = lines(workspace / change.path)
        deletions.append(change)
    gone = {change.path for change in deletions}
    for change in (c for c in allowed if c.kind != "deleted"):
        rel = change.path
        info = lstat(workspace / rel)
        if info is not None and not stat.S_ISDIR(info.st_mode) and same(workspace / rel, copy / rel):
            continue  # the workspace already holds exactly this
        if change.kind == "changed" and (info is None or not untouched(info, rel, began)):
            what = "deleted" if info is None else "changed"
            refused.append(f"{rel}: you {what} it in the workspace while the run went on{mine}")
            continue
        if change.kind == "created" and info is not None:
            if not stat.S_ISDIR(info.st_mode) or rel not in began.folders:
                what = "the folder " + rel + "/" if stat.S_ISDIR(info.st_mode) else "it"
                refused.append(f"{rel}: you created {what} in the workspace while the run went on{mine}")
                continue
            if unseen := unseen_in(workspace, rel, gone, began.folders):
                refused.append(f"{rel}: the folder {rel}/ in the workspace holds {unseen}, which the run did not "
                               f"see: it is not removed{mine}")
                continue
        if blocked := next((p for p in parents(rel) if (i := lstat(workspace / p)) and not stat.S_ISDIR(i.st_mode)
                            and p not in gone), None):
            refused.append(f"{rel}: {blocked} is a file in the workspace, not a folder{mine}")
            continue
        if info is not None and stat.S_ISDIR(info.st_mode):
            emptied += folders_in(workspace, rel)  # a folder the run saw, empty once the plan's deletions are made
        if change.kind == "created":
            change.added = lines(copy / rel)
        else:
            change.added, change.removed = counted(workspace / rel, copy / rel)
        writes.append(change)
    pruned = sorted({p for change in deletions for p in parents(change.path) if not os.path.lexists(copy / p)},
                    key=lambda p: -p.count("/"))
    return Plan(deletions, writes, sorted(set(emptied), key=lambda p: -p.count("/")), pruned, refused)


def lstat(path: Path) -> os.stat_result | None:
    try:
        return os.lstat(path)
    except OSError:  # missing, or beneath a file (ENOTDIR)
        return None


def parents(rel: str) -> list[str]:
    """a/b/c.py -> ['a', 'a/b']"""
    parts = rel.split("/")
    return ["/".join(parts[:i]) for i in range(1, len(parts))]


def unseen_in(workspace: Path, rel: str, gone: set[str], folders: set[str]) -> str | None:
    """What in the workspace's folder `rel` a run replacing it would remove without having seen it:
    anything but the files the plan deletes and the folders the run began with (None: nothing)."""
    for folder, dirs, names in os.walk(workspace / rel):  # never follows a link
        here = os.path.relpath(folder, workspace).replace(os.sep, "/")
        for name in names + [d for d in dirs if os.path.islink(os.path.join(folder, d))]:
            if f"{here}/{name}" not in gone:
                return f"{here}/{name}"
        for name in dirs:
            if f"{here}/{name}" not in folders:
                return f"{here}/{name}/"
    return None


def folders_in(workspace: Path, rel: str) -> list[str]:
    """The folder `rel` and every folder beneath it, deepest first: removed in this order."""
    found = [rel]
    for folder, dirs, _ in os.walk(workspace / rel):
        found += [os.path.relpath(os.path.join(folder, d), workspace).replace(os.sep, "/") for d in dirs]
    return sorted(found, key=lambda p: -p.count("/"))


# --- the apply --------------------------------------------------------------------------------

def apply(plan: Plan, copy: Path, workspace: Path, held: int | None = None) -> tuple[list[Change], list[str]]:
    """Land the plan: (the changes applied, why others were not). All of it lands or none of it.

    1. Stage: every new file is copied from the attempt (each path opened beneath the copy's folder,
       or beneath `held`, an open handle on it, never through a link) to `.tooloop/landing-*/N` in the workspace: a short name on the same
       filesystem, whatever the length of the target's name. Ctrl-C here stops with nothing changed.
    2. Commit, with Ctrl-C held: deletions (each moved into the staging folder, so it can come
       back), the folders a file replaces, then each write by a rename (a changed file's old
       version moved aside first). Every step is journalled; an error undoes them in reverse and
       is raised: the workspace is as it was."""
    if not plan.deletions and not plan.writes:
        return [], plan.refused
    stage = staging(workspace)
    try:
        for i, change in enumerate(plan.writes):
            staged_copy(copy, change.path, stage / str(i), held)
    except BaseException:
        shutil.rmtree(stage, ignore_errors=True)
        raise
    journal: list[tuple[str, Path, Path | None]] = []
    with held_interrupt(raising=False) as held:
        try:
            commit(plan, workspace, stage, journal)
        except OSError:
            undo(journal)
            shutil.rmtree(stage, ignore_errors=True)
            raise
        shutil.rmtree(stage, ignore_errors=True)
    plan.interrupted = bool(held.held)
    try:
        stage.parent.rmdir()  # .tooloop, if the landing made it and nothing else is there
    except OSError:
        pass
    return plan.deletions + plan.writes, plan.refused


def staging(workspace: Path) -> Path:
    """A fresh folder for the staged files, in tooloop's own folder of the workspace."""
    own = workspace / ".tooloop"
    if os.path.islink(own):
        raise OSError(errno.ELOOP, "the workspace's .tooloop is a symbolic link", str(own))
    own.mkdir(exist_ok=True)
    for n in range(1000):
        try:
            (own / f"landing-{os.getpid()}-{n}").mkdir()
            return own / f"landing-{os.getpid()}-{n}"
        except FileExistsError:
            continue
    raise OSError(errno.EEXIST, "no free staging folder", str(own))


def open_beneath(root: Path, rel: str, held: int | None = None) -> int:
    """An fd for the regular file `root/rel` (`held`: an open fd on root), opened one component at a
    time, never through a link."""
    parts = rel.split("/")
    fd = os.dup(held) if held is not None else os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    try:
        for part in parts[:-1]:
            inner = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
            os.close(fd)
            fd = inner
        return os.open(parts[-1], os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=fd)
    finally:
        os.close(fd)


def staged_copy(copy: Path, rel: str, dest: Path, held: int | None = None) -> None:
    """Copy the attempt's regular file `rel` to `dest` in blocks, with its mode and time."""
    source = open_beneath(copy, rel, held)
    with os.fdopen(source, "rb") as f:
        info = os.fstat(f.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise OSError(errno.EINVAL, "not a regular file in the run's copy", rel)
        with open(dest, "xb") as out:
            shutil.copyfileobj(f, out, BLOCK)
    os.chmod(dest, stat.S_IMODE(info.st_mode))
    os.utime(dest, ns=(info.st_atime_ns, info.st_mtime_ns))


def commit(plan: Plan, workspace: Path, stage: Path, journal: list) -> None:
    """The renames of apply(), each journalled as (what, path, where it went) for undo()."""
    for i, change in enumerate(plan.deletions):
        target = workspace / change.path
        os.rename(target, stage / f"deleted-{i}")
        journal.append(("moved", target, stage / f"deleted-{i}"))
    for rel in plan.emptied:
        os.rmdir(workspace / rel)  # empty by now: it fails, and all is undone, if anything came meanwhile
        journal.append(("removed", workspace / rel, None))
    for i, change in enumerate(plan.writes):
        target = workspace / change.path
        for rel in parents(change.path):
            if not os.path.lexists(workspace / rel):
                os.mkdir(workspace / rel)
                journal.append(("made", workspace / rel, None))
        if change.kind == "changed":
            os.rename(target, stage / f"old-{i}")
            journal.append(("moved", target, stage / f"old-{i}"))
        if os.path.lexists(target):  # came meanwhile: leave it and undo all
            raise FileExistsError(errno.EEXIST, "created in the workspace while landing", str(target))
        os.rename(stage / str(i), target)
        journal.append(("placed", target, None))
    for rel in plan.pruned:  # the folders a deletion emptied, where the attempt removed them too
        if empty(workspace / rel):
            os.rmdir(workspace / rel)
            journal.append(("removed", workspace / rel, None))


def empty(folder: Path) -> bool:
    try:
        return not os.listdir(folder)
    except OSError:
        return False


def undo(journal: list) -> None:
    """Reverse the journalled steps, last first: the workspace is as it was before commit()."""
    for what, path, aside in reversed(journal):
        try:
            if what == "moved":
                os.rename(aside, path)
            elif what == "removed":
                os.mkdir(path)
            elif what == "made":
                os.rmdir(path)
            elif what == "placed":
                os.unlink(path)
        except OSError:
            continue  # subtle: best effort; what cannot be put back stays in .tooloop/landing-*


class held_interrupt:
    """Within it, a Ctrl-C is held and raised at its end (or only kept in `held`, with raising=False):
    a few renames are never cut in half."""

    def __init__(self, raising: bool = True):
        self.raising = raising

    def __enter__(self):
        self.held, self.main = [], threading.current_thread() is threading.main_thread()
        if self.main:
            self.previous = signal.signal(signal.SIGINT, lambda *_: self.held.append(1))
        return self

    def __exit__(self, *exc):
        if self.main:
            signal.signal(signal.SIGINT, self.previous)
            if self.held and not exc[0] and self.raising:
                raise KeyboardInterrupt
        return False
