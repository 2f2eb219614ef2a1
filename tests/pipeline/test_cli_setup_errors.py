"""A new user's first commands when something is not ready yet (a busy port, a value `init` cannot use, no
credentials, no receiver, no browser, nothing pasted): one line naming what happened and the fix, the documented
exit code, and a home left as it was.

| finding | test |
|---|---|
| `sandbox serve` on a busy port | test_sandbox_serve_on_a_busy_port_says_so_first_and_creates_nothing |
| `connect --port` busy | test_connect_on_a_busy_port_names_the_fix_and_creates_nothing |
| `init` with a value the settings refuse | test_init_refuses_a_value_before_writing_anything |
| `connect --headless`: not a URL, no input, Ctrl-C | test_connect_headless_* |
| `connect --timeout` runs out | test_connect_that_times_out_names_the_fix |
| `webhooks subscribe` with no receiver | test_subscribe_with_no_receiver_names_webhooks_serve |
| a command refused for lack of credentials | test_a_command_without_credentials_leaves_the_home_as_it_was |
| `webhooks serve` unconfigured, unsubscribed | test_serve_refuses_without_credentials_and_warns_without_a_subscription |
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from fitsync.client.config import Config

from ..processes import (
    FITSYNC,
    REPO,
    Terminal,
    as_a_shell_starts_it,
    foreground,
    free_port,
    run_fitsync,
    serve_receiver,
    subprocess_env,
)
from ..sandbox_harness import Harness
from .conftest import make_config, write_config

CREDENTIALS = {"FITSYNC_CLIENT_ID": "4711", "FITSYNC_CLIENT_SECRET": "not-a-real-secret"}


def answers(sb: Harness) -> dict[str, str]:
    """An authorization page that answers (connect asks it before showing its address): the sandbox's."""
    return {"FITSYNC_AUTH_URL": sb.server.base_url}


def test_connect_to_an_authorization_page_that_does_not_answer_says_so_first(tmp_path: Path) -> None:
    """Not its address printed, then minutes of waiting for a redirect that cannot come; and nothing made."""
    gone = f"http://127.0.0.1:{free_port()}"
    for args in (["--no-browser"], ["--headless"]):
        done = run(tmp_path / "home", "connect", *args, **CREDENTIALS, FITSYNC_AUTH_URL=gone)
        assert done.returncode == 1, done.stdout + done.stderr
        [line] = errors(done)
        assert line == (
            f"Error: the authorization page {gone}/oauth/authorize does not answer (ConnectError): check auth_url / "
            "FITSYNC_AUTH_URL: the site root, e.g. https://www.strava.com"
        ), line
        assert "Open this address" not in done.stdout and not (tmp_path / "home").exists()


def run(home: Path, *args: str, stdin: str | None = None, **env: str) -> subprocess.CompletedProcess[str]:
    return run_fitsync(list(args), env=subprocess_env(home, **env), cwd=home.parent, input=stdin, timeout=60)


@contextmanager
def busy_port() -> Iterator[int]:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        yield busy.getsockname()[1]


def errors(done: subprocess.CompletedProcess[str]) -> list[str]:
    assert "Traceback" not in done.stdout + done.stderr, done.stderr
    return [line for line in done.stderr.splitlines() if line.startswith("Error")]


def test_sandbox_serve_on_a_busy_port_says_so_first_and_creates_nothing(tmp_path: Path) -> None:
    with busy_port() as port:
        done = run(tmp_path / "home", "sandbox", "serve", "--db", str(tmp_path / "x.db"), "--port", str(port))
    assert done.returncode == 1, done.stdout + done.stderr
    assert done.stdout == "" and done.stderr.strip() == (
        f"Error: port {port} is in use on 127.0.0.1: stop what listens there, or pass --port with a free one"
    )
    assert list(tmp_path.iterdir()) == []  # no db, no console key, no server secret


def test_connect_on_a_busy_port_names_the_fix_and_creates_nothing(tmp_path: Path) -> None:
    home = tmp_path / "home"
    with busy_port() as port:
        done = run(home, "connect", "--port", str(port), "--no-browser", **CREDENTIALS)
    assert done.returncode == 1, done.stdout + done.stderr
    assert errors(done) == [done.stderr.strip()] and done.stdout == ""
    assert done.stderr.startswith(f"Error: port {port} is in use on 127.0.0.1: stop what listens there, or pass --port")
    assert "Errno" not in done.stderr and not home.exists()


