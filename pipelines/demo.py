"""`fitsync demo`: the main job end to end on an embedded sandbox.

Until the pipeline lands, the demo starts the sandbox, walks an OAuth grant as an athlete would in a
browser, and makes a few API calls.
"""

from __future__ import annotations

import secrets

import click
import httpx
from rich.console import Console
from rich.table import Table

from fitsync.sandbox import browser
from fitsync.sandbox.server import SeedOptions, ServerOptions, ServerThread

REDIRECT_URI = "http://localhost:8765/callback"
SCOPES = "read,read_all,profile:read_all,activity:read_all"


@click.command()
@click.option("--athletes", default=2, show_default=True, type=click.IntRange(1, 50))
@click.option("--activities-per-athlete", default=40, show_default=True, type=click.IntRange(1, 2000))
def demo(athletes: int, activities_per_athlete: int) -> None:
    """Start an embedded sandbox, connect an athlete with OAuth and read their data."""
    out = Console()
    options = ServerOptions(port=0, seed=SeedOptions(athletes=athletes, activities_per_athlete=activities_per_athlete))
    with ServerThread(options) as sandbox:
        out.print(f"[bold]Sandbox[/] running at {sandbox.api_url}")
        console_headers = {"X-Sandbox-Console-Key": sandbox.console_key}
        with httpx.Client(base_url=sandbox.base_url, timeout=10) as http:
            app = http.post("/sandbox/apps", json={"name": "fitsync demo", "callback_domain": "localhost"},
                            headers=console_headers).json()
            state = secrets.token_urlsafe(16)
            authorize = str(httpx.URL("/oauth/authorize", params={
                "client_id": app["client_id"], "redirect_uri": REDIRECT_URI, "response_type": "code",
                "scope": SCOPES, "state": state}))
            athlete_id = http.get("/sandbox/athletes", headers=console_headers).json()[0]["id"]
            redirect = browser.consent(http, authorize, athlete_id)
            if redirect.params.get("state") != state:
                raise click.ClickException("state mismatch in the OAuth redirect")
            token = http.post("/oauth/token", data={"client_id": app["client_id"], "client_secret": app["client_secret"],
                                                    "code": redirect.params["code"], "grant_type": "authorization_code"}).json()
            out.print(f"Connected athlete {token['athlete']['firstname']} {token['athlete']['lastname']} "
                      f"with scopes [cyan]{token['scope']}[/]")
            auth = {"Authorization": f"Bearer {token['access_token']}"}
            athlete = http.get("/api/v3/athlete", headers=auth).json()
            stats = http.get(f"/api/v3/athletes/{athlete['id']}/stats", headers=auth).json()
            listing = http.get("/api/v3/athlete/activities", params={"per_page": 10}, headers=auth)
            table = Table(title="Latest activities")
            for column in ("start (local)", "sport", "name", "km", "moving"):
                table.add_column(column)
            for a in listing.json():
                table.add_row(a["start_date_local"][:16].replace("T", " "), a["sport_type"], a["name"],
                              f"{a['distance'] / 1000:.1f}", f"{a['moving_time'] // 60} min")
            out.print(table)
            out.print(f"All-time rides: {stats['all_ride_totals']['count']}, runs: {stats['all_run_totals']['count']}")
            out.print(f"Rate budget used (15 min, day): read {listing.headers['X-ReadRateLimit-Usage']} of "
                      f"{listing.headers['X-ReadRateLimit-Limit']}")
