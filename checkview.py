"""What the user's check runs on: a view built from what may change, so the check judges the code.

The one rule: **the check runs on the workspace as it was before the run, plus those of the
attempt's changes that cannot change how the check itself runs.** Those are

- changes to files that existed and are neither tests nor configuration (the code under test);
- new plain files (`html/index.html`, `data.csv`, `notes.md`);
- new modules whose import name nothing else provides: not the standard library's, not an
  installed distribution's (as the Python that runs the check finds them), not a test runner's;
- any new file the check command names (`--check "pytest -q test_new.py"`).

Left out, and so the check sees them as they were (or not at all): tests (`test_*.py`, `*_test.go`,
`*.spec.js`, anything under `tests/`), the runner's configuration (conftest.py, pytest.ini,
pytest.toml, tox.ini, setup.cfg, pyproject.toml, package.json, Makefile, ...) and what it pulls in
(a file a Makefile includes or names as a target, a module conftest.py loads as a plugin or
star-imports, a `-p` plugin), hidden files (`.pytest.ini`, `.coveragerc`; ignore lists and caches
aside), installed-package metadata (`*.dist-info`, `*.egg-info`, `.pth`), a new module named like
one that already exists (`iniconfig.py`, `unittest.py`, `json/__init__.py`), links, and a new test
the command does not name (`test_zz.py` that exits 0 while pytest collects it). Only a real module
counts as a name: a `.py` file (or a native module), or a folder with `__init__.py`:
`html/index.html` shadows nothing.

`for_check()` returns the view, the changes it holds (only these may land: what lands is what the
check saw) and those it left out, each with its reason (named at the end of the run, never
landed). The view is made anew for each check and deleted after it (settle);
landing never reads it, so nothing the check writes lands. It is the workspace with those changes
put in, where each file the attempt left as it began is a hard link to the attempt's own copy of
it (never to the user's file), so a view costs what the attempt changed, not the workspace again.
A check that writes through such a link (`>>`, a chmod) changes the attempt's file too: `settle()`,
after the check, makes every linked file whose change time moved again from the workspace, where
it is as the attempt began. Building the view never follows a link: a file is taken from the
attempt only if it is a regular file there, reached through folders, and put in the view only
beneath folders that are folders in the view (the model may have turned `tests/` into a link to a
host folder).

Left out on purpose: code under test that ends its own process with success while the tests
import it (`os._exit(0)`), returns an always-equal object or patches `assertEqual`: no rule about
files tells that from a real pass (pytest's per-test report was weighed: it reaches only the first
of these, and only where the check is pytest itself, not `make test`). A module that tests or
conftest.py import in the ordinary way (`from app import create`) is code under test like any
other. A linked file that the user changes in the workspace while the check runs, and the check
writes through, is not made again; it is not among the changes this check saw, so it does not
land from it.
"""

import ast
import functools
import importlib.metadata
import os
import posixpath
import re
import shlex
import shutil
import stat
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import changes
import protect

TEST_FOLDERS = {"test", "tests", "testing", "__tests__", "spec", "specs"}
RUNNER_FILES = {  # lower-cased names of the files that tell a test runner what to run and how
    "conftest.py", "pytest.ini", "pytest.toml", "tox.ini", "setup.cfg", "pyproject.toml", "setup.py", "noxfile.py",
    "package.json", "makefile", "gnumakefile", "cargo.toml", "go.mod", "pom.xml", "build.gradle",
    "build.gradle.kts", "cmakelists.txt", "sitecustomize.py", "usercustomize.py", "jest.config.js", "vitest.config.ts",
}
RUNNERS = {"pytest", "_pytest", "py", "pluggy", "nose", "nose2", "hypothesis", "coverage", "sitecustomize",
           "usercustomize", "conftest"}
MODULES = (".py", ".pyc", ".so", ".pyd")  # what Python imports by name
METADATA = (".dist-info", ".egg-info", ".egg-link", ".pth")  # what site and entry points read


@dataclass
class View:
    path: Path  # the copy the check runs on
    attempt: Path  # the attempt's copy it was made from, and the workspace (settle() needs both)
    workspace: Path
    seen: set[str] = field(default_factory=set)  # the attempt's changes it holds: only these may land
    left_out: dict[str, str] = field(default_factory=dict)  # the others: path -> why
    linked: dict[str, list[int]] = field(default_factory=dict)  # path -> identity() of the attempt's file it shares


