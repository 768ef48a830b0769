"""A run works on a copy of the workspace; what it changed reaches the user's files as one change set.

Every attempt (one run without --check, up to --attempts with it) starts from a fresh copy of the
workspace as it was before the run: `copy()`. The tools and the sandbox see only that copy, so
nothing a run does touches the user's files while it runs. At the end, `diff()` lists what the
attempt created, changed and deleted, and `apply()` lands that change set on the real workspace
(without --check: whatever the run's end, but a Ctrl-C; with it: only a passing attempt's), each
file as a whole (written beside its target, then renamed over it) and with Ctrl-C held, so an
interrupt never leaves half of an attempt applied. `protect.landing` decides which changes may land.

Left out on purpose: copies are plain copies (no reflinks), so a huge workspace costs its size
once per attempt. What the check runs on is checkview.py's.
"""

import difflib
import json
import os
import shutil
import signal
import stat
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path

import protect

SKIPPED = {".tooloop"}  # tooloop's own transcripts and state stay out of every copy


@dataclass
class Change:
    path: str  # relative to the workspace, with forward slashes
    kind: str  # "created" | "changed" | "deleted"
    added: int = 0  # lines, for the summary (0 for a binary file)
    removed: int = 0
    conflict: bool = False  # you changed the same file in the workspace while the run went on


def copy(workspace: Path, dest: Path) -> list[str]:
    """Make a fresh copy of `workspace` at `dest`: regular files (with their modes), folders and
    symlinks. Sockets, FIFOs and devices are not copied (a host service's socket must not be
    reachable from the sandbox), nor .tooloop, nor secret files (.env: protect.SECRETS). Returns
    what could not be read, and so is not in the copy (nor, since the walk cannot read it either,
    in the change set)."""
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
        shutil.copytree(workspace, dest, symlinks=True, ignore=ignore)
    except shutil.Error as error:  # what could not be read (a folder its owner may not list) stays out
        return sorted(os.path.relpath(source, workspace) for source, _, _ in error.args[0])
    return []


def files(root: Path) -> dict[str, os.stat_result]:
    """Every regular file and symlink under `root`, by relative path, as copy() would copy them."""
    found = {}
    for folder, dirs, names in os.walk(root):
        rel = os.path.relpath(folder, root)
        for name in [*names, *(d for d in dirs if os.path.islink(os.path.join(folder, d)))]:
            info = os.lstat(os.path.join(folder, name))
            path = name if rel == "." else f"{rel}/{name}".replace(os.sep, "/")
            if (rel == "." and name in SKIPPED) or protect.kind(name) == "secret":
                continue
            if stat.S_ISREG(info.st_mode) or stat.S_ISLNK(info.st_mode):
                found[path] = info
        dirs[:] = [d for d in dirs if not (rel == "." and d in SKIPPED) and not os.path.islink(os.path.join(folder, d))]
    return found


def stamp(info: os.stat_result) -> list[int]:
    return [info.st_size, info.st_mtime_ns, info.st_mode]


def stamps(root: Path) -> dict[str, list[int]]:
    """Size, modification time and mode of every file under `root`: how an attempt's copy looked
    when it began (copy() keeps the workspace's times), to tell what the attempt itself changed."""
    return {path: stamp(info) for path, info in files(root).items()}


def remember(attempt: Path) -> None:
    """Keep the attempt's stamps as it begins, beside it (attempt-N.json)."""
    attempt.with_name(attempt.name + ".json").write_text(json.dumps(stamps(attempt)))


