"""Paths in the workspace that host tools run or trust, and what the tools and commands may do there.

The sandbox holds while a command runs. What the command leaves in the workspace is another
matter: the user's own tools later run or trust what they find there, without asking. git runs
hooks, and commands named in .git/config (core.fsmonitor, core.pager), on a plain `git status`;
python runs __pycache__/*.pyc in place of the source whose stamp it carries; dotenv loaders
(tooloop's own start-up among them) and direnv read .env and .envrc; a shell sources its rc
files; tooloop trusts its .tooloop transcripts. So the rules, one for each way in:

- write_file may not write a protected path, and read_file may not read a secret (.env,
  .env.*, .envrc): refusal(), asked by tools.permission;
- in the sandbox, existing protected paths are read-only, and existing secret files read as
  empty (/dev/null is mounted over them): mounts(), used by sandbox.wrap. Not bytecode: a venv
  holds thousands of __pycache__ folders, and each mount costs bwrap a few milliseconds;
- after each sandboxed command, the protected paths it created are removed, and so is any .pyc
  it changed (python just compiles the source again); the set-user-ID and set-group-ID bits of
  every file are cleared (root could leave a setuid copy of python for anyone to run): scan()
  before, clean() after, in tools.run_shell.

Names are compared lower-cased, on every component: on macOS and Windows (WSL) `.GIT` is `.git`.
For example, with core.hooksPath = tools/hooks in .git/config:

    .git/config, .Env, app/__pycache__/m.cpython-311.pyc, .husky/pre-commit, tools/hooks/x:
    protected; .env.example, src/app.py: not

Left out on purpose: other spellings that only some filesystems treat alike (NTFS short names
such as GIT~1, code points HFS+ ignores), a secret's content kept under another name (a copy or
a hard link the user made), config that .git/config includes from elsewhere, a hooks folder that
is the workspace itself, a workspace of more than MAX_ENTRIES entries (the rest is not looked
at, and clean() says so), and commands run with --unsafe-no-sandbox (nothing holds those).
"""

import os
import re
import shutil
import stat
from pathlib import Path

# The one list, lower-cased: what each name is trusted for.
PROTECTED = {
    ".git",  # git runs its hooks and config (core.fsmonitor, core.pager); a .git file points elsewhere
    ".githooks", ".husky",  # the hooks folders projects point core.hooksPath at (and hooks_folder())
    "__pycache__",  # python runs the bytecode there, and in any *.pyc, instead of the source
    ".env", ".envrc",  # dotenv loaders (tooloop's start-up too) and direnv read these; .env.* as well
    ".bashrc", ".bash_profile", ".bash_login", ".profile", ".zshrc", ".zshenv", ".zprofile", ".zlogin",
    ".tooloop",  # tooloop's own transcripts
}
SECRETS = {".env", ".envrc"}  # and .env.*: keys and passwords, so not even read
TEMPLATES = {".env.example", ".env.sample", ".env.template"}  # committed, secret-free, loaded by no tool
SETID = stat.S_ISUID | stat.S_ISGID
MAX_ENTRIES = 200_000  # a walk of the workspace looks at no more
WHAT = "git hooks and config, python bytecode, .env files, shell rc files, tooloop's transcripts"


def kind(name: str) -> str | None:
    """"secret", "protected" or None, for one path component.

        >>> kind(".Env.local"), kind("x.PYC"), kind(".env.example")
        ('secret', 'protected', None)
    """
    name = name.lower()
    if name in TEMPLATES:
        return None
    if name in SECRETS or name.startswith(".env."):
        return "secret"
    return "protected" if name in PROTECTED or name.endswith(".pyc") else None


def bytecode(name: str) -> bool:
    """True for __pycache__ and *.pyc: watched for changes by clean(), not mounted read-only."""
    name = name.lower()
    return name == "__pycache__" or name.endswith(".pyc")


def hooks_folder(ws: Path) -> str | None:
    """The folder core.hooksPath in the workspace's .git/config names, relative to the workspace and
    lower-cased, if it lies inside it: git runs whatever hook it finds there.

    The file is parsed as text: asking git would run the very config this distrusts. A relative
    path counts from the workspace, where git runs hooks; the last setting wins, as in git.
    """
    try:
        text = (ws / ".git" / "config").read_text(errors="replace")
    except OSError:
        return None
    section, value = "", ""
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("["):  # "[core]", and a setting may follow on the same line
            header, _, line = line[1:].partition("]")
            section = header.strip().lower()
        key, equals, rest = line.partition("=")
        if section == "core" and equals and key.strip().lower() == "hookspath":
            rest = rest.strip()
            value = rest[1:].partition('"')[0] if rest.startswith('"') else re.split(r"[#;]", rest)[0].strip()
    if not value:
        return None
    try:
        folder = (ws / os.path.expanduser(value)).resolve()
    except (OSError, RuntimeError):
        return None
    return str(folder.relative_to(ws)).lower() if folder != ws and folder.is_relative_to(ws) else None