def trusted(path: str) -> bool:
    """Is this a file a test runner trusts: a test, or a file that configures the runner?

        >>> [trusted(p) for p in ("test_stats.py", "tests/data.json", "conftest.py", "FooTest.java", "stats.py")]
        [True, True, True, True, False]
    """
    java = path.rsplit("/", 1)[-1].removesuffix(".java")  # JUnit's names keep their case: FooTest
    parts = path.lower().split("/")
    name = parts[-1]
    stem = name.split(".")[0]
    return (name in RUNNER_FILES or name.endswith(".pth") or any(part in TEST_FOLDERS for part in parts[:-1])
            or stem.startswith("test_") or stem.endswith(("_test", "_tests")) or stem in ("test", "tests")
            or ".test." in name or ".spec." in name or name.endswith(".java") and java.endswith(("Test", "Tests")))


def hidden(path: str) -> bool:
    """A hidden name on the path that tools read as configuration (`.pytest.ini`, `.config/x`);
    ignore lists and caches (protect.inert) aside."""
    return any(part.startswith(".") and not protect.inert(part) for part in path.split("/"))


@functools.cache
def provided() -> dict[str, str]:
    """{import name: who provides it} for the Python that runs the check (the sandbox puts this
    interpreter first on PATH): the standard library, its installed distributions, the runners.
    tooloop's own modules are left out: no check imports them."""
    names = {name: "the standard library" for name in sys.stdlib_module_names}
    for name, dists in importlib.metadata.packages_distributions().items():
        if set(dists) - {"tooloop"}:
            names.setdefault(name, f"installed: {', '.join(sorted(set(dists)))}")
    return {**names, **{name: "a test runner" for name in RUNNERS}}


def module_name(path: str, is_package) -> str | None:
    """The top-level import name a new file would take, if it is a module: `json.py` -> json,
    `html/__init__.py` -> html, `app/util.py` in a package `app` -> app; `html/index.html` -> None.
    `is_package(folder)` says whether a folder holds `__init__.py`."""
    parts = path.split("/")
    if not parts[-1].endswith(MODULES):
        return None
    top = len(parts) - 1
    while top > 0 and is_package("/".join(parts[:top])):
        top -= 1
    return parts[top].split(".")[0] if top == len(parts) - 1 else parts[top]


def named(command: str) -> set[str]:
    """The files a check command names: a path (`./tests/test_new.py::test_x` -> tests/test_new.py),
    or a module (`python -m unittest tests.test_new` -> tests/test_new.py). A bare word names no
    file of its own (`make test`: a new file `test` would make that target "up to date").

        >>> {"tests/test_new.py", "test_b.py"} <= named("python -m unittest tests.test_new && pytest ./test_b.py::t")
        True
        >>> "test" in named("make test")
        False
    """
    try:
        words = shlex.split(command)
    except ValueError:
        words = command.split()
    words = [word.split("::")[0] for word in words if not word.startswith("-")]
    paths = {posixpath.normpath(word) for word in words if "/" in word or "." in word}
    modules = {word.replace(".", "/") + ".py" for word in words if IDENTIFIER.fullmatch(word)}
    return {path for path in paths | modules if not path.startswith("..") and not posixpath.isabs(path)}


IDENTIFIER = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*")  # a dotted module name
TARGET = re.compile(r"^([^\s:#=.$%][^:#=$%\n]*?)\s*::?(?!=)", re.MULTILINE)  # make's `target:` (not `x := y`)
INCLUDE = re.compile(r"^\s*-?s?include\s+(.+)$", re.MULTILINE)  # make's include, -include, sinclude
PLUGIN = re.compile(r"(?:^|\s)-p\s*([\w.]+)")  # a pytest plugin named in addopts


