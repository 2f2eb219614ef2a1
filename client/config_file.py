"""The commented `config.toml` that `fitsync init` writes, and the settings reference in docs/, both from the one
settings model in `config.py` (each field's description and constraints): a setting added there is documented in
both places."""

from __future__ import annotations

import difflib
import json
import os
import re
import textwrap
import time
from pathlib import Path
from typing import Any

from .config_basics import CONFIG_FILE
from .secret import Secret

# How the reference names a setting's kind of value, and its bounds (pydantic's constraints).
KINDS = {int: "whole number", float: "number", str: "text", Secret: "text, secret"}
BOUNDS = {"gt": "> {}", "ge": "≥ {}", "lt": "< {}", "le": "≤ {}"}


def allowed(annotation: Any, metadata: list[Any]) -> str:
    """'number > 0' for a float field with gt=0."""
    kind = next(
        (text for kind, text in KINDS.items() if kind == annotation or kind in getattr(annotation, "__args__", ())),
        "text",
    )
    bounds = [form.format(getattr(m, name)) for m in metadata for name, form in BOUNDS.items() if hasattr(m, name)]
    return " ".join([kind, ", ".join(bounds)]).strip()


def unknown_setting(path: Path, name: str, known: list[str]) -> str:
    """The error for a key of `path` that is no setting: the file, the key's line, and the closest setting (a typo:
    `tiemout` → `timeout`), or where the settings are listed."""
    line = line_of(path, name)
    where = f"{path}, line {line}" if line else str(path)
    close = difflib.get_close_matches(name, known, n=1)
    hint = f"did you mean `{close[0]}`?" if close else "docs/configuration.md lists the settings"
    return f"{where}: unknown setting {name!r}: {hint}"


def line_of(path: Path, name: str) -> int | None:
    """The line (1-based) that sets top-level key `name` (bare or quoted), or opens table [name]."""
    key = re.escape(name)
    pattern = re.compile(rf"""^\s*(?:(?:{key}|"{key}"|'{key}')\s*[=.]|\[\[?\s*(?:{key}|"{key}"|'{key}')\s*[\].])""")
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return None
    return next((number for number, text in enumerate(lines, 1) if pattern.match(text)), None)


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
    from .config import documented  # pydantic loads when a file is written, not with `fitsync init --help`

    lines = [
        "# fitsync configuration. Environment variables (named below each setting) win over this file.",
        "# Reference: docs/configuration.md. Check it with `fitsync doctor`.",
        "",
    ]
    for name, env, shown, doc in documented():
        lines.extend(textwrap.wrap(f"{doc} ({env})", 100, initial_indent="# ", subsequent_indent="# "))
        if name in values:
            lines.append(f"{name} = {_toml(values[name])}")
        else:
            lines.append(f"# {name} = {_toml(shown)}" if shown else f"# {name} =")
        lines.append("")
    return "\n".join(lines)


def reference() -> str:
    """docs/configuration.md: one row per setting."""
    from .config import Config, documented

    rows = ["| setting | variable | default | allowed | what it is for |", "|---|---|---|---|---|"]
    for name, env, value, doc in documented():
        info = Config.model_fields[name]
        shown = f"`{_toml(value)}`" if value else "—"
        rows.append(f"| `{name}` | `{env}` | {shown} | {allowed(info.annotation, info.metadata)} | {doc} |")
    return "\n".join(
        [
            "# Configuration",
            "",
            "fitsync reads its settings from defaults, then `FITSYNC_HOME/config.toml`, then `FITSYNC_*` environment",
            "variables (the last one wins). `FITSYNC_HOME` itself (default `~/.fitsync`) is only an environment variable,",
            "and so is `FITSYNC_DEBUG`: `1` (what `fitsync --debug` sets) shows an unexpected error's traceback.",
            "`fitsync init` writes a commented `config.toml` (mode 600); `fitsync doctor` checks the result.",
            "A value outside what is allowed stops the command with one line naming the setting and where the value",
            "came from. This page is generated from the settings model in `client/config.py` (a test keeps it in step).",
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