@pytest.mark.parametrize(
    "args, option, says",
    [
        (["--client-id", "-3", "--client-secret", "x"], "--client-id", "it should be greater than 0"),
        (
            ["--client-id", "1", "--client-secret", "x", "--base-url", "notaurl"],
            "--base-url",
            "it should be an http(s) address",
        ),
        (["--client-id", "1", "--client-secret", "x", "--auth-url", "www.strava.com"], "--auth-url", "http(s)"),
    ],
    ids=["client-id-negative", "base-url-not-a-url", "auth-url-without-scheme"],
)
def test_init_refuses_a_value_before_writing_anything(tmp_path: Path, args: list[str], option: str, says: str) -> None:
    home = tmp_path / "home"
    done = run(home, "init", *args)
    assert done.returncode == 2, done.stdout + done.stderr
    [line] = errors(done)
    assert f"'{option}'" in line and says in line, line
    assert not home.exists()

    # A home that works stays as it was: no half-right file in its place, no .bak copy.
    assert run(home, "init", "--client-id", "5", "--client-secret", "good").returncode == 0
    before = {p.name: p.read_bytes() for p in home.iterdir()}
    again = run(home, "init", *args)
    assert again.returncode == 2 and {p.name: p.read_bytes() for p in home.iterdir()} == before, again.stderr
    assert Config.load(env={}, home=home).client_id == 5  # later commands still load the settings


def test_connect_headless_says_when_what_was_pasted_is_not_the_redirect(tmp_path: Path, sb: Harness) -> None:
    done = run(tmp_path / "home", "connect", "--headless", stdin="garbage\n", **CREDENTIALS, **answers(sb))
    assert done.returncode == 1, done.stdout + done.stderr
    assert errors(done) == [
        "Error: that is not the address the browser was sent to: paste the whole URL from the address bar "
        "(it starts with http://localhost/fitsync/callback)"
    ]
    assert "state does not match" not in done.stderr


def test_connect_headless_without_input_is_a_usage_error(tmp_path: Path, sb: Harness) -> None:
    done = run(tmp_path / "home", "connect", "--headless", **CREDENTIALS, **answers(sb))  # stdin: /dev/null
    assert done.returncode == 2, done.stdout + done.stderr
    [line] = errors(done)
    assert line.startswith("Error: --headless needs the redirected URL typed in"), line
    assert "Aborted" not in done.stdout + done.stderr
    assert done.stdout.count("Redirected URL:") == 1, done.stdout


@pytest.mark.parametrize(
    "args, said",
    [
        (["--timeout", "-5"], "'--timeout': -5.0 is not in the range x>=1"),
        (["--scopes", "read,bogus"], "'--scopes': 'bogus': not a scope of the service (it knows read, read_all"),
    ],
    ids=["timeout", "scopes"],
)
def test_connect_refuses_a_value_it_cannot_use(tmp_path: Path, args: list[str], said: str) -> None:
    done = run(tmp_path / "home", "connect", "--no-browser", *args, **CREDENTIALS)
    assert done.returncode == 2 and said in done.stderr, done.stderr
    assert not (tmp_path / "home").exists()


@pytest.mark.parametrize("option", [["--port", "8123"], ["--no-browser"]])
def test_connect_headless_with_a_redirect_option_is_a_usage_error(tmp_path: Path, option: list[str]) -> None:
    """--port and --no-browser shape a redirect to this machine, which --headless does without: not ignored."""
    done = run(tmp_path / "home", "connect", "--headless", *option, **CREDENTIALS)
    assert done.returncode == 2, done.stdout + done.stderr
    [line] = errors(done)
    assert f"{option[0]} shapes the redirect to this machine, and with --headless there is none" in line, line
    assert "Open this address" not in done.stdout and not (tmp_path / "home").exists()


@pytest.mark.parametrize(
    "signum, code, said", [(signal.SIGINT, 130, "Interrupted"), (signal.SIGTERM, 143, "Stopped by SIGTERM")]
)
def test_connect_headless_stopped_at_the_prompt_says_so(
    tmp_path: Path, sb: Harness, signum: int, code: int, said: str
) -> None:
    """Ctrl-C, or SIGTERM (which killed it without a word: cli/terminate.py)."""
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    page = sb.server.base_url
    (home / "config.toml").write_text(f'client_id = 4711\nclient_secret = "not-a-real-secret"\nauth_url = "{page}"\n')
    (home / "config.toml").chmod(0o600)
    term = Terminal(home, "connect", "--headless")
    term.wait_for("Redirected URL: ")
    term.process.send_signal(signum)  # Ctrl-C as the terminal sends it (this pty is not the controlling one)
    seen = term.wait_for(f"{said}: no athlete was connected; `fitsync connect` starts over.")
    assert term.close() == code, seen
    assert "Aborted" not in seen and "Traceback" not in seen and "to continue" not in seen, seen


