"""What a run may leave for the host: the paths host tools run or trust, and the rule for what lands.

The sandbox holds while a command runs. What a run leaves in the workspace is another matter:
the user's own tools later run or trust what they find there, without asking. git runs hooks,
and commands named in its config (core.fsmonitor, core.pager), on a plain `git status`; python
runs a .pth file or sitecustomize.py at every start, a venv's `activate` when sourced, native
code (`app.cpython-311-x86_64-linux-gnu.so`) in place of `app.py`, and bytecode in place of the
source whose stamp it carries; a shell sources its rc files, npm its .npmrc (node-options), pdb
its .pdbrc; dotenv loaders and direnv read .env and .envrc; tooloop trusts its .tooloop.

The rule, for what a run's change set brings to the user's files (landing(), asked for each
created, changed or deleted file before it is applied): **only the user's project, as text the
user can read, lands.** A change is refused when

- it is not a regular text file: a symbolic link, a binary (native code by its magic number:
  ELF, Mach-O, PE; anything with a NUL byte), a name the loaders take for native code (.so,
  .pyd, .dylib, .dll), a set-user-ID file;
- it lies where host tools run or trust what they find without being asked: in or under .git
  (a folder or a file, at any depth), in a folder git takes for a repository (HEAD, objects/),
  in a hooks folder any git config names (the workspace's, a linked worktree's main
  repository's, the global and the system one), in a virtualenv (a folder holding pyvenv.cfg)
  or installed packages (site-packages, dist-packages, node_modules), a .pth, sitecustomize.py
  or usercustomize.py file, bytecode (__pycache__, .pyc), .tooloop, or a credentials file;
- unless the user named it with --file: it is hidden tool configuration (any name on its path
  starts with a dot: rc files, .pdbrc, .npmrc, .gitconfig, .config/fish, .ssh; ignore lists
  such as .gitignore, .env templates and caches such as .pytest_cache aside), or it is newly
  executable. --file names only
  existing files: to let a new one land, the user creates it empty first.

A deletion is refused where a creation would be for its place (.git, hooks, a venv, hidden
files not named). And the workspace must be a project folder (unsafe_workspace(), asked once at
start-up): not $HOME or a folder holding it, not a hidden folder of $HOME, not tooloop's own code,
nor one holding the Python that runs tooloop, a virtualenv, or the system's folders.

While a run goes, the same places are guarded in the run's copy of the workspace (which the
user may look into afterwards, with git too), one rule for each way in:

- write_file may not write a protected path, and read_file may not read a secret (.env,
  .env.*, .envrc, and credential files: .netrc, .npmrc, .pypirc, .git-credentials, .pgpass,
  cloud CLIs' folders .aws, .azure, .docker, .kube, .config/gcloud, .config/gh, and .ssh,
  .gnupg): refusal(), asked by tools.permission;
- in the sandbox, existing protected paths are read-only, and existing secrets read as empty
  (/dev/null over a file, an empty folder over a folder): mounts(), used by sandbox.wrap. Not
  bytecode: a venv holds thousands of __pycache__ folders, and each mount costs bwrap a few ms;
- after each sandboxed command, the protected paths it created are removed, and so is any .pyc
  it changed; the set-user-ID and set-group-ID bits of every file are cleared: scan() before,
  clean() after, in tools.run_shell. A folder the command made unreadable (chmod 311) is made
  readable again so that it is looked at, and whatever cannot be looked at or removed is said.

Names are compared lower-cased, on every component: on macOS and Windows (WSL) `.GIT` is `.git`.
For example, with core.hooksPath = tools/hooks in .git/config:

    .git/config, .Env, app/__pycache__/m.cpython-311.pyc, .husky/pre-commit, tools/hooks/x:
    protected; .env.example, src/app.py: not

Left out on purpose: other spellings that only some filesystems treat alike (NTFS short names
such as GIT~1, code points HFS+ ignores), a secret's content kept under another name (a copy or
a hard link the user made), config that a git config includes from elsewhere, a hooks folder
that is the workspace itself, what the user's tools do with text that lands (a Makefile, a test,
a script the user runs: that is the project, shown in the change set), a workspace of more than
MAX_ENTRIES entries (the rest is not looked at, and clean() says so), and commands run with
--unsafe-no-sandbox: they can reach the user's files directly; only what they change in the
copy goes through landing().
"""

