"""What the user's check runs on: a view of the attempt that the model cannot game.

The check must judge the code, not what the model did to the check. `for_check()` builds the
copy that the user's check runs on: the attempt's files, except that the files a test runner
trusts are as they were before the run. Those are:

- files that existed before the run and are tests or test configuration: test files by their
  usual names (`test_*.py`, `*_test.go`, `*.spec.js`, anything under a `tests/` folder), and the
  files that tell a runner what to run (conftest.py, pytest.ini, tox.ini, setup.cfg,
  pyproject.toml, package.json, Makefile, ...);
- new files that would configure or replace the runner: a runner configuration file, a module or
  package named like one of the standard library or a test runner (`unittest.py`, `pytest/`),
  `.pth`, sitecustomize and usercustomize files, anywhere.

A script the check runs is not trusted for that alone: in `sh backup.sh` it is often the very
file the task is about. A test the model writes anew is checked as written. What lands after a passing check is what the
check saw, so a changed test never reaches the user's files either; the end of the run says so.

Left out on purpose: the code under test can still end its own process with success
(`os._exit(0)` while pytest collects it): no rule about files tells that from a real pass.
Data that tests read from outside test folders is not restored.
"""

import shutil
import sys
from pathlib import Path

from changes import copy, diff

TEST_FOLDERS = {"test", "tests", "testing", "__tests__", "spec", "specs"}
RUNNER_FILES = {  # lower-cased names of the files that tell a test runner what to run and how
    "conftest.py", "pytest.ini", "tox.ini", "setup.cfg", "pyproject.toml", "setup.py", "noxfile.py",
    ".coveragerc", "package.json", "makefile", "gnumakefile", "cargo.toml", "go.mod", "pom.xml",
    "build.gradle", "build.gradle.kts", "cmakelists.txt", "sitecustomize.py", "usercustomize.py",
}
RUNNERS = {"pytest", "_pytest", "py", "pluggy", "nose", "nose2", "hypothesis", "coverage"}


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


def shadows(path: str) -> bool:
    """Would this new file replace a module of the standard library or of a test runner for any
    Python started in the workspace (`unittest.py`, `pytest/__init__.py`)?"""
    parts = path.split("/")
    module = parts[0].removesuffix(".py") if len(parts) == 1 and parts[0].endswith(".py") else parts[0]
    return (len(parts) > 1 or parts[0].endswith(".py")) and (module in sys.stdlib_module_names or module in RUNNERS)


def for_check(workspace: Path, attempt: Path, dest: Path, command: str) -> tuple[Path, list[str]]:
    """The copy the check runs on (see the module docstring), and the paths in it that were put
    back as they were before the run, or left out."""
    if dest.exists():
        shutil.rmtree(dest)
    copy(attempt, dest)
    restored = []
    for change in diff(workspace, attempt):
        if change.kind == "created" and (trusted(change.path) and Path(change.path).name.lower() in RUNNER_FILES
                                         or change.path.endswith(".pth") or shadows(change.path)):
            target = dest / change.path
            shutil.rmtree(target) if target.is_dir() and not target.is_symlink() else target.unlink()
            restored.append(change.path)
        elif change.kind != "created" and trusted(change.path):
            target = dest / change.path
            if target.is_dir() and not target.is_symlink():
                shutil.rmtree(target)
            elif target.exists() or target.is_symlink():
                target.unlink()
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(workspace / change.path, target, follow_symlinks=False)
            restored.append(change.path)
    return dest, restored