def malformed(path: str) -> str | None:
    """What makes `path` no path at all, or None: the file tools refuse it before any system call.

        >>> malformed("a" * 300)
        'a name in the path is 300 bytes long; the limit is 255'
    """
    if "\0" in path:
        return "the path contains a NUL byte"
    try:
        data = path.encode()
    except UnicodeEncodeError:  # a lone surrogate, "\ud800": JSON allows it, a file name cannot hold it
        return f"the path {path!r} is not valid UTF-8 text"
    if len(data) > 4095:
        return f"the path is {len(data)} bytes long; the limit is 4095"
    longest = max(len(name) for name in data.split(b"/"))
    return f"a name in the path is {longest} bytes long; the limit is 255" if longest > 255 else None


def refusal(tool: str, path: str, target: Path, ws: Path) -> str | None:
    """Why `tool` may not touch `path` (which resolves to `target`; `ws` resolved), or None.

    Both the path as written and the file it resolves to count: through a link `hooks ->
    .git/hooks` a write lands in .git, and a link named .env reads as a secret whatever it names.
    """
    hooks = hooks_folder(ws)
    for candidate in (Path(os.path.normpath(ws / path)), target):
        if not candidate.is_relative_to(ws):
            continue
        parts = candidate.relative_to(ws).parts
        if tool == "read_file" and any(kind(part) == "secret" for part in parts):
            return (f"{path!r} may hold secrets (.env, .env.* and .envrc files do), so read_file does not "
                    "read it; ask the user for any value you need")
        for i in range(1, len(parts) + 1):
            if tool == "write_file" and (kind(parts[i - 1]) or "/".join(parts[:i]).lower() == hooks):
                where = "/".join(parts[:i])
                at = repr(path) if i == len(parts) else f"{path!r} (in {where!r})"
                return f"{at} is where host tools run or trust what they find ({WHAT}); write_file may not write there"
    return None


def walk(ws: Path, hooks: str | None) -> tuple[list[tuple[str, os.stat_result, str | None]], bool]:
    """(path relative to ws, lstat, kind) for entries of the workspace, breadth first, and whether
    that was all of them (MAX_ENTRIES at most). A protected folder is one entry, not entered
    (__pycache__ is, for the .pyc files in it); a symlink is not followed. Breadth first, so a flood of files deep down cannot hide a new .git
    near the top from the cap."""
    found: list[tuple[str, os.stat_result, str | None]] = []
    folders = [""]
    for folder in folders:  # subtle: the list grows while we go through it
        try:
            with os.scandir(ws / folder) as listing:
                entries = list(listing)
        except OSError:
            continue
        for entry in entries:
            if len(found) == MAX_ENTRIES:
                return found, False
            rel = f"{folder}/{entry.name}" if folder else entry.name
            try:
                info = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            what = "protected" if rel.lower() == hooks else kind(entry.name)
            found.append((rel, info, what))
            if (what is None or bytecode(entry.name)) and stat.S_ISDIR(info.st_mode):
                folders.append(rel)
    return found, True


def mounts(ws: Path) -> tuple[list[str], list[str]]:
    """What sandbox.wrap mounts over the workspace `ws` (resolved): (read-only, masked with /dev/null).

    Each existing protected path, resolved; a secret file is masked, so `cat .env`, `base64 .env`
    or `sed ... .env > copy` see nothing. subtle: one planted as a symlink (.git -> ../../etc)
    would make bwrap mount the host folder it names, unmasked; so a path counts only if it resolves
    inside the workspace (and not to the workspace itself), where it is a mount point that the
    command cannot replace. Nothing is created for paths that do not exist.
    """
    binds, masks = {}, {}
    for rel, info, what in walk(ws, hooks_folder(ws))[0]:
        if not what or bytecode(rel.rpartition("/")[2]):
            continue
        try:  # walk() followed no link, so only a link itself needs resolving
            real = (ws / rel).resolve() if stat.S_ISLNK(info.st_mode) else ws / rel
        except (OSError, RuntimeError):  # a symlink loop
            continue
        if real != ws and real.is_relative_to(ws) and real.exists():
            (masks if what == "secret" and real.is_file() else binds)[str(real)] = True
    return list(binds), list(masks)