import os
import pwd
import re
import shutil
import stat
import sys
from pathlib import Path, PurePosixPath

# The one list, lower-cased: what each name is trusted for.
PROTECTED = {
    ".git",  # git runs its hooks and config (core.fsmonitor, core.pager); a .git file points elsewhere
    ".githooks", ".husky",  # the hooks folders projects point core.hooksPath at (and hooks_folders())
    "__pycache__",  # python runs the bytecode there, and in any *.pyc, instead of the source
    ".env", ".envrc",  # dotenv loaders (tooloop's start-up too) and direnv read these; .env.* as well
    ".bashrc", ".bash_profile", ".bash_login", ".profile", ".zshrc", ".zshenv", ".zprofile", ".zlogin",
    ".tooloop",  # tooloop's own transcripts
}
SECRETS = {
    ".env", ".envrc",  # and .env.*: keys and passwords, so not even read
    ".netrc", "_netrc", ".git-credentials", ".npmrc", ".pypirc", ".pgpass",  # logins for hosts, registries, databases
    ".aws", ".azure", ".docker", ".kube", ".ssh", ".gnupg",  # whole folders: cloud CLIs' tokens, keys
}
SECRET_PAIRS = {(".config", "gcloud"), (".config", "gh")}  # (folder, name): CLIs that keep tokens under .config
TEMPLATES = {".env.example", ".env.sample", ".env.template"}  # committed, secret-free, loaded by no tool
SETID = stat.S_ISUID | stat.S_ISGID
MAX_ENTRIES = 200_000  # a walk of the workspace looks at no more
WHAT = "git hooks and config, python bytecode, .env files, shell rc files, tooloop's transcripts"

# What landing() knows of names and contents, lower-cased.
STARTUP = {"sitecustomize.py", "usercustomize.py", "pyvenv.cfg"}  # and *.pth: python reads them at every start
PACKAGES = {"site-packages", "dist-packages", "node_modules"}  # installed code, imported without being read
NATIVE_NAME = re.compile(r"\.(so|pyd|dylib|dll)(\.[0-9.]+)?$")  # libx.so.1 too
MAGIC = {b"\x7fELF": "ELF", b"\xcf\xfa\xed\xfe": "Mach-O", b"\xce\xfa\xed\xfe": "Mach-O",
         b"\xfe\xed\xfa\xcf": "Mach-O", b"\xfe\xed\xfa\xce": "Mach-O", b"\xca\xfe\xba\xbe": "Mach-O", b"MZ": "PE"}


def kind(name: str, parent: str = "") -> str | None:
    """"secret", "protected" or None, for one path component (in the folder named `parent`).

        >>> kind(".Env.local"), kind("x.PYC"), kind(".env.example"), kind("gcloud", ".config")
        ('secret', 'protected', None, 'secret')
    """
    name = name.lower()
    if name in TEMPLATES:
        return None
    if name in SECRETS or name.startswith(".env.") or (parent.lower(), name) in SECRET_PAIRS:
        return "secret"
    return "protected" if name in PROTECTED or name.endswith(".pyc") else None


def bytecode(name: str) -> bool:
    """True for __pycache__ and *.pyc: watched for changes by clean(), not mounted read-only."""
    name = name.lower()
    return name == "__pycache__" or name.endswith(".pyc")


def setting(config: Path, section: str, key: str) -> str | None:
    """The last value of `section.key` in a git config file, read as text (None if not set).

    Asking git would run the very config this distrusts. Includes are not followed.
    """
    try:
        text = config.read_text(errors="replace")
    except OSError:
        return None
    current, value = "", None
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("["):  # "[core]", and a setting may follow on the same line
            header, _, line = line[1:].partition("]")
            current = header.strip().lower()
        name, equals, rest = line.partition("=")
        if current == section and equals and name.strip().lower() == key:
            rest = rest.strip()
            value = rest[1:].partition('"')[0] if rest.startswith('"') else re.split(r"[#;]", rest)[0].strip()
    return value or None


