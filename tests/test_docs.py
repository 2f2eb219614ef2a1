"""The docs describe what the code does: every operation and every setting appears in docs/sandbox.md."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest

from fitsync.sandbox.operations import OPERATIONS
from fitsync.sandbox.settings import Settings

DOCS = Path(__file__).resolve().parent.parent / "docs"


def test_sandbox_doc_lists_every_operation() -> None:
    text = (DOCS / "sandbox.md").read_text()
    for op in OPERATIONS:
        assert f"| `{op.method} {op.path}` | {op.operation_id} |" in text, op.operation_id


def test_sandbox_doc_lists_every_setting() -> None:
    text = (DOCS / "sandbox.md").read_text()
    for f in dataclasses.fields(Settings):
        assert f"`{f.name}`" in text, f.name


def test_conformance_doc_is_current_and_names_real_tests() -> None:
    from .conformance_table import defined_tests, named_tests, render

    text = (DOCS / "sandbox-conformance.md").read_text()
    assert text == render(), "regenerate: python -m tests.conformance_table > docs/sandbox-conformance.md"
    defined = defined_tests()
    named = {n for n in named_tests(text) if not n.endswith("_")}
    wildcard = {n.rstrip("*") for n in re.findall(r"`(test_[a-z0-9_]+)\*`", text)}
    assert named - defined - wildcard == set(), "the table names tests that do not exist"
    spec_rows = {n for n in defined if re.match(r"test_s\d+_\d+_r\d+_", n)}
    assert spec_rows - named == set(), "conformance tests missing from the table"


@pytest.mark.parametrize("doc", ["real-service.md", "security.md"])
def test_tables_of_tests_name_real_tests(doc: str) -> None:
    """Each row of docs/real-service.md and docs/security.md names the tests that show it: they must exist."""
    text = (DOCS / doc).read_text()
    named = set(re.findall(r"::(test_[a-z0-9_]+)", text))
    defined = {
        m
        for path in DOCS.parent.joinpath("tests").rglob("test_*.py")
        for m in re.findall(r"^def (test_[a-z0-9_]+)", path.read_text(), re.M)
    }
    assert len(named) > 25 and named - defined == set(), "the table names tests that do not exist"


README = DOCS.parent / "README.md"


def readme_commands(section: str | None = None) -> list[list[str]]:
    """The README's shell commands (of one `## section`, or all), as a shell splits them: continuations joined,
    comments dropped, `&&` chains and `&` taken apart."""
    import shlex

    text = README.read_text()
    if section is not None:
        text = text.split(f"## {section}\n", 1)[1].split("\n## ", 1)[0]
    commands = []
    for block in re.findall(r"```sh\n(.*?)```", text, re.S):
        for line in block.replace("\\\n", " ").splitlines():
            words: list[str] = []
            for word in [*shlex.split(line, comments=True), "&&"]:
                if word in ("&&", "&"):
                    if words:
                        commands.append(words)
                    words = []
                else:
                    words.append(word)
    return commands


def test_readme_fitsync_commands_are_commands_and_options_that_exist() -> None:
    """Every `fitsync …` the README shows parses as written (the command, its options and their values), without
    running it."""
    import click

    from fitsync.cli.main import main

    shown = [c for c in readme_commands() if c[0] in ("fitsync", ".venv/bin/fitsync")]
    assert len(shown) >= 12, shown
    for words in shown:
        command: click.Command = main
        args, context = words[1:], None
        while isinstance(command, click.Group) and args and not args[0].startswith("-"):
            context = command.make_context(command.name or "fitsync", [args[0]], parent=context, resilient_parsing=True)
            name, sub, args = command.resolve_command(context, args)
            assert sub is not None, words
            command = sub
        command.make_context(command.name or "", list(args), parent=context)  # raises on an unknown option or value


def test_readme_says_to_activate_the_venv_where_it_uses_bare_commands() -> None:
    """The account, Dagster and sandbox sections call `fitsync` and `dagster` bare: each says to activate the venv
    (or to call .venv/bin/fitsync) first; the sandbox example says how long a sync takes under its limits."""
    for section in ("Using it with your account", "Scheduled and event-driven syncs with Dagster", "The sandbox"):
        text = README.read_text().split(f"## {section}\n", 1)[1].split("\n## ", 1)[0]
        assert ".venv/bin/activate" in text.split("```sh", 1)[0] + text.split("```sh", 1)[1][:40], section
    sandbox = README.read_text().split("## The sandbox\n", 1)[1].split("\n## ", 1)[0]
    assert "--set read_limit_short=" in sandbox and "finish in seconds" in sandbox and "6 minutes" in sandbox


@pytest.mark.parametrize("fitsync_home", [True, False])
def test_readmes_dagster_home_is_the_one_fitsync_sync_uses(tmp_path: Path, fitsync_home: bool) -> None:
    """`fitsync sync` keeps its runs in FITSYNC_HOME/dagster: the README's DAGSTER_HOME line names the same folder,
    with FITSYNC_HOME set elsewhere too (it said ~/.fitsync/dagster whatever the home was)."""
    import subprocess

    section = README.read_text().split("## Scheduled and event-driven syncs with Dagster\n", 1)[1]
    line = next(x for x in section.splitlines() if x.startswith("export DAGSTER_HOME="))
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path / "user")}
    if fitsync_home:
        env["FITSYNC_HOME"] = str(tmp_path / "elsewhere")
    shown = subprocess.run(
        ["bash", "-c", f'{line.split("#")[0]} && echo "$DAGSTER_HOME"'],
        cwd=DOCS.parent,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    home = tmp_path / "elsewhere" if fitsync_home else tmp_path / "user" / ".fitsync"
    assert Path(shown) == home / "dagster" and (home / "dagster" / "dagster.yaml").exists(), shown


def test_readme_sandbox_commands_run_as_written(tmp_path: Path) -> None:
    """The sandbox section's three commands, as written but on a free port and with the app it printed: the server
    comes up with the fast limits, the app is registered, and fitsync is configured for them."""
    import json
    import socket
    import subprocess
    import sys
    import time

    import httpx

    serve, create, init = readme_commands("The sandbox")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = str(s.getsockname()[1])
    serve[serve.index("--port") + 1] = port
    run = [sys.executable, "-m", "fitsync.cli.main"]
    env = {k: v for k, v in __import__("os").environ.items() if not k.startswith(("FITSYNC_", "DAGSTER_"))}
    env["PYTHONPATH"] = str(DOCS.parent)
    server = subprocess.Popen(
        [*run, *serve[1:]], cwd=tmp_path, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                answer = httpx.get(f"http://127.0.0.1:{port}/api/v3/athlete", timeout=2)
                break
            except httpx.HTTPError:
                assert server.poll() is None and time.monotonic() < deadline, "the sandbox did not start"
                time.sleep(0.2)
        assert answer.status_code == 401
        app = subprocess.run([*run, *create[1:]], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)
        assert app.returncode == 0, app.stderr
        registered = json.loads(app.stdout.strip().splitlines()[-1])
        assert init[init.index("--client-id") + 1] == str(registered["client_id"]), "the id a new sandbox gives"
        init[init.index("--client-secret") + 1] = registered["client_secret"]
        for option in ("--base-url", "--auth-url"):
            init[init.index(option) + 1] = init[init.index(option) + 1].replace("8700", port)
        configured = subprocess.run(
            [*run, *init[1:]],
            cwd=tmp_path,
            env={**env, "FITSYNC_HOME": str(tmp_path / "home")},
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert configured.returncode == 0, configured.stderr
        assert f"http://127.0.0.1:{port}/api/v3" in (tmp_path / "home" / "config.toml").read_text()
        limits = subprocess.run(
            [*run, "sandbox", "settings", "--db", "sandbox.db"], cwd=tmp_path, env=env, capture_output=True, text=True
        )
        assert '"read_limit_short": 5000' in limits.stdout.replace("\n", " "), limits.stdout
    finally:
        server.terminate()
        server.wait(timeout=30)
