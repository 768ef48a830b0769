"""Plain helpers for the end-to-end tests: a real llama-server with a real small model.

The server is started by the same functions as `scripts/serve.py` (same binary lookup, same
cached model, same command line), but on a free loopback port and owned by the test session,
so a developer's own server on port 8000 is never touched.

Nothing is built or downloaded here: that takes minutes and belongs to `scripts/test`. A missing
binary or model is a test failure that says so, never a silent skip; only a developer who sets
TOOLOOP_SKIP_E2E=1 skips these tests. Left out on purpose: GPU builds and several servers at once.
"""

import os
import subprocess
import sys
from pathlib import Path
from typing import NamedTuple

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))
import serve  # noqa: E402

MODEL = "0.5b"  # the fastest real model; the default 1.5B is what users get from quickstart
CTX = 8192  # plenty for a test's few turns, and a smaller KV cache to allocate


class RealServer(NamedTuple):
    url: str  # base URL for the OpenAI client, ending in /v1
    model: str  # the alias the server answers to
    port: int
    process: subprocess.Popen
    log: Path


def start(log_dir: Path, model: str = MODEL) -> RealServer:
    """Start llama-server on a free port and wait until /health is 200; fail the test if we can't."""
    if os.environ.get("TOOLOOP_SKIP_E2E") == "1":
        pytest.skip("TOOLOOP_SKIP_E2E=1: end-to-end tests against a real llama-server skipped")
    advice = ("Run scripts/test once: it builds llama-server and fetches the models "
              "(or set TOOLOOP_SKIP_E2E=1 to skip the end-to-end tests).")
    try:
        binary, missing = serve.find_server(build=False), None
    except serve.SetupError as error:
        missing = str(error)
    gguf = serve.model_path(model)
    if missing is None and not gguf.is_file():
        missing = f"model {gguf} is missing"
    if missing:
        pytest.fail(f"{missing}. {advice}", pytrace=False)
    port, alias = serve.free_port(), serve.MODELS[model]["alias"]
    log = log_dir / f"llama-server-{port}.log"
    process = serve.start_server(serve.server_command(binary, gguf, port, alias, CTX), log)
    try:
        serve.wait_healthy(port, process, log, timeout=120)
        failure = None
    except serve.SetupError as error:
        failure = str(error)
    if failure:
        serve.stop_process(process)
        pytest.fail(failure, pytrace=False)
    return RealServer(f"http://127.0.0.1:{port}/v1", alias, port, process, log)


def stop(server: RealServer) -> None:
    serve.stop_process(server.process)
