"""Every command and option says what it is for; shell completion works from the installed `fitsync`."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from fitsync.cli.main import main


def _commands(group: click.Group, path: str = "fitsync") -> list[tuple[str, click.Command]]:
    found = []
    ctx = click.Context(group)
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        assert command is not None, name
        found.append((f"{path} {name}", command))
        if isinstance(command, click.Group):
            found.extend(_commands(command, f"{path} {name}"))
    return found


def test_every_command_and_option_has_help() -> None:
    missing = []
    for path, command in _commands(main):
        if not (command.help or command.short_help):
            missing.append(path)
        for param in command.params:
            if isinstance(param, click.Option) and not param.hidden and not param.help:
                missing.append(f"{path} {param.opts[0]}")
    assert missing == [], "no help text: " + ", ".join(missing)


def test_shell_completion_of_the_installed_command() -> None:
    installed = Path(sys.executable).with_name("fitsync")
    env = {k: v for k, v in os.environ.items() if not k.startswith("FITSYNC_")}
    script = subprocess.run(
        [str(installed)], env={**env, "_FITSYNC_COMPLETE": "bash_source"}, capture_output=True, text=True, timeout=60
    )
    assert script.returncode == 0 and "complete -o nosort -F _fitsync_completion fitsync" in script.stdout
    words = subprocess.run(
        [str(installed)],
        capture_output=True,
        text=True,
        timeout=60,
        env={**env, "_FITSYNC_COMPLETE": "bash_complete", "COMP_WORDS": "fitsync query --fo", "COMP_CWORD": "2"},
    )
    assert words.stdout.split() == ["plain,--format"], words.stdout


def test_help_starts_without_the_sandbox_dagster_polars_duckdb_or_altair() -> None:
    """`fitsync --help` lists every command (the lazy ones by their own line) without loading a whole service or
    the data stack: only the command that needs them loads them."""
    probe = (
        "import sys, contextlib, io\n"
        "from fitsync.cli.main import main\n"
        "out = io.StringIO()\n"
        "with contextlib.redirect_stdout(out), contextlib.suppress(SystemExit):\n"
        "    main(['--help'])\n"
        "heavy = [m for m in ('dagster', 'polars', 'duckdb', 'altair', 'fitsync.sandbox') if m in sys.modules]\n"
        "print(heavy)\n"
        "print(out.getvalue())\n"
    )
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    heavy, listing = result.stdout.split("\n", 1)
    assert heavy == "[]", heavy
    assert "sandbox     The Fitness Activity Service, served locally over real HTTP." in listing
    assert "  demo " in listing and "  sync " in listing


def test_a_lazy_commands_listed_line_is_its_own() -> None:
    from fitsync.cli.main import LAZY

    ctx = click.Context(main)
    for name, (_, line) in LAZY.items():
        command = main.get_command(ctx, name)
        assert command is not None and command.get_short_help_str(limit=10_000) == line, name


def test_sql_is_the_query_command_listed_as_the_sql_prompt() -> None:
    """`fitsync sql`, as a DuckDB shell user types it, is `fitsync query` (with no SQL at a terminal: the prompt); the
    README names it, so `fitsync --help` lists it too, as the prompt."""
    ctx = click.Context(main)
    assert main.get_command(ctx, "sql") is main.get_command(ctx, "query")
    listed = CliRunner().invoke(main, ["--help"], terminal_width=200).output
    assert re.search(r"^  sql +The SQL prompt on the warehouse", listed, re.MULTILINE), listed


def test_fitsync_bench_runs_the_checkouts_benchmarks_in_a_child_process(tmp_path: Path) -> None:
    """`fitsync bench` is `python -m bench` of the checkout fitsync was installed from (editable), run in a child
    process: from the checkout's root and from any other folder, with its own name in the usage lines, and the
    benchmark's exit code."""
    installed = Path(sys.executable).with_name("fitsync")
    env = {k: v for k, v in os.environ.items() if not k.startswith("FITSYNC_") and k != "PYTHONPATH"}
    root = Path(__file__).resolve().parents[2]
    for cwd in (root, tmp_path):
        listed = subprocess.run([str(installed), "bench"], cwd=cwd, env=env, capture_output=True, text=True, timeout=60)
        assert listed.returncode == 0, listed.stderr
        assert "benchmarks: " in listed.stdout and "load" in listed.stdout.split("benchmarks: ", 1)[1]
    usage = subprocess.run(
        [str(installed), "bench", "load", "--help"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60
    )
    assert usage.returncode == 0 and usage.stdout.startswith("Usage: fitsync bench load "), usage.stdout
    assert "--scales" in usage.stdout
    unknown = subprocess.run(
        [str(installed), "bench", "no-such"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60
    )
    assert unknown.returncode != 0 and "unknown benchmark 'no-such'" in unknown.stdout + unknown.stderr


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["status"], "nothing was changed."),
        (["--debug", "webhooks", "status", "--json"], "nothing was changed."),
        (["webhooks", "serve"], "the receiver stopped;"),
        (["webhooks", "subscribe", "--callback-url", "https://h/webhooks"], "`fitsync webhooks status` says whether"),
        (["webhooks", "unsubscribe", "--yes"], "`fitsync webhooks status` says whether the subscription is gone"),
        (["sandbox", "serve", "--db", "w.db"], "the sandbox stopped;"),
        (["connect", "--headless"], "no athlete was connected;"),
        (["sync", "--athlete", "7"], "nothing half-written was kept; run the command again to continue."),
    ],
)
def test_a_stops_line_says_what_that_command_leaves(
    argv: list[str], said: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Not "run the command again to continue" for a status, a server or a connect that has nothing to continue."""
    from fitsync.cli import errors

    monkeypatch.setattr(sys, "argv", ["fitsync", *argv])
    with pytest.raises(SystemExit) as stopped:
        errors._interrupted(click.Context(main))
    assert stopped.value.code == 130
    assert capsys.readouterr().err.startswith(f"Interrupted: {said}")
