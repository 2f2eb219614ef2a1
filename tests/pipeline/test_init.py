"""`fitsync init` writes a commented config.toml that loads back, mode 600, never overwriting the one before."""

from __future__ import annotations

import stat
import subprocess
from pathlib import Path

from fitsync.client.config import Config
from fitsync.client.config_file import reference

from ..processes import run_fitsync
from .conftest import REPO, subprocess_env

DOCS = REPO / "docs"


def init(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return run_fitsync(["init", *args], env=subprocess_env(home), timeout=60)


def test_init_writes_a_private_commented_config_and_keeps_the_previous_one(tmp_path: Path) -> None:
    home = tmp_path / "home"
    first = init(home, "--client-id", "4711", "--client-secret", "s3cret-value")
    assert first.returncode == 0, first.stderr
    written = home / "config.toml"
    assert stat.S_IMODE(written.stat().st_mode) == 0o600 and stat.S_IMODE(home.stat().st_mode) == 0o700
    config = Config.load(env={}, home=home)
    assert config.client_id == 4711 and config.client_secret.reveal() == "s3cret-value"
    text = written.read_text()
    comments = " ".join(" ".join(line.removeprefix("# ") for line in text.splitlines()).split())
    for name, info in Config.settings().items():  # every setting is there, explained, with its variable
        assert f"{name} =" in text and f"{info.description} ({Config.variable(name)})" in comments, name
    assert "s3cret-value" not in first.stdout + first.stderr and "fitsync doctor" in first.stdout

    again = init(home, "--client-id", "4712", "--secret-in-env", "--base-url", "http://127.0.0.1:9/api/v3/")
    assert again.returncode == 0, again.stderr
    kept = [p for p in home.iterdir() if p.name.endswith(".bak")]
    assert len(kept) == 1 and "4711" in kept[0].read_text() and stat.S_IMODE(kept[0].stat().st_mode) == 0o600
    config = Config.load(env={}, home=home)
    assert (config.client_id, bool(config.client_secret), config.base_url) == (4712, False, "http://127.0.0.1:9/api/v3")
    # what the new file changes is said, old → new, a secret's values never
    assert "  client_id: 4711 → 4712" in again.stdout, again.stdout
    assert "  base_url: https://www.strava.com/api/v3 → http://127.0.0.1:9/api/v3" in again.stdout
    assert "  client_secret: removed from the file (not shown: a secret)" in again.stdout
    assert "s3cret-value" not in again.stdout + again.stderr and "auth_url" not in again.stdout

    reset = init(home, "--client-id", "4712", "--client-secret", "an0ther-secret")  # --base-url left out: the default
    assert reset.returncode == 0, reset.stderr
    assert "  base_url: http://127.0.0.1:9/api/v3 → https://www.strava.com/api/v3" in reset.stdout, reset.stdout
    assert "  client_secret: set (not shown: a secret)" in reset.stdout and "client_id" not in reset.stdout
    assert "an0ther-secret" not in reset.stdout + reset.stderr


def test_init_refuses_what_would_not_work_and_asks_nothing_off_a_terminal(tmp_path: Path) -> None:
    home = tmp_path / "home"
    wrong = init(home, "--client-id", "1", "--client-secret", "x", "--auth-url", "https://www.strava.com/oauth")
    assert wrong.returncode == 2 and "try https://www.strava.com" in wrong.stderr, wrong.stderr
    unasked = init(home)
    assert unasked.returncode == 2 and "--client-id" in unasked.stderr and "Traceback" not in unasked.stderr
    assert not (home / "config.toml").exists()


def test_the_settings_reference_is_current() -> None:
    assert all(info.description for info in Config.model_fields.values())  # every setting says what it is for
    assert (DOCS / "configuration.md").read_text() == reference(), (
        "regenerate: python -c 'from fitsync.client.config_file import reference; print(reference(), end=\"\")' "
        "> docs/configuration.md"
    )
    assert "docs/configuration.md" in (REPO / "README.md").read_text()
