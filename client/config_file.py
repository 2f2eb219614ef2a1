"""The commented `config.toml` that `fitsync init` writes, and the settings reference in docs/, both from the one
table of settings in `config.py`: a setting added there is documented in both places."""

from __future__ import annotations

import json
import os
import textwrap
import time
from dataclasses import MISSING
from pathlib import Path
from typing import Any

from .config import CONFIG_FILE, FIELD_DOCS, FIELDS, Config
from .secret import Secret


def default(name: str) -> Any:
    spec = Config.__dataclass_fields__[name]
    if spec.default is not MISSING:
        return spec.default
    assert spec.default_factory is not MISSING  # every setting has a default
    return spec.default_factory()


def _toml(value: Any) -> str:
    if isinstance(value, Secret):
        value = value.reveal()
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    return json.dumps(str(value))  # a TOML basic string is a JSON string for these values


def render(values: dict[str, Any]) -> str:
    """Every setting with what it is for; those in `values` set, the rest commented out at their default."""
    lines = [
        "# fitsync configuration. Environment variables (named below each setting) win over this file.",
        "# Reference: docs/configuration.md. Check it with `fitsync doctor`.",
        "",
    ]
    for name, (env, _) in FIELDS.items():
        lines.extend(textwrap.wrap(f"{FIELD_DOCS[name]} ({env})", 100, initial_indent="# ", subsequent_indent="# "))
        if name in values:
            lines.append(f"{name} = {_toml(values[name])}")
        else:
            shown = default(name)
            lines.append(f"# {name} = {_toml(shown)}" if shown else f"# {name} =")
        lines.append("")
    return "\n".join(lines)


def reference() -> str:
    """docs/configuration.md: one row per setting."""
    rows = ["| setting | variable | default | what it is for |", "|---|---|---|---|"]
    for name, (env, _) in FIELDS.items():
        value = default(name)
        rows.append(f"| `{name}` | `{env}` | {f'`{_toml(value)}`' if value else '—'} | {FIELD_DOCS[name]} |")
    return "\n".join(
        [
            "# Configuration",
            "",
            "fitsync reads its settings from defaults, then `FITSYNC_HOME/config.toml`, then `FITSYNC_*` environment",
            "variables (the last one wins). `FITSYNC_HOME` itself (default `~/.fitsync`) is only an environment variable.",
            "`fitsync init` writes a commented `config.toml` (mode 600); `fitsync doctor` checks the result.",
            "This page is generated from the table in `client/config.py` (a test keeps it in step).",
            "",
            *rows,
            "",
        ]
    )


def write(home: Path, values: dict[str, Any]) -> Path | None:
    """Write `home/config.toml` (mode 600, the home 700). An existing file is moved aside, never overwritten:
    returns where it went."""
    home.mkdir(parents=True, exist_ok=True, mode=0o700)
    target = home / CONFIG_FILE
    kept = None
    if target.exists():
        stamp = time.strftime("%Y%m%d-%H%M%S")
        kept = next(
            p
            for n in range(1000)
            if not (p := target.with_name(f"{CONFIG_FILE}.{stamp}{f'-{n}' if n else ''}.bak")).exists()
        )
        target.rename(kept)
    fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(render(values))
    return kept
