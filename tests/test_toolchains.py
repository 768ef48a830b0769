"""The toolchains a project builds with, run in the sandbox through the real agent.

Each test has the scripted model (tests/fake_server.py) call run_shell through the real agent
(conftest's `run_agent`), so the command runs exactly as a model's would: sandbox.wrap, its
environment and its limits. A toolchain that is not installed here is skipped, with the reason;
nothing is installed for the tests. One test builds a fake toolchain in a fake home folder, so
what is bound of a home folder (and what is not) is checked on every machine.
"""

import os
import shutil
from pathlib import Path

import pytest

import sandbox
from fake_server import answer, call, reply

pytestmark = pytest.mark.skipif(not sandbox.available(), reason="bubblewrap is missing or does not work here")

HELLO_JAVA = 'public class Hello { public static void main(String[] a) { System.out.println("hello from java"); } }\n'


def found(tool: str) -> str | None:
    """Where the sandbox's PATH finds `tool`, as a command there would."""
    return shutil.which(tool, path=sandbox.environment()["PATH"])


def shell(run_agent, fake, command: str) -> str:
    """The result the model gets for one run_shell call of `command`."""
    code, _, _ = run_agent(reply(call("run_shell", command=command)), answer("done"), flags=["--timeout", "120"])
    assert code == 0
    return [m["content"] for m in fake.requests[-1]["messages"] if m["role"] == "tool"][0]


@pytest.mark.skipif(not found("java"), reason="java is not installed")
def test_java_starts_its_threads_and_runs_a_program(run_agent, fake, workspace):
    # It did not start: under a 1 GiB address-space limit the JVM's reservations left no room for
    # the stack of its first thread ("pthread_create failed (EAGAIN)"). See sandbox.RLIMITS.
    (workspace / "Hello.java").write_text(HELLO_JAVA)
    command = "javac Hello.java && java Hello" if found("javac") else "java Hello.java"
    assert shell(run_agent, fake, command) == "exit code: 0\n--- stdout ---\nhello from java\n"


@pytest.mark.skipif(not found("cargo"), reason="cargo is not installed (neither on the system nor with rustup)")
def test_cargo_builds_and_runs_a_crate(run_agent, fake, workspace):
    result = shell(run_agent, fake, "command -v cargo && cargo new -q --vcs none app && cd app && cargo run -q --offline")
    assert result == f"exit code: 0\n--- stdout ---\n{found('cargo')}\nHello, world!\n"
    rustup = Path.home() / ".cargo" / "bin" / "cargo"
    if rustup.exists():  # rustup's default install, in the home folder: that one is found first
        assert found("cargo") == os.path.realpath(rustup.parent) + "/cargo"


@pytest.mark.skipif(not found("node"), reason="node is not installed")
def test_node_runs_a_script(run_agent, fake, workspace):
    (workspace / "app.js").write_text("console.log([1, 2, 3].map(x => x * 14).join(' '))\n")
    assert shell(run_agent, fake, "node app.js") == "exit code: 0\n--- stdout ---\n14 28 42\n"