def scan(ws: Path) -> tuple[str | None, dict[str, tuple[int, int, int]]]:
    """Before a command: the hooks folder, and each protected path with what identifies it."""
    hooks = hooks_folder(ws)
    return hooks, {rel: identity(rel, info) for rel, info, what in walk(ws, hooks)[0] if what}


def identity(rel: str, info: os.stat_result) -> tuple[int, int, int]:
    """(inode, file type, change time of a .pyc file): a protected path another identity has
    now is new. A .pyc is not read-only in the sandbox, so a change to it counts too (ctime:
    no command can set it); other files are compared without it, so the user's own edit of
    .bashrc on the host while a command runs does not make it "new"."""
    pyc = stat.S_ISREG(info.st_mode) and rel.lower().endswith(".pyc")
    return info.st_ino, stat.S_IFMT(info.st_mode), info.st_ctime_ns if pyc else 0


def clean(ws: Path, before: tuple[str | None, dict], removed: list[str], command: str) -> list[str]:
    """After a command: remove the protected paths it made (new, or no longer the same file) and
    clear set-user/group-ID bits. Returns the line for the model (none if nothing was done), and
    adds one entry per change to `removed`, for the user.

    The hooks folder is the one from before: a new .git/config could name src/ otherwise.
    """
    hooks, known = before
    entries, complete = walk(ws, hooks)
    made: list[str] = []
    cleared = []
    for rel, info, what in entries:
        if any(rel.startswith(gone.rstrip("/") + "/") for gone in made):
            continue  # in a folder removed already
        if what and known.get(rel) != identity(rel, info):
            shown = rel + "/" * stat.S_ISDIR(info.st_mode)
            try:
                remove(ws / rel)
            except OSError as problem:
                shown += f" (could not remove it: {problem.strerror})"
            made.append(shown)
            removed.append(f"removed {shown}, made by the command: {short(command)}")
        elif stat.S_ISREG(info.st_mode) and info.st_mode & SETID:
            os.chmod(ws / rel, stat.S_IMODE(info.st_mode) & ~SETID)
            cleared.append(rel)
            removed.append(f"cleared the setuid/setgid bit of {rel}, set by the command: {short(command)}")
    notes = []
    if made:
        notes.append(f"tooloop removed what this command created where host tools would run it: "
                     f"{', '.join(made)} (commands may not plant these)")
    if cleared:
        notes.append(f"tooloop cleared the setuid/setgid bits of {', '.join(cleared)} (commands may not set them)")
    if not complete:
        notes.append(f"tooloop checked only the first {MAX_ENTRIES} entries of the workspace for planted files")
        removed.append(f"the workspace has more than {MAX_ENTRIES} entries: the rest was not checked after "
                       f"the command: {short(command)}")
    return ["; ".join(notes)] if notes else []


def remove(path: Path) -> None:
    """Remove a file, link or folder tree, even folders the command made unreadable (chmod 000);
    links are removed, never followed."""
    if not path.is_dir() or path.is_symlink():
        path.unlink()
        return
    os.chmod(path, 0o700)
    for top, dirs, _ in os.walk(path):
        for name in dirs:
            child = os.path.join(top, name)
            if not os.path.islink(child):  # chmod follows links: one could point at a host file
                os.chmod(child, 0o700)
    shutil.rmtree(path)


def short(command: str, width: int = 80) -> str:
    line = " ".join(command.split())
    return line if len(line) <= width else line[: width - 3] + "..."


def landing(rel: str, kind_of_change: str, copy: Path, workspace: Path, named: set[str]) -> str | None:
    """Why this change of a run's change set may not reach the user's workspace, or None.

    The paths host tools run or trust (PROTECTED, bytecode, the hooks folder) never change
    through a run, and only regular files land: a link could point anywhere on the host."""
    hooks = hooks_folder(workspace)
    parts = rel.split("/")
    if any(kind(part) for part in parts) or any("/".join(parts[:i]).lower() == hooks for i in range(1, len(parts) + 1)):
        return f"host tools run or trust what they find there ({WHAT})"
    new = copy / rel
    if kind_of_change != "deleted" and (new.is_symlink() or not new.is_file()):
        return "not a regular file"
    return None