def test_a_stop_just_before_the_hidden_read_begins_still_ends_it() -> None:
    """A signal landing between the prompt and the read (its handler has run, no read was under way to interrupt)
    left getpass's read waiting for a line (`connect --headless` at its prompt, once in a CI run): the read is made
    to begin only then, and must end with SIGTERM's own line and code."""
    script = (
        "import os, signal\n"
        "from fitsync.cli import terminal_line\n"
        "line = terminal_line.line\n"
        "terminal_line.line = lambda stops: (os.kill(os.getpid(), signal.SIGTERM), line(stops))[1]\n"
        "from fitsync.cli.entry import run\n"
        "run(lambda: terminal_line.hidden_line('Secret: '))\n"
    )
    term = Terminal(Path("unused"), command=[sys.executable, "-c", script], env=dict(os.environ))
    try:
        seen = term.wait_for_exit(timeout=30)
    finally:
        term.process.kill()
    assert term.close() == 143, seen
    assert seen.startswith("Secret: ") and "Stopped by SIGTERM" in seen and "Traceback" not in seen, seen


def stopped_at_ready(command: str, signum: int) -> tuple[int, str]:
    """The console script (cli/entry.py) running `command` (Python, printing "ready" at the moment to stop it), sent
    `signum` then: its exit status and what it said on stderr."""
    script = f"from fitsync.cli.entry import run; run(lambda: exec({command!r}))"
    process = subprocess.Popen(
        [sys.executable, "-c", script],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=as_a_shell_starts_it,
    )
    try:
        assert process.stdout is not None and process.stdout.readline() == "ready\n"
        process.send_signal(signum)
        _, err = process.communicate(timeout=30)
    finally:
        process.kill()
    return process.returncode, err


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_stop_once_the_command_has_ended_does_not_change_its_outcome(signum: int) -> None:
    """Python's shutdown after the command (its handlers gone) took a stop signal as a kill: exit -2 / -15 of a
    command that had done its work and said so. An exit handler that waits stands in for those tenths of a second."""
    ends = "import atexit; atexit.register(lambda: (print('ready', flush=True), __import__('time').sleep(1)))"
    assert stopped_at_ready(ends, signum) == (0, "")


