"""Every command and option says what it is for; shell completion works from the installed `fitsync`."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import click

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