def git_configs(ws: Path) -> tuple[Path, list[Path]]:
    """(the top of the working tree, every git config file that applies there, existing or not).

    The repository is the first .git found from the workspace up. A .git *file* (a linked
    worktree, a submodule) names the real git folder, whose `commondir` names the main
    repository's: its config applies too. Then the global and the system config.
    """
    home = Path(os.path.expanduser("~"))
    xdg = Path(os.environ.get("XDG_CONFIG_HOME") or home / ".config")
    files = [Path(os.environ.get("GIT_CONFIG_SYSTEM") or "/etc/gitconfig"),
             Path(os.environ.get("GIT_CONFIG_GLOBAL") or home / ".gitconfig"), xdg / "git" / "config"]
    for top in (ws, *ws.parents):
        dotgit = top / ".git"
        gitdir = dotgit if dotgit.is_dir() else pointed(dotgit) if dotgit.is_file() else None
        if gitdir is None:
            continue
        files += [gitdir / "config", gitdir / "config.worktree"]
        try:
            common = (gitdir / (gitdir / "commondir").read_text().strip()).resolve()
            files.append(common / "config")
        except (OSError, RuntimeError, ValueError):
            pass
        return top, files
    return ws, files


def pointed(dotgit: Path) -> Path | None:
    """The folder a .git file names ("gitdir: ../x"), or None."""
    try:
        text = dotgit.read_text(errors="replace")
    except OSError:
        return None
    line = text.strip().splitlines()[0] if text.strip() else ""
    return dotgit.parent / line[len("gitdir:"):].strip() if line.startswith("gitdir:") else None


def hooks_folders(ws: Path) -> set[str]:
    """The folders inside the workspace `ws` (resolved) that a git config names as core.hooksPath,
    relative and lower-cased: git runs whatever hook it finds there.

    A relative path counts from the top of the working tree, where git runs hooks; `~` is $HOME.
    A folder outside the workspace is not ours to guard, and the workspace itself is left out.
    """
    top, configs = git_configs(ws)
    found = set()
    for config in configs:
        if not (value := setting(config, "core", "hookspath")):
            continue
        try:
            folder = (top / os.path.expanduser(value)).resolve()
        except (OSError, RuntimeError):
            continue
        if folder != ws and folder.is_relative_to(ws):
            found.add(str(folder.relative_to(ws)).lower())
    return found


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
    hooks = hooks_folders(ws)
    for candidate in (Path(os.path.normpath(ws / path)), target):
        if not candidate.is_relative_to(ws):
            continue
        parts = candidate.relative_to(ws).parts
        kinds = [kind(part, parent) for parent, part in zip(("", *parts), parts)]
        if tool == "read_file" and "secret" in kinds:
            return (f"{path!r} may hold secrets (.env files, .envrc and credential files such as .netrc, .npmrc "
                    "or .aws/ do), so read_file does not read it; ask the user for any value you need")
        for i in range(1, len(parts) + 1):
            if tool == "write_file" and (kinds[i - 1] or "/".join(parts[:i]).lower() in hooks):
                where = "/".join(parts[:i])
                at = repr(path) if i == len(parts) else f"{path!r} (in {where!r})"
                return f"{at} is where host tools run or trust what they find ({WHAT}); write_file may not write there"
    return None


