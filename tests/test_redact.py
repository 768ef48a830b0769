"""The secret filter (redact.py): each credential shape is filtered, ordinary code passes unchanged,
and through the real agent a credential in a file reaches neither the model nor the transcript."""

import json

import pytest
from hypothesis import given, settings, strategies as st

import redact
from fake_server import answer, call, reply

GHP = "ghp_" + "A1b2C3d4E5f6G7h8I9j0" * 2  # shapes only: none of these is a real credential
CASES = {  # text with a credential -> what is left of it
    "GitHub classic": (f"token {GHP} here", "token [redacted] here"),
    "GitHub fine-grained": ("github_pat_11ABCDEFG0123456789_abcdefghij", "[redacted]"),
    "GitHub OAuth": ("gho_" + "x" * 36, "[redacted]"),
    "GitLab": ("glpat-abcdefghij0123456789", "[redacted]"),
    "npm": ("npm_" + "a1" * 18, "[redacted]"),
    "PyPI": ("pypi-AgEIcHlwaS5vcmcCJGFiY2RlZg", "[redacted]"),
    "AWS access key id": ("aws_access_key_id=AKIAIOSFODNN7EXAMPLE", "aws_access_key_id=[redacted]"),
    "AWS secret in configuration": ("aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
                                    "aws_secret_access_key = [redacted]"),
    "Slack": ("xoxb-1234567890-abcdefghij", "[redacted]"),
    "OpenAI-style": ("OPENAI_API_KEY=sk-proj-abcdefghij0123456789XYZ", "OPENAI_API_KEY=[redacted]"),
    "PEM private key": ("-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA\n-----END RSA PRIVATE KEY-----\nnext",
                        "-----BEGIN RSA PRIVATE KEY-----[redacted]-----END RSA PRIVATE KEY-----\nnext"),
    "OpenSSH private key, cut short": ("-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA",
                                       "-----BEGIN OPENSSH PRIVATE KEY-----[redacted]"),
    "git's extraheader": ("\textraheader = AUTHORIZATION: basic eC1hY2Nlc3MtdG9rZW46Z2hz",
                          "\textraheader = AUTHORIZATION: basic [redacted]"),
    "a Bearer header": ('curl -H "Authorization: Bearer abc.def.ghi"', 'curl -H "Authorization: Bearer [redacted]"'),
    "npm's _authToken": ("//registry.example.org/:_authToken=abcd1234", "//registry.example.org/:_authToken=[redacted]"),
    "npm's _auth": ("_auth = dXNlcjpwYXNz", "_auth = [redacted]"),
    "password= in configuration": ("[db]\npassword=s3cret-pw\nhost=db", "[db]\npassword=[redacted]\nhost=db"),
    "passwd in YAML": ("  passwd: 'hunter2hunter2'", "  passwd: '[redacted]'"),
    "secret in JSON": ('{"client_secret": "abc123def456"}', '{"client_secret": "[redacted]"}'),
    "a token in settings.yml": ("api_token: 9f8e7d6c5b4a", "api_token: [redacted]"),
    "yarnrc's npmAuthToken": ('npmAuthToken: "NpmToken.abcdef"', 'npmAuthToken: "[redacted]"'),
    "cargo's credentials.toml": ('[registry]\ntoken = "cio0123456789abcdef"', '[registry]\ntoken = "[redacted]"'),
    "an inline credential.helper": ('helper = "!f() { echo username=me; echo password=s3cr3t-value; }; f"',
                                    'helper = "!f() { echo username=me; echo password=[redacted]; }; f"'),
    "Maven's settings.xml": ("<server><password>{COQLCE6DU6GtcS5P=}</password></server>",
                             "<server><password>[redacted]</password></server>"),
    "a URL's user:password": ("url = https://bot:hunter22@example.org/a.git", "url = https://[redacted]@example.org/a.git"),
    "a URL's token as user": ("git+https://tok3n@host/x", "git+https://[redacted]@host/x"),
    "a URL masked already": ("http://***@host:8080/v1", "http://***@host:8080/v1"),
    "private_token in a query": ("GET https://gitlab.example.org/api/v4/projects?private_token=abc123&page=2",
                                 "GET https://gitlab.example.org/api/v4/projects?private_token=[redacted]&page=2"),
    "access_token in a query": ("https://x.org/cb#a?access_token=ya29.abc&x=1", "https://x.org/cb#a?access_token=[redacted]&x=1"),
    "key in a query": ("https://maps.example.org/api?q=1&key=AIzaSyA1B2C3", "https://maps.example.org/api?q=1&key=[redacted]"),
}


@pytest.mark.parametrize("case", CASES)
def test_each_credential_shape_is_filtered(case):
    text, expected = CASES[case]
    assert redact.redact(text) == expected


def test_the_runs_own_secrets_are_filtered_wherever_they_are():
    assert redact.redact("key=local-key-123; again local-key-123", ["local-key-123"]) == "key=[redacted]; again [redacted]"
    assert redact.secrets("local", "http://me:hunter22@host/v1") == ["me:hunter22", "hunter22"]  # "local" is too short