def configuration(root: Path) -> set[str]:
    """The files (existing or not yet) that the runner configuration under `root` pulls in: what
    each Makefile includes, the workspace modules conftest.py, setup.py and noxfile.py import (and
    what those import, in turn: imported()), the plugins an ini file loads with `-p`. Links are not read."""
    found, todo = set(), []
    for folder, dirs, names in os.walk(root):
        rel = os.path.relpath(folder, root).replace(os.sep, "/")
        dirs[:] = [d for d in dirs if not os.path.islink(os.path.join(folder, d))]
        todo += [name if rel == "." else f"{rel}/{name}" for name in names if name.lower() in RUNNER_FILES
                 or name.endswith(".mk")]
    read = set()
    while todo:
        path = todo.pop()
        if path in read or not os.path.isfile(root / path) or os.path.islink(root / path):
            continue
        read.add(path)
        text = (root / path).read_text(errors="replace")
        folder = posixpath.dirname(path)
        pulled = set()
        if path.lower().endswith(("makefile", ".mk")):  # what it includes, and its targets: a file named
            # like a target makes the target "up to date", so make runs nothing for it
            pulled = {posixpath.normpath(posixpath.join(base, word)) for line in INCLUDE.findall(text) + TARGET.findall(text)
                      for word in line.split() if "$" not in word for base in ("", folder)}
        elif path.endswith(".py"):
            pulled = {file for name in imported(text) for base in ("", folder) for file in module_files(base, name)}
        if path.lower().endswith((".ini", ".toml", ".cfg")):
            pulled |= {file for name in PLUGIN.findall(text) for file in module_files("", name)}
        found |= pulled
        todo += sorted(pulled)
    return found


def imported(source: str) -> set[str]:
    """The modules a Python runner file makes plugins of: those it names in `pytest_plugins`, those
    it star-imports, and those it imports a `pytest_` hook from (`.x` for a relative one). Its
    other imports are code under test (conftest.py importing the app it tests). A file that does
    not parse names nothing.

        >>> sorted(imported("from helpers import *\\nfrom app import create\\npytest_plugins = ['fixtures.db']"))
        ['fixtures.db', 'helpers']
    """
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return set()
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and any(a.name == "*" or a.name.startswith("pytest_") for a in node.names):
            names.add("." * node.level + (node.module or ""))
        elif isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "pytest_plugins" for t in node.targets):
            names |= {n.value for n in ast.walk(node.value) if isinstance(n, ast.Constant) and isinstance(n.value, str)}
    return names


def module_files(base: str, name: str) -> set[str]:
    """Where the module `name`, and each package above it, would be found from `base`.

        >>> sorted(module_files("tests", ".helpers.db"))
        ['tests/helpers.py', 'tests/helpers/__init__.py', 'tests/helpers/db.py', 'tests/helpers/db/__init__.py']
    """
    parts = [part for part in name.split(".") if part]
    files = set()
    for n in range(1, len(parts) + 1):
        files |= {posixpath.join(base, *parts[:n - 1], parts[n - 1] + ".py"), posixpath.join(base, *parts[:n], "__init__.py")}
    return {posixpath.normpath(file) for file in files}


def left_out(change: changes.Change, attempt: Path, workspace: Path, config: set[str], command: set[str]) -> str | None:
    """Why the check does not see this change of the attempt's, or None if it does."""
    path = change.path
    if change.kind != "created":
        if trusted(path) or path in config or hidden(path):
            return "a test or the check's configuration: the check saw it as it was before the run"
        return None
    if any(part.endswith(METADATA) for part in path.split("/")) or path.endswith(METADATA):
        return "installed-package metadata, which a runner loads plugins and paths from"
    name = module_name(path, lambda folder: os.path.lexists(attempt / folder / "__init__.py"))
    if name and name in provided() and not os.path.lexists(workspace / name) and not any(
            os.path.lexists(workspace / f"{name}{suffix}") for suffix in MODULES):
        return f"a module named like {name} ({provided()[name]}), which it would replace for the check"
    if path in command:  # the user asked the check to run it
        return None
    if hidden(path) or path.split("/")[-1].lower() in RUNNER_FILES or path in config:
        return "it would configure the check's runner"
    if trusted(path):
        return "a new test the check does not name (a check runs a new test it names: --check \"pytest test_new.py\")"
    return None