def test_toolchains_in_the_home_folder_are_reachable_read_only_and_nothing_else_is(run_agent, fake, workspace,
                                                                                   tmp_path, monkeypatch):
    home = tmp_path / "home"
    tools = {".cargo/bin/cargo-like": "cargo", ".nvm/versions/node/v0/bin/node-like": "nvm",
             ".pyenv/shims/pyenv-like": "pyenv", ".sdkman/candidates/java/current/bin/java-like": "sdkman",
             "go/bin/go-like": "go"}
    for path, name in tools.items():
        (home / path).parent.mkdir(parents=True)
        (home / path).write_text(f"#!/bin/sh\necho {name} from the home folder\n")
        (home / path).chmod(0o755)
    (home / ".rustup" / "toolchains" / "stable" / "lib").mkdir(parents=True)
    (home / ".rustup" / "settings.toml").write_text('default_toolchain = "stable"\n')
    (home / ".cargo" / "credentials.toml").write_text("token = 'secret'\n")
    (home / ".ssh").mkdir()
    (home / ".ssh" / "id_ed25519").write_text("private key\n")
    (home / "go" / "src").mkdir()
    # a toolchain's configuration, where registry passwords are kept: never bound
    (home / ".nvm/versions/node/v0/lib/node_modules").mkdir(parents=True)
    (home / ".nvm/versions/node/v0/etc").mkdir()
    (home / ".nvm/versions/node/v0/etc/npmrc").write_text("//registry.example.org/:_authToken=npm-secret\n")
    (home / ".sdkman/candidates/maven/3.9/conf").mkdir(parents=True)
    (home / ".sdkman/candidates/maven/3.9/conf/settings.xml").write_text("<password>maven-secret</password>\n")
    (home / ".sdkman/candidates/maven/3.9/lib").mkdir()
    (home / ".sdkman/candidates/maven/3.9/lib/maven-core.jar").write_text("a library\n")
    monkeypatch.setenv("HOME", str(home))
    nvm_bin = str(home / ".nvm/versions/node/v0/bin")  # nvm's node is the one the user's shell put on PATH
    monkeypatch.setenv("PATH", nvm_bin + os.pathsep + os.environ["PATH"])
    home = os.path.realpath(home)
    command = ("cargo-like; node-like; pyenv-like; java-like; go-like; echo RUSTUP_HOME=$RUSTUP_HOME; "
               f"ls -a {home}; ls {home}/.rustup {home}/.nvm/versions/node/v0 {home}/.sdkman/candidates/maven/3.9; "
               f"cat {home}/.cargo/credentials.toml {home}/.ssh/id_ed25519; ls {home}/go/src; "
               f"cat {home}/.nvm/versions/node/v0/etc/npmrc {home}/.sdkman/candidates/maven/3.9/conf/settings.xml; "
               f"touch {home}/.cargo/bin/planted {home}/.rustup/toolchains/stable/lib/planted")
    result = shell(run_agent, fake, command)
    out, err = result.split("\n--- stderr ---\n")
    assert out.splitlines()[1:] == [
        "--- stdout ---", "cargo from the home folder", "nvm from the home folder", "pyenv from the home folder",
        "sdkman from the home folder", "go from the home folder", f"RUSTUP_HOME={home}/.rustup",
        ".", "..", ".cargo", ".nvm", ".pyenv", ".rustup", ".sdkman", "go",
        f"{home}/.nvm/versions/node/v0:", "bin", "lib", "",
        f"{home}/.rustup:", "settings.toml", "toolchains", "",
        f"{home}/.sdkman/candidates/maven/3.9:", "lib"]
    assert "credentials.toml: No such file or directory" in err and "id_ed25519: No such file or directory" in err
    assert "go/src': No such file or directory" in err  # ~/go/bin only: GOPATH's src may hold the user's code
    assert "etc/npmrc: No such file or directory" in err and "conf/settings.xml: No such file or directory" in err
    assert err.count("Read-only file system") == 2
    assert not (Path(home) / ".cargo/bin/planted").exists()


def test_a_toolchain_folder_that_links_out_of_the_home_is_not_bound(run_agent, fake, workspace, tmp_path, monkeypatch):
    # planted by a command when the workspace is the home folder, such a link would bind what it names
    (tmp_path / "private").mkdir()
    (tmp_path / "private" / "key").write_text("secret\n")
    (tmp_path / "home").mkdir()
    (tmp_path / "home" / ".rustup").symlink_to(tmp_path / "private")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert sandbox._home_toolchains() == ({}, [], [])
    result = shell(run_agent, fake, f"echo RUSTUP_HOME=$RUSTUP_HOME; cat {os.path.realpath(tmp_path)}/private/key")
    assert result.startswith("exit code: 1\n--- stdout ---\nRUSTUP_HOME=\n") and "secret" not in result