ORDINARY = '''"""Log in to the service."""
import getpass
from dataclasses import dataclass


@dataclass
class Login:
    user: str
    password: str = ""
    token: str | None = None


def ask(prompt="Password: "):
    password = getpass.getpass(prompt)
    token = next(tokens(password))
    if token == "end":
        return None
    secret = os.environ["APP_SECRET"]
    self.password = password
    headers = {"Authorization": f"Bearer {token}"}
    url = f"https://{host}/api?key={key}"
    return Login(user=user, password=password, token=token), headers, url, secret


PASSWORD_PROMPT = "Enter your password"
TOKEN_TYPES = ["NAME", "NUMBER"]
see = "https://example.org/a@b and mail me@example.org, git@github.com:org/repo.git"
'''


def test_ordinary_code_passes_unchanged():
    assert redact.redact(ORDINARY) == ORDINARY
    environment = "PWD=/home/me/proj\nHOME=/tmp\nTOKENIZERS_PARALLELISM=false\n"  # `env` in the sandbox
    assert redact.redact(environment) == environment


def test_every_string_of_a_json_value_is_filtered():
    value = {"result": f"a {GHP}", "n": 3, "list": ["password=hunter22", None, True]}
    assert redact.everywhere(value) == {"result": "a [redacted]", "n": 3, "list": ["password=[redacted]", None, True]}


TOKENS = st.sampled_from([GHP, "glpat-abcdefghij0123456789", "npm_" + "a1" * 18, "AKIAIOSFODNN7EXAMPLE",
                          "xoxp-1234567890-abcdefghij", "sk-abcdefghij0123456789abcd", "pypi-AgEIcHlwaS5vcmcCJGFi"])
AROUND = st.text(st.characters(blacklist_categories=["Cs"]), max_size=40).filter(
    lambda s: not s[-1:].isalnum() and s[-1:] not in "_-")  # a token starts a word


@settings(max_examples=300, deadline=None)
@given(before=AROUND, token=TOKENS, after=st.sampled_from(["", " ", "\n", '"', ",", "; x", "\tend"]))
def test_a_token_among_any_text_never_survives(before, token, after):
    assert token not in redact.redact(before + token + after)


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=200))
def test_filtering_twice_is_filtering_once(text):
    once = redact.redact(text)
    assert redact.redact(once) == once


def test_a_token_in_git_config_reaches_neither_the_model_nor_the_transcript(run_agent, fake, workspace):
    """What actions/checkout leaves: an extra header with the job's token, read by read_file and cat."""
    (workspace / ".git").mkdir()
    header = "AUTHORIZATION: basic eC1hY2Nlc3MtdG9rZW46Z2hzX3Rva2VuMTIzNDU2Nzg5MA=="
    (workspace / ".git" / "config").write_text(
        f'[http "https://github.com/"]\n\textraheader = {header}\n[remote "origin"]\n\turl = https://github.com/o/r\n')
    (workspace / "deploy_key").write_text("-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXkt\n"
                                          "-----END OPENSSH PRIVATE KEY-----\n")
    code, _, err = run_agent(reply(call("read_file", path=".git/config")), reply(call("run_shell", command="cat .git/config")),
                             reply(call("run_shell", command="cat deploy_key")), answer("done"))
    assert code == 0
    sent, log = json.dumps(fake.requests), (workspace.parent / "transcript.jsonl").read_text()
    for where in (sent, log, err):
        assert "eC1hY2Nlc3MtdG9rZW46" not in where and "b3BlbnNzaC1rZXkt" not in where
    results = [m["content"] for m in fake.requests[-1]["messages"] if m["role"] == "tool"]
    assert all("extraheader = AUTHORIZATION: basic [redacted]" in result for result in results[:2])
    assert "-----BEGIN OPENSSH PRIVATE KEY-----[redacted]-----END OPENSSH PRIVATE KEY-----" in results[2]


def test_a_hidden_credential_is_never_written_back_as_the_mark(run_agent, fake, workspace):
    """The model sees `SECRET_KEY = "[redacted]"`; writing the file back whole would replace the
    key with the mark. It is refused, and an edit of the other lines keeps the key."""
    settings = 'SECRET_KEY = "django-insecure-0123456789"\nDEBUG = True\n'
    (workspace / "settings.py").write_text(settings)
    code, _, _ = run_agent(reply(call("read_file", path="settings.py")),
                           reply(call("write_file", path="settings.py",
                                      content='SECRET_KEY = "[redacted]"\nDEBUG = False\n')),
                           reply(call("write_file", path="settings.py", old="DEBUG = True", content="DEBUG = False")),
                           answer("done"))
    assert code == 0
    results = [m["content"] for m in fake.requests[-1]["messages"] if m["role"] == "tool"]
    assert results[0] == 'SECRET_KEY = "[redacted]"\nDEBUG = True\n'
    assert results[1].startswith("Error: ") and "stands for a credential hidden from you" in results[1]
    assert (workspace / "settings.py").read_text() == 'SECRET_KEY = "django-insecure-0123456789"\nDEBUG = False\n'
