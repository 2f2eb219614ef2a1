"""`fitsync doctor`: one line per check, ✓ or ✗ with the fix (or a JSON list with --json); exits 1 when a check
fails."""

from __future__ import annotations

import json

import click


@click.command()
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help='The checks as a JSON list (for scripts and monitoring): each with "name", "status" (ok or fail), '
    '"message" and "fix" (null when it passed). The exit code is the same.',
)
def doctor(as_json: bool) -> None:
    """Check the configuration, file modes, the service and authorization addresses, the stored tokens, the
    webhook callback, and the state and warehouse databases; each failure says how to fix it."""
    from fitsync.cli.checks import run

    checks = run()
    if as_json:
        listed = [
            {"name": c.name, "status": "ok" if c.ok else "fail", "message": c.detail, "fix": None if c.ok else c.fix}
            for c in checks
        ]
        click.echo(json.dumps(listed, indent=2))
    for check in [] if as_json else checks:
        mark = "✓" if check.ok else "✗"
        click.echo(
            f"{mark} {check.name}: {check.detail}" + ("" if check.ok or not check.fix else f" — fix: {check.fix}")
        )
    failed = [c for c in checks if not c.ok]
    if failed:
        click.echo(f"{len(failed)} of {len(checks)} checks failed", err=True)
        raise SystemExit(1)