def for_check(workspace: Path, attempt: Path, command: str, dest: Path | None = None,
              found: list[changes.Change] | None = None) -> View:
    """The view the check runs on (see the module docstring), at `dest` (by default beside the
    attempt's copy, as attempt-N.check): the workspace with those of the attempt's changes
    (`found`; by default changes.changed() against the attempt's start) that may reach the check."""
    dest = dest or place(attempt)
    began = changes.recalled(attempt)
    if found is None:
        found = changes.changed(attempt, began)
    if dest.is_symlink() or dest.is_file():
        dest.unlink()
    elif dest.exists():
        shutil.rmtree(dest)
    view = View(dest, attempt, workspace)
    changes.copy(workspace, dest, linker(workspace, attempt, began, {change.path for change in found}, view.linked))
    config, command_paths = configuration(dest), named(command)
    for change in sorted(found, key=lambda change: change.kind != "deleted"):  # deletions first
        why = left_out(change, attempt, workspace, config, command_paths) or put(change, attempt, dest)
        if why:
            view.left_out[change.path] = why
        else:
            view.seen.add(change.path)
    return view


def place(attempt: Path) -> Path:
    """Where the view of an attempt's copy is made: beside it, as attempt-N.check."""
    return attempt.with_name(attempt.name + ".check")


def linker(workspace: Path, attempt: Path, began: changes.Start | None, moved: set[str], linked: dict):
    """copy_file(source, target) for changes.copy: a file of the workspace that the user left as it
    was and the attempt left as it began becomes a hard link to the attempt's file (recorded in
    `linked`); any other, or where a link cannot be made, a copy of the workspace's."""
    root = os.path.realpath(attempt)

    def copy_file(source: str, target: str) -> str:
        rel = os.path.relpath(source, workspace).replace(os.sep, "/")
        own = os.path.join(root, rel)
        try:
            if (began and rel in began.files and rel not in moved and changes.untouched(os.lstat(source), rel, began)
                    and os.path.realpath(own) == own and stat.S_ISREG((info := os.lstat(own)).st_mode)
                    and changes.stamp(info) == began.files[rel]):
                os.link(own, target, follow_symlinks=False)
                linked[rel] = changes.identity(os.lstat(target))
                return target
        except OSError:  # another file system, too many links: a copy will do
            pass
        return shutil.copy2(source, target)
    return copy_file


def settle(view: View) -> list[str]:
    """After the check: each linked file the check wrote through (its identity moved: written,
    chmod-ed, or only unlinked in the view) is made again in the attempt from the workspace,
    where it is as the attempt began; then the view goes (while it is there, the attempt's files
    have a second link, and the tools refuse to write a linked file). Returns those made again."""
    began, again = changes.recalled(view.attempt), []
    for rel, before in view.linked.items():
        own, source = view.attempt / rel, view.workspace / rel
        try:
            if changes.identity(os.lstat(own)) == before or not changes.untouched(os.lstat(source), rel, began):
                continue
        except OSError:
            continue
        handle, fresh = tempfile.mkstemp(dir=own.parent, prefix=".settle-")  # beside it, then a rename
        os.close(handle)
        shutil.copy2(source, fresh)
        os.replace(fresh, own)
        again.append(rel)
    shutil.rmtree(view.path, ignore_errors=True)
    return again


def put(change: changes.Change, attempt: Path, dest: Path) -> str | None:
    """Make the view's file at change.path what the attempt's is (or delete it); why not, if it
    cannot be done without following a link."""
    parts = change.path.split("/")
    for n in range(1, len(parts)):  # the folders above it: in the view, each a folder (or made one)
        folder = dest.joinpath(*parts[:n])
        if folder.is_symlink() or folder.exists() and not folder.is_dir():
            return "beneath a link or a file in the workspace"
        if change.kind != "deleted":
            folder.mkdir(exist_ok=True)
    target = dest / change.path
    if change.kind != "deleted":
        source = attempt / change.path
        if any(attempt.joinpath(*parts[:n]).is_symlink() for n in range(1, len(parts) + 1)) or not (
                stat.S_ISREG(os.lstat(source).st_mode) if os.path.lexists(source) else False):
            return "not a regular file in the attempt (a link, or beneath one)"
    if target.is_dir() and not target.is_symlink():
        shutil.rmtree(target)
    elif os.path.lexists(target):
        target.unlink()
    if change.kind != "deleted":
        shutil.copy2(attempt / change.path, target, follow_symlinks=False)
    return None