def test_python_s_shutdown_collects_nothing_the_command_made() -> None:
    """Python's shutdown ran a garbage collection over every object left (after a sync: 0.45 s of Dagster's, on 2
    cores). The console script freezes them as the command ends; an object in a reference cycle, kept to the end,
    says whether a collection reached it."""
    cycle = (
        "import __main__, os\n"
        "class Cycle:\n"
        "    def __init__(self): self.me = self\n"
        "    def __del__(self, write=os.write): write(1, b'collected')\n"
        "__main__.kept = Cycle()\n"
    )
    plain = subprocess.run([sys.executable, "-c", cycle], capture_output=True, text=True, timeout=60)
    assert plain.stdout == "collected"  # Python's own shutdown: what the console script spares
    script = f"from fitsync.cli.entry import run; run(lambda: exec({cycle!r}, {{}}))"
    done = subprocess.run([sys.executable, "-c", script], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")


@pytest.mark.parametrize(
    "signum, code, said", [(signal.SIGINT, 130, "Interrupted"), (signal.SIGTERM, 143, "Stopped by SIGTERM")]
)
def test_a_stop_while_the_command_loads_is_one_line(signum: int, code: int, said: str) -> None:
    """The console script's first lines (cli/entry.py): a stop before the command's own handling, while its modules
    load, printed Python's traceback (Ctrl-C) or nothing at all (SIGTERM). Here a command that waits stands in for
    the loading, whose tenth of a second a test cannot aim at."""
    waits = "import time; print('ready', flush=True); time.sleep(60)"
    assert stopped_at_ready(waits, signum) == (code, f"{said}: nothing was started.\n")


def test_init_ended_at_its_prompt_is_interrupted_as_every_command_is(tmp_path: Path) -> None:
    """Ctrl-D (end of input) at a prompt: not click's "Aborted!" and exit 1, but "Interrupted", 130, and no file
    written. Click turns Ctrl-C there into the same Abort (test_connect_headless_ctrl_c… sends it)."""
    home = tmp_path / "home"
    with foreground(home, "init") as term:
        term.wait_for("Client id of your app at the service: ")
        term.type("\x04")  # end of input at the prompt
        seen = term.wait_for("Interrupted")
        assert term.close() == 130, seen
    assert "Aborted" not in seen and "Traceback" not in seen and not (home / "config.toml").exists(), seen


def test_connect_that_times_out_names_the_fix(tmp_path: Path, sb: Harness) -> None:
    done = run(tmp_path / "home", "connect", "--no-browser", "--timeout", "1", **CREDENTIALS, **answers(sb))
    assert done.returncode == 1, done.stdout + done.stderr
    [line] = errors(done)
    assert line.startswith("Error: no answer from the authorization page within 1 s: open the address printed above")
    assert "--headless" in line and "--timeout" in line, line


def test_subscribe_with_no_receiver_names_webhooks_serve(sb: Harness, tmp_path: Path) -> None:
    home = tmp_path / "home"
    write_config(make_config(sb.server, home, sb.new_app()))
    port = free_port()
    callback = f"http://127.0.0.1:{port}/webhooks"  # nothing listens there
    done = run(home, "webhooks", "subscribe", "--callback-url", callback)
    assert done.returncode == 1, done.stdout + done.stderr
    [line] = errors(done)
    assert line.startswith(f"Error: the service could not validate the callback at {callback} ("), line
    assert f"start `fitsync webhooks serve --port {port}` so that it answers at that address" in line, line
    assert "400" not in line, line


@pytest.mark.parametrize(
    "args",
    [
        ["webhooks", "status"],
        ["connect", "--no-browser", "--timeout", "1"],
        ["connect", "--headless"],
        ["webhooks", "subscribe", "--callback-url", "http://127.0.0.1:9/webhooks"],
        ["webhooks", "unsubscribe", "--yes"],
        ["webhooks", "serve", "--port", "0"],
        ["disconnect", "5", "--yes"],
        ["sync"],
    ],
    ids=["status", "connect", "connect-headless", "subscribe", "unsubscribe", "serve", "disconnect", "sync"],
)
@pytest.mark.parametrize("before", ["absent", "empty"])
def test_a_command_without_credentials_leaves_the_home_as_it_was(tmp_path: Path, args: list[str], before: str) -> None:
    home = tmp_path / "home"
    if before == "empty":
        home.mkdir(mode=0o700)
    done = run(home, *args)
    # disconnecting someone never connected is a usage error (exit 2), as `sync --athlete` of one is
    assert done.returncode == (2 if args[0] == "disconnect" else 1), done.stdout + done.stderr
    [line] = errors(done)
    says = (
        "athlete 5 is not connected: `fitsync athletes` lists who is connected"
        if args[0] == "disconnect"
        else "no application credentials: run `fitsync init`"
    )
    assert says in line, line
    assert (list(home.iterdir()) == []) if before == "empty" else not home.exists()


def test_serve_refuses_without_credentials_and_warns_without_a_subscription(tmp_path: Path) -> None:
    home = tmp_path / "home"
    refused = run(home, "webhooks", "serve", "--port", str(free_port()))
    assert refused.returncode == 1 and refused.stdout == "", refused.stdout + refused.stderr
    assert errors(refused) == [refused.stderr.strip()] and "`fitsync init`" in refused.stderr
    assert not home.exists()

    log = tmp_path / "serve.log"
    receiver = serve_receiver(subprocess_env(home, **CREDENTIALS), free_port(), log)
    receiver.terminate()
    receiver.wait(20)
    warnings = [line for line in log.read_text().splitlines() if line.startswith("Warning")]
    assert len(warnings) == 1 and "no subscription yet" in warnings[0], log.read_text()
    assert "`fitsync webhooks subscribe --callback-url" in warnings[0], warnings


def test_sandbox_serve_still_serves_on_a_free_port(tmp_path: Path) -> None:
    """The port bound first is the one the server answers on (here the one the system chose: --port 0)."""
    import httpx

    from ..sandbox_harness import wait_until

    process = subprocess.Popen(
        [*FITSYNC, "sandbox", "serve", "--db", str(tmp_path / "x.db"), "--port", "0", "--athletes", "1"],
        cwd=REPO,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        assert process.stdout is not None
        said = process.stdout.readline()  # on stderr, merged here: the new world is being generated
        assert said.startswith("Generating the sandbox world: 1 athlete, 60 activities"), said
        first = process.stdout.readline()  # stdout's first line
        assert " on http://127.0.0.1:" in first and ":0/" not in first, first
        base = first.split(" on ", 1)[1].split("/api/v3")[0]

        def healthy() -> bool:
            try:
                return httpx.get(base + "/sandbox/health", timeout=1).status_code == 200
            except httpx.TransportError:
                return False

        wait_until(healthy, 60, "the sandbox to answer")
    finally:
        process.terminate()
        process.wait(20)
