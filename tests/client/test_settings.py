"""The one settings model (client/config.py): its sources in order, its errors, its secrets, the Dagster resource
built from it, and `fitsync --help` starting without it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from fitsync.client.config import REAL_BASE_URL, Config, ConfigError
from fitsync.client.secret import Secret
from fitsync.resources.api import FitsyncApi, FitsyncSettings


def test_each_source_wins_over_the_one_before(tmp_path: Path) -> None:
    """defaults < config.toml < FITSYNC_* < keyword arguments, setting by setting."""
    home = tmp_path / "home"
    home.mkdir()
    (home / "config.toml").write_text("timeout = 5\nshort_window = 60\nbulk_reserve = 0.2\nmax_retries = 2\n")
    env = {"FITSYNC_HOME": str(home), "FITSYNC_RATE_SHORT_WINDOW": "30", "FITSYNC_BULK_RESERVE": "0.3"}
    config = Config.load(env, bulk_reserve=0.4)
    assert (config.long_window, config.max_retries, config.short_window, config.bulk_reserve) == (86400, 2, 30, 0.4)
    assert config.timeout == 5.0 and config.base_url == REAL_BASE_URL
    # the home given as an argument is where config.toml is read: none there
    elsewhere = Config.load(env, home=tmp_path / "elsewhere")
    assert (elsewhere.timeout, elsewhere.short_window, elsewhere.max_retries) == (30.0, 30, 5)
    # replace: validated, no source read again
    assert config.replace(timeout=1).timeout == 1.0
    with pytest.raises(ConfigError, match="timeout has an invalid value 0: it should be greater than 0"):
        config.replace(timeout=0)


def test_a_bad_value_is_one_line_naming_the_setting_its_source_and_what_is_allowed(tmp_path: Path) -> None:
    file = tmp_path / "config.toml"
    file.write_text("bulk_reserve = 1.5\n")
    cases = {
        # the file's line, and the whole range (not only the bound it broke)
        f"{file}, line 1: bulk_reserve has an invalid value 1.5: it should be less than or equal to 1 (allowed: "
        "number ≥ 0, ≤ 1)": {},
        "FITSYNC_MAX_RETRIES: max_retries has an invalid value '0': it should be greater than or equal to 1": {
            "FITSYNC_MAX_RETRIES": "0"
        },
        "FITSYNC_BASE_URL: base_url has an invalid value '127.0.0.1:8700/api/v3': it should be an http(s) address": {
            "FITSYNC_BASE_URL": "127.0.0.1:8700/api/v3"
        },
        "FITSYNC_AUTH_URL: auth_url has an invalid value 'http://exa mple.com': it should be an http(s) address": {
            "FITSYNC_AUTH_URL": "http://exa mple.com"
        },
        "FITSYNC_BASE_URL: base_url has an invalid value 'http://127.0.0.1:99999/api/v3': Port out of range": {
            "FITSYNC_BASE_URL": "http://127.0.0.1:99999/api/v3"
        },
        "FITSYNC_RATE_LONG_WINDOW: long_window has an invalid value 'a day': it should be a valid integer": {
            "FITSYNC_RATE_LONG_WINDOW": "a day"
        },
        "FITSYNC_MAX_RETRIES: max_retries has an invalid value 'five': it should be a valid integer, unable to parse "
        "string as an integer (allowed: whole number ≥ 1)": {"FITSYNC_MAX_RETRIES": "five"},
        # checked where it is set, not only by `fitsync doctor` or the code location failing to load
        "FITSYNC_NIGHTLY_SCHEDULE: nightly_schedule has an invalid value '99 * * *': it should be a cron expression": {
            "FITSYNC_NIGHTLY_SCHEDULE": "99 * * *"
        },
        # five fields, one out of its range: that one named, with what it allows
        "nightly_schedule has an invalid value '0 25 * * *': it should be a cron expression: its hour field '25' is "
        "not 0–23": {"FITSYNC_NIGHTLY_SCHEDULE": "0 25 * * *"},
    }
    for says, env in cases.items():
        with pytest.raises(ConfigError) as error:
            Config.load({"FITSYNC_HOME": str(tmp_path), "FITSYNC_BULK_RESERVE": "", **env})
        assert says in str(error.value) and "\n" not in str(error.value), str(error.value)
    with pytest.raises(ConfigError, match=r"^the fitsync_api resource's settings: timeout has an invalid value '-5'"):
        FitsyncApi(settings=FitsyncSettings(home=str(tmp_path / "empty"), timeout="-5")).config()


def test_a_secret_is_never_shown(tmp_path: Path) -> None:
    (tmp_path / "config.toml").write_text('client_secret = "hunter2"\nsecret_key = "k3y-phrase"\ntimeout = "soon"\n')
    with pytest.raises(ConfigError) as error:
        Config.load({"FITSYNC_HOME": str(tmp_path), "FITSYNC_STATE_URL": "postgresql://u:pw-9@db/s"})
    assert "timeout has an invalid value 'soon'" in str(error.value) and "hunter2" not in str(error.value)
    (tmp_path / "config.toml").write_text('client_secret = "hunter2"\nsecret_key = "k3y-phrase"\n')
    config = Config.load({"FITSYNC_HOME": str(tmp_path), "FITSYNC_STATE_URL": "postgresql://u:pw-9@db/s"})
    shown = [repr(config), str(config), f"{config}", config.model_dump_json(), repr(config.model_dump())]
    resource = FitsyncApi.for_config(config)
    shown += [repr(resource), str(resource)]
    for secret in ("hunter2", "k3y-phrase", "pw-9"):
        assert not [text for text in shown if secret in text], secret
    assert config.client_secret.reveal() == "hunter2" and config.environment()["FITSYNC_SECRET_KEY"] == "k3y-phrase"


def test_the_resource_carries_the_config_it_was_built_from(tmp_path: Path) -> None:
    """Every setting, built from the model (none listed by hand); the token key and a state URL stay out of it."""
    config = Config.load(
        {},
        home=tmp_path,
        client_id=7,
        client_secret=Secret("app-secret"),
        secret_key=Secret("token key"),
        timeout=2.5,
        nightly_timezone="Europe/Berlin",
    )
    resource = FitsyncApi.for_config(config, max_wait_seconds=3.0)
    assert set(resource.settings.model_dump()) == set(Config.model_fields)
    assert resource.settings.model_dump()["secret_key"] is None and resource.max_wait_seconds == 3.0
    assert resource.config().replace(secret_key=config.secret_key) == config
    field = FitsyncApi.to_config_schema().as_field().config_type.fields["settings"].config_type.fields["timeout"]
    assert field.description == Config.model_fields["timeout"].description and not field.is_required


def test_help_starts_without_pydantic() -> None:
    """The settings model loads when a command reads its settings: pydantic costs `fitsync --help` 0.3 s."""
    probe = (
        "import sys, contextlib, io\n"
        "from fitsync.cli.main import main\n"
        "with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):\n"
        "    main(['--help'])\n"
        "print(sorted(m for m in ('pydantic', 'pydantic_settings', 'fitsync.client.config') if m in sys.modules))\n"
    )
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0 and result.stdout.strip() == "[]", result.stdout + result.stderr
