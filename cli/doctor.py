"""`fitsync doctor`: one line per check, ✓ or ✗ with the fix; exits 1 when a check fails."""

from __future__ import annotations

import click


@click.command()
def doctor() -> None:
    """Check the configuration, file modes, the service and authorization addresses, the stored tokens, the
    webhook callback, and the state and warehouse databases; each failure says how to fix it."""
    from fitsync.cli.checks import run

    checks = run()
    for check in checks:
        mark = "✓" if check.ok else "✗"
        click.echo(
            f"{mark} {check.name}: {check.detail}" + ("" if check.ok or not check.fix else f" — fix: {check.fix}")
        )
    failed = [c for c in checks if not c.ok]
    if failed:
        click.echo(f"{len(failed)} of {len(checks)} checks failed", err=True)
        raise SystemExit(1)
