"""The installed `tooloop` command, run as a user runs it: from a real, non-editable install.

Which modules an install carries is pyproject.toml's `[tool.setuptools] py-modules`. One left
out there breaks the installed command with ModuleNotFoundError, while every other test passes,
because they all import the checkout itself. So here a wheel is built from a copy of the
checkout, installed into a fresh venv under tmp_path, and that venv's `tooloop` is run from a
folder outside the repo, in an environment where the checkout cannot be imported (checked
before the install): `--help`, then one scripted task against tests/fake_server.py.

No network: the wheel is built by this interpreter's setuptools (--no-build-isolation; the test
extra asks for a setuptools that builds wheels by itself) and installed with --no-index. The
dependencies (openai, rich, python-dotenv) are this interpreter's, named in one .pth file of the
fresh venv. subtle: the lines of a .pth only extend sys.path; the .pth files in the folders
they name are not run, so the project venv's editable-install hook (a .pth that imports a
finder mapping module names to the checkout) stays out.

Left out: an sdist, installers other than pip (pipx, uv), and resolving the dependencies.
"""

import ast
import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import sandbox
from fake_server import FakeServer, answer, call, reply

ROOT = Path(__file__).resolve().parent.parent
DEPENDENCIES = ["openai", "rich", "dotenv"]  # pyproject.toml's dependencies, by import name


def local_imports(module: str = "agent") -> set[str]:
    """The checkout's top-level modules that `module` imports, itself included, transitively:
    every import statement counts, at the top of a file or inside a function. For example
    local_imports("protect") == {"protect"} (it imports only the standard library)."""
    local = {path.stem for path in ROOT.glob("*.py")}
    found, todo = set(), [module]
    while todo:
        name = todo.pop()
        if name in found:
            continue
        found.add(name)
        for node in ast.walk(ast.parse((ROOT / f"{name}.py").read_text())):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                names = [node.module]
            else:
                continue
            todo += [top for top in (name.split(".")[0] for name in names) if top in local]
    return found


def run(argv: list, env: dict, cwd: Path, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run([str(a) for a in argv], env=env, cwd=cwd, capture_output=True, text=True,
                          timeout=timeout)


def must(result: subprocess.CompletedProcess) -> str:
    assert result.returncode == 0, f"{result.args} exited {result.returncode}:\n{result.stdout}\n{result.stderr}"
    return result.stdout


FINDS = "import importlib.util, sys\nfor name in sys.argv[1:]:\n    spec = importlib.util.find_spec(name)\n" \
        "    print(name, spec.origin if spec else '-')"


def where(python: Path, names, env: dict, cwd: Path) -> dict[str, str]:
    """Where `python` would import each module from ('-': nowhere), without importing it."""
    out = must(run([python, "-c", FINDS, *names], env, cwd))
    return dict(line.split(" ", 1) for line in out.splitlines())


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """A fresh venv with the checkout installed from a wheel: (its bin folder, the environment
    and the current folder to run it with)."""
    base = tmp_path_factory.mktemp("install")
    here = base / "elsewhere"  # the current folder of every run: outside the repo, no .env
    here.mkdir()
    assert ROOT not in here.parents
    # the agent's own configuration comes from flags alone; nothing points Python at the checkout
    env = {key: value for key, value in os.environ.items()
           if key not in ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "VIRTUAL_ENV", "MODEL")
           and not key.startswith(("TOOLOOP_", "OPENAI_"))}
    env["PYTHONNOUSERSITE"] = "1"

    # 1. the fresh venv, with only the dependencies' folders added
    venv = base / "venv"
    must(run([sys.executable, "-m", "venv", "--without-pip", venv], env, here))
    python = venv / "bin" / "python"
    site_packages = Path(must(run([python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                                  env, here)).strip())
    folders = {str(Path(importlib.util.find_spec(name).origin).parent.parent) for name in DEPENDENCIES}
    (site_packages / "dependencies.pth").write_text("".join(f"{folder}\n" for folder in sorted(folders)))

    # 2. the checkout must not be importable there, nor a module of it found anywhere else
    modules = sorted(local_imports())
    before = where(python, modules + DEPENDENCIES, env, here)
    assert {name: before[name] for name in modules} == {name: "-" for name in modules}
    assert "-" not in [before[name] for name in DEPENDENCIES]

    # 3. build a wheel from a copy of the checkout's top-level files (the build writes build/ and
    # *.egg-info into its source folder), and install it: no build, no index, nothing else touched
    source = base / "source"
    source.mkdir()
    for path in ROOT.iterdir():
        if path.is_file() and not path.name.startswith("."):
            shutil.copy2(path, source / path.name)
    if run([sys.executable, "-c", "import setuptools.command.bdist_wheel"], env, here).returncode:
        pytest.fail(f"{sys.executable}: its setuptools cannot build a wheel without the network; "
                    "rerun scripts/setup (pyproject.toml's test extra asks for setuptools>=70.1)")
    dist = base / "dist"
    must(run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "--no-index",
              "--wheel-dir", dist, source], env, here, timeout=120))
    [wheel] = dist.glob("tooloop-*.whl")
    # --ignore-installed: the .pth also shows pip the project venv's own (editable) tooloop; leave it be
    must(run([sys.executable, "-m", "pip", "--python", python, "install", "-q", "--no-deps", "--no-index",
              "--ignore-installed", wheel], env, here, timeout=120))
    return venv / "bin", env, here


def test_every_module_the_command_imports_comes_from_the_install(installed):
    bin_folder, env, here = installed
    modules = sorted(local_imports())
    assert {"agent", "protect", "screen"} <= set(modules)
    found = where(bin_folder / "python", modules, env, here)
    missing = [name for name in modules if found[name] == "-"]
    assert missing == [], "not installed: add them to py-modules in pyproject.toml"
    assert all(bin_folder.parent in Path(found[name]).parents for name in modules), found


def test_installed_tooloop_help(installed):
    bin_folder, env, here = installed
    result = run([bin_folder / "tooloop", "--help"], env, here)
    assert must(result).startswith("usage: tooloop")
    assert "--workspace" in result.stdout and "exit codes:" in result.stdout


def test_installed_tooloop_runs_a_scripted_task(installed):
    bin_folder, env, here = installed
    workspace = here.parent / "ws"
    workspace.mkdir()
    fake = FakeServer()
    fake.script = [reply(call("write_file", path="hello.txt", content="hi there\n")), answer("Wrote hello.txt.")]
    # the start-up probe stops a run that may write where bubblewrap cannot work; this task runs no
    # command, so there it may go on unconfined
    unconfined = ["--unsafe-no-sandbox"] if sandbox.probe() else []
    try:
        result = run([bin_folder / "tooloop", "--base-url", fake.url, "--workspace", workspace, "--approval", "auto",
                      "--transcript", "off", *unconfined, "write hello.txt"], env, here)
    finally:
        fake.close()
    assert must(result) == "Wrote hello.txt.\n"
    assert (workspace / "hello.txt").read_text() == "hi there\n"
    assert sorted(path.name for path in workspace.iterdir()) == ["hello.txt"]  # no transcript, nothing else
    assert len(fake.requests) == 2
    [result_message] = [m for m in fake.requests[1]["messages"] if m["role"] == "tool"]
    assert result_message["content"] == "wrote 9 bytes (1 lines) to hello.txt"