def diff(workspace: Path, attempt: Path) -> list[Change]:
    """What the attempt created, changed and deleted, against the workspace as it is now.

    Only what the attempt itself changed counts (against its stamps from remember(), where there
    are any): a file you edited while the run went on is no change of the run's. If you changed a
    file that the attempt changed too, the change is marked `conflict`, and apply() leaves yours."""
    before, after = files(workspace), files(attempt)
    kept = attempt.with_name(attempt.name.removesuffix(".check") + ".json")
    start = json.loads(kept.read_text()) if kept.is_file() else None
    changes = []
    for path in sorted(before.keys() | after.keys() | (start or {}).keys()):
        if start is not None and (path in after) == (path in start) and (
                path not in after or stamp(after[path]) == start[path]):
            continue  # the attempt left it as it found it
        if path not in after and path in before:
            change = Change(path, "deleted", 0, lines(workspace / path))
        elif path in after and path not in before:
            change = Change(path, "created", lines(attempt / path), 0)
        elif path in after and not same(workspace / path, attempt / path):
            change = Change(path, "changed", *counted(workspace / path, attempt / path))
        else:
            continue
        if start is not None and (path in before) != (path in start) or (
                path in before and path in (start or {}) and stamp(before[path]) != start[path]):
            change.conflict = True
        changes.append(change)
    return changes


def same(a: Path, b: Path) -> bool:
    info_a, info_b = os.lstat(a), os.lstat(b)
    if stat.S_IFMT(info_a.st_mode) != stat.S_IFMT(info_b.st_mode) or info_a.st_mode != info_b.st_mode:
        return False
    if stat.S_ISLNK(info_a.st_mode):
        return os.readlink(a) == os.readlink(b)
    return info_a.st_size == info_b.st_size and a.read_bytes() == b.read_bytes()


def text_lines(path: Path) -> list[str] | None:
    """The file's lines, or None for a symlink or a binary file."""
    if path.is_symlink() or not path.is_file():
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


# --- landing the change set ---------------------------------------------------------------------

def apply(changes: list[Change], attempt: Path, workspace: Path, named: set[str]) -> tuple[list[Change], list[str]]:
    """Land the attempt's changes on the workspace: (the changes applied, why others were not).

    Each new file is first written beside its target under a temporary name; only when all are
    written are they renamed over their targets and the deletions made, with Ctrl-C held until
    the end. A failure while writing leaves the workspace as it was."""
    landed, refused, staged = [], [], []
    try:
        for change in changes:
            why = "you changed it in the workspace while the run went on; the run's version is in " + str(
                attempt) if change.conflict else protect.landing(change.path, change.kind, attempt, workspace, named)
            if why:
                refused.append(f"{change.path}: {why}")
                continue
            landed.append(change)
            if change.kind != "deleted":
                target = workspace / change.path
                target.parent.mkdir(parents=True, exist_ok=True)
                fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.tooloop-")
                os.close(fd)
                os.unlink(tmp)
                shutil.copy2(attempt / change.path, tmp, follow_symlinks=False)
                staged.append((tmp, target))
    except BaseException:
        for tmp, _ in staged:
            Path(tmp).unlink(missing_ok=True)
        raise
    with held_interrupt():
        for tmp, target in staged:
            if target.is_dir() and not target.is_symlink():
                shutil.rmtree(target)
            os.replace(tmp, target)
        for change in landed:
            if change.kind == "deleted":
                (workspace / change.path).unlink(missing_ok=True)
                prune(workspace / change.path, workspace, attempt)
    return landed, refused


def prune(path: Path, workspace: Path, attempt: Path) -> None:
    """Remove the folders a deletion emptied, where the attempt removed them too."""
    folder = path.parent
    while folder != workspace and not (attempt / folder.relative_to(workspace)).exists():
        try:
            folder.rmdir()
        except OSError:
            return
        folder = folder.parent


class held_interrupt:
    """Within it, a Ctrl-C is held and raised at its end: a few renames are never cut in half."""

    def __enter__(self):
        self.held, self.main = [], threading.current_thread() is threading.main_thread()
        if self.main:
            self.previous = signal.signal(signal.SIGINT, lambda *_: self.held.append(1))
        return self

    def __exit__(self, *exc):
        if self.main:
            signal.signal(signal.SIGINT, self.previous)
            if self.held and not exc[0]:
                raise KeyboardInterrupt
        return False