def landing(rel: str, change: str, copy: Path, workspace: Path, named: set[str]) -> str | None:
    """Why this change may not reach the user's workspace, or None if it may land.

    rel: posix path relative to the workspace; change: "created" | "changed" | "deleted";
    copy: the attempt's copy of the workspace (the new file is copy / rel; for "deleted" it is gone);
    workspace: the real workspace (the old file is workspace / rel, for "changed"/"deleted");
    named: relative paths the user named with --file (the task names them).

    The rule (module docstring): only the user's project, as regular text files, lands. For example

        src/app.py, created, text: None (it lands)
        tools/x.pth: 'a .pth file: python runs it at every start'
        app.cpython-311-x86_64-linux-gnu.so: "a native library's name: python and other loaders ..."
        .pdbrc, not named: 'hidden tool configuration (.pdbrc): ... naming the file with --file'
    """
    if why := place(rel, copy, workspace):
        return why
    parts = PurePosixPath(rel).parts
    hidden = next((part for part in parts if part.startswith(".") and not inert(part)), None)
    if hidden and rel not in named:
        return (f"hidden tool configuration ({hidden}): tools read it without being asked; the user can let "
                "it land by naming the file with --file")
    if change == "deleted":
        return None
    new = copy / rel
    try:
        info = os.lstat(new)
    except OSError as problem:
        return f"it cannot be looked at in the run's copy ({problem.strerror})"
    if stat.S_ISDIR(info.st_mode):
        return None  # a folder lands as the files in it do
    if stat.S_ISLNK(info.st_mode):
        return f"a symbolic link (to {os.readlink(new)!r}): only regular files land, a link can point anywhere"
    if not stat.S_ISREG(info.st_mode):
        return "not a regular file: only regular text files land"
    if NATIVE_NAME.search(parts[-1].lower()):
        return "a native library's name: python and other loaders run it in place of the source"
    fd = os.open(new, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    with os.fdopen(fd, "rb") as f:
        head = f.read(8192)
    if native := next((name for magic, name in MAGIC.items() if head.startswith(magic) and b"\0" in head), None):
        return f"native code ({native}): only text files land, which the user can read in the change set"
    if b"\0" in head:
        return "binary content: only text files land, which the user can read in the change set"
    if info.st_mode & SETID:
        return "a set-user-ID or set-group-ID file"
    try:
        was = os.lstat(workspace / rel).st_mode if change == "changed" else 0
    except OSError:
        was = 0
    if info.st_mode & 0o111 and not was & 0o111 and rel not in named:
        return (f"newly executable (mode {stat.S_IMODE(info.st_mode):o}): a program the user did not ask for; "
                "the user can let it land by naming the file with --file")
    return None


def place(rel: str, copy: Path, workspace: Path) -> str | None:
    """Why nothing may land at `rel`, whatever the file: a place host tools run or trust, or None."""
    parts = PurePosixPath(rel).parts
    lowered = [part.lower() for part in parts]
    if ".git" in lowered:
        return "in .git: git runs the hooks and commands its config names there"
    for folder in sorted(hooks_folders(workspace)):
        if rel.lower() == folder or rel.lower().startswith(folder + "/"):
            return f"in {folder}/, a hooks folder a git config names (core.hooksPath): git runs what is there"
    for i in range(len(parts)):
        folder = "/".join(parts[:i])  # "" is the workspace itself
        if i and (workspace / folder).is_symlink():
            return f"through the symbolic link {folder}: it could land anywhere"
        for tree in (workspace, copy):
            if (tree / folder / "pyvenv.cfg").is_file():
                return f"in a virtualenv ({folder or '.'}/ holds pyvenv.cfg): its python runs what is there"
            if (tree / folder / "HEAD").is_file() and (tree / folder / "objects").is_dir():
                return f"in {folder or '.'}/, which git takes for a repository's own folder (HEAD, objects/)"
    if packages := next((part for part in lowered if part in PACKAGES), None):
        return f"in installed packages ({packages}): imported and run without being read"
    if lowered[-1].endswith(".pth") or lowered[-1] in STARTUP:
        return f"{'a .pth file' if lowered[-1].endswith('.pth') else parts[-1]}: python runs it at every start"
    if "__pycache__" in lowered or lowered[-1].endswith(".pyc"):
        return "python bytecode: python runs it in place of the source"
    if ".tooloop" in lowered:
        return "tooloop's transcripts"
    if any(kind(part, parent) == "secret" for parent, part in zip(("", *parts), parts)):
        return "a file for secrets (.env, credentials): a run does not write them"
    return None


def inert(name: str) -> bool:
    """Hidden names no tool runs or reads as configuration: ignore lists (.gitignore,
    .dockerignore), .env templates, and the data tools cache for themselves (.pytest_cache, which
    a check with pytest leaves in every run, .mypy_cache)."""
    name = name.lower()
    return name.endswith(("ignore", "_cache")) or name in TEMPLATES


def unsafe_workspace(ws: Path) -> str | None:
    """Why `ws` (resolved) is no project folder to run in, or None. Asked once, at start-up.

    Everything a run changes there the user's own tools may later run, so it must not hold
    what runs the user's session (the home folder, its hidden folders), tooloop itself, the
    Python running tooloop, a virtualenv, or the system.

        >>> unsafe_workspace(Path("/"))
        'it holds the system folders (/usr)'
    """
    for system in ("/usr", "/etc", "/bin", "/lib", "/boot", "/var"):
        if Path(system).is_relative_to(ws):
            return f"it holds the system folders ({system})"
    try:  # $HOME, and the home the system has for us (a uid may have no entry in a container)
        homes = {Path(os.path.expanduser("~")), Path(pwd.getpwuid(os.getuid()).pw_dir)}
    except KeyError:
        homes = {Path(os.path.expanduser("~"))}
    for home in (h.resolve() for h in homes if str(h) != "/"):
        if home.is_relative_to(ws):
            return f"it is your home folder ({home})" if ws == home else f"it holds your home folder ({home})"
        if ws.is_relative_to(home) and any(part.startswith(".") for part in ws.relative_to(home).parts):
            return f"it is in a hidden folder of your home ({home}): tool configuration, not a project"
    code = Path(__file__).resolve().parent
    if code.is_relative_to(ws):
        return f"it holds tooloop's own code ({code}): a run could change the agent that confines it"
    for prefix in (sys.prefix, sys.base_prefix, os.path.dirname(os.path.dirname(os.path.realpath(sys.executable)))):
        if Path(prefix).resolve().is_relative_to(ws):
            return f"it holds the Python that runs tooloop ({Path(prefix).resolve()})"
    for folder in (ws, *ws.parents):
        if (folder / "pyvenv.cfg").is_file() or folder.name.lower() in PACKAGES:
            return f"it is in a virtualenv or installed packages ({folder})"
    return None


def walk(ws: Path, hooks: set[str], problems: list[str] | None = None
         ) -> tuple[list[tuple[str, os.stat_result, str | None]], bool]:
    """(path relative to ws, lstat, kind) for entries of the workspace, breadth first, and whether
    that was all of them (MAX_ENTRIES at most). A protected folder is one entry, not entered
    (__pycache__ is, for the .pyc files in it); a symlink is not followed. Breadth first, so a
    flood of files deep down cannot hide a new .git near the top from the cap.

    subtle: a folder whose owner may not list or enter it (chmod 311 d) would hide d/.git. We
    are its owner, so it is made listable again (u+rx) and looked at; each folder opened so,
    or that still cannot be looked at, is one line in `problems`.
    """
    problems = [] if problems is None else problems
    found: list[tuple[str, os.stat_result, str | None]] = []
    folders = [""]
    for folder in folders:  # subtle: the list grows while we go through it
        path, shown = ws / folder, f"{folder or '.'}/"
        if not os.access(path, os.R_OK | os.X_OK):
            try:
                os.chmod(path, stat.S_IMODE(os.lstat(path).st_mode) | stat.S_IRUSR | stat.S_IXUSR)
                problems.append(f"made {shown} readable again to look inside")
            except OSError:
                pass  # scandir says why just below
        try:
            with os.scandir(path) as listing:
                entries = list(listing)
        except OSError as problem:
            problems.append(f"could not look inside {shown} ({problem.strerror})")
            continue
        for entry in entries:
            if len(found) == MAX_ENTRIES:
                return found, False
            rel = f"{folder}/{entry.name}" if folder else entry.name
            try:
                info = entry.stat(follow_symlinks=False)
            except OSError as problem:
                problems.append(f"could not look at {rel} ({problem.strerror})")
                continue
            what = "protected" if rel.lower() in hooks else kind(entry.name, folder.rpartition("/")[2])
            found.append((rel, info, what))
            if (what is None or bytecode(entry.name)) and stat.S_ISDIR(info.st_mode):
                folders.append(rel)
    return found, True


def mounts(ws: Path) -> tuple[list[str], list[str]]:
    """What sandbox.wrap mounts over the workspace `ws` (resolved): (read-only, masked).

    Each existing protected path, resolved; a secret is masked (sandbox.wrap puts /dev/null over
    a file and an empty folder over a folder), so `cat .env`, `base64 .netrc` or `ls .aws` see
    nothing. subtle: one planted as a symlink (.git -> ../../etc) would make bwrap mount the host
    folder it names, unmasked; so a path counts only if it resolves inside the workspace (and not
    to the workspace itself), where it is a mount point that the command cannot replace. Nothing
    is created for paths that do not exist.
    """
    binds, masks = {}, {}
    for rel, info, what in walk(ws, hooks_folders(ws))[0]:
        if not what or bytecode(rel.rpartition("/")[2]):
            continue
        try:  # walk() followed no link, so only a link itself needs resolving
            real = (ws / rel).resolve() if stat.S_ISLNK(info.st_mode) else ws / rel
        except (OSError, RuntimeError):  # a symlink loop
            continue
        if real != ws and real.is_relative_to(ws) and real.exists():
            (masks if what == "secret" else binds)[str(real)] = True
    return list(binds), list(masks)


def scan(ws: Path) -> tuple[set[str], dict[str, tuple[int, int, int]]]:
    """Before a command: the hooks folders, and each protected path with what identifies it."""
    hooks = hooks_folders(ws)
    return hooks, {rel: identity(rel, info) for rel, info, what in walk(ws, hooks)[0] if what}


def identity(rel: str, info: os.stat_result) -> tuple[int, int, int]:
    """(inode, file type, change time of a .pyc file): a protected path another identity has
    now is new. A .pyc is not read-only in the sandbox, so a change to it counts too (ctime:
    no command can set it); other files are compared without it, so the user's own edit of
    .bashrc on the host while a command runs does not make it "new"."""
    pyc = stat.S_ISREG(info.st_mode) and rel.lower().endswith(".pyc")
    return info.st_ino, stat.S_IFMT(info.st_mode), info.st_ctime_ns if pyc else 0


def clean(ws: Path, before: tuple[set[str], dict], removed: list[str], command: str) -> list[str]:
    """After a command: remove the protected paths it made (new, or no longer the same file) and
    clear set-user/group-ID bits. Returns the line for the model (none if nothing was done), and
    adds one entry per change to `removed`, for the user. What could not be looked at or removed
    is said too, never skipped in silence.

    The hooks folders are the ones from before: a new .git/config could name src/ otherwise.
    """
    hooks, known = before
    problems: list[str] = []
    entries, complete = walk(ws, hooks, problems)
    made, kept, cleared = [], [], []
    for rel, info, what in entries:
        if any(rel.startswith(gone.rstrip("/") + "/") for gone in made):
            continue  # in a folder removed already
        if what and known.get(rel) != identity(rel, info):
            shown = rel + "/" * stat.S_ISDIR(info.st_mode)
            try:
                remove(ws / rel)
            except OSError as problem:
                kept.append(f"{shown} ({problem.strerror})")
                removed.append(f"could NOT remove {shown} ({problem.strerror}), made by the command: "
                               f"{short(command)}; remove it before you run git or python there")
                continue
            made.append(shown)
            removed.append(f"removed {shown}, made by the command: {short(command)}")
        elif stat.S_ISREG(info.st_mode) and info.st_mode & SETID:
            os.chmod(ws / rel, stat.S_IMODE(info.st_mode) & ~SETID)
            cleared.append(rel)
            removed.append(f"cleared the setuid/setgid bit of {rel}, set by the command: {short(command)}")
    removed += [f"{line}, after the command: {short(command)}" for line in problems]
    notes = []
    if made:
        notes.append(f"tooloop removed what this command created where host tools would run it: "
                     f"{', '.join(made)} (commands may not plant these)")
    if kept:
        notes.append(f"tooloop could not remove {', '.join(kept)}, which this command created where host tools "
                     "would run it; the user is told")
    if cleared:
        notes.append(f"tooloop cleared the setuid/setgid bits of {', '.join(cleared)} (commands may not set them)")
    if problems:
        notes.append(f"tooloop {'; '.join(problems)}")
    if not complete:
        notes.append(f"tooloop checked only the first {MAX_ENTRIES} entries of the workspace for planted files")
        removed.append(f"the workspace has more than {MAX_ENTRIES} entries: the rest was not checked after "
                       f"the command: {short(command)}")
    return ["; ".join(notes)] if notes else []


def remove(path: Path) -> None:
    """Remove a file, link or folder tree, even in a folder the command made read-only (chmod
    555) and from folders it made unreadable (chmod 000); links are removed, never followed.
    Raises OSError if the path is still there after all."""
    if not os.access(path.parent, os.W_OK | os.X_OK):  # we own it: a command of ours made it so
        os.chmod(path.parent, stat.S_IMODE(os.stat(path.parent).st_mode) | stat.S_IRWXU)
    if not path.is_dir() or path.is_symlink():
        path.unlink()
    else:
        os.chmod(path, 0o700)
        for top, dirs, _ in os.walk(path):
            for name in dirs:
                child = os.path.join(top, name)
                if not os.path.islink(child):  # chmod follows links: one could point at a host file
                    os.chmod(child, 0o700)
        shutil.rmtree(path)
    if os.path.lexists(path):
        raise OSError(0, "it is still there")


def short(command: str, width: int = 80) -> str:
    line = " ".join(command.split())
    return line if len(line) <= width else line[: width - 3] + "..."

