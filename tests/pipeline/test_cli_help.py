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
    for name, command in group.commands.items():
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
    script = subprocess.run([str(installed)], env={**env, "_FITSYNC_COMPLETE": "bash_source"}, capture_output=True,
                            text=True, timeout=60)
    assert script.returncode == 0 and "complete -o nosort -F _fitsync_completion fitsync" in script.stdout
    words = subprocess.run([str(installed)], capture_output=True, text=True, timeout=60,
                           env={**env, "_FITSYNC_COMPLETE": "bash_complete", "COMP_WORDS": "fitsync query --fo",
                                "COMP_CWORD": "2"})
    assert words.stdout.split() == ["plain,--format"], words.stdout
