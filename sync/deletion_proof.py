"""Deleting needs proof: a webhook `delete` is a hint anyone can POST, and a listing can be short by mistake, so the
service is asked first.

An activity is deleted from the warehouse only when the athlete's own token is told it is gone (the service's own
404 naming the activity: a proxy's page or a 404 for the request's path proves nothing) or hidden
from this grant (the spec's Only You for a grant without `activity:read_all`: 401 `activity:read_all_permission`).
If the service still shows it, the event (or the listing) was wrong; any other answer (another athlete's activity,
the service down, the budget spent) deletes nothing. One call per activity, at most.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from fitsync.client.errors import FitsyncError, MissingScope, NotFound
from fitsync.client.rate_governor import RateBudgetExhausted

from . import landing, progress


@dataclass
class Proof:
    deleted: dict[int, str] = field(default_factory=dict)  # activity → the reason it was deleted (also the audit)
    still_there: dict[int, str] = field(default_factory=dict)  # the service shows it: re-pull, do not delete
    unproven: dict[int, str] = field(default_factory=dict)  # no answer that proves anything: nothing happens

    def verdicts(self) -> list[tuple[int, str, str]]:
        """(activity, verdict, reason) for the inbox. An unproven delete is not retried: the activity stays, and a
        real deletion is found by the next full reconciliation (`fitsync sync --full`), which lists everything."""
        return [(a, "confirmed", r) for a, r in self.deleted.items()] + [
            (a, "rejected", r) for a, r in {**self.still_there, **self.unproven}.items()
        ]


def prove_deletions(session: Any, activity_ids: list[int], hint: str = "webhook delete") -> Proof:
    """Ask the service about each activity `hint` says is gone (a webhook delete, or missing in a listing)."""
    proof = Proof()
    for activity_id in activity_ids:
        try:
            session.activity(activity_id, include_all_efforts=False)
        except NotFound as error:
            if error.about("Activity"):
                proof.deleted[activity_id] = f"{hint}, confirmed: the service answers 404"
            else:
                proof.unproven[activity_id] = f"a 404 that is not about the activity proves no deletion ({error})"
        except MissingScope as error:
            if error.scope == "activity:read_all":
                proof.deleted[activity_id] = f"{hint}, confirmed: made Only You (this grant may not see it)"
            else:
                proof.unproven[activity_id] = f"the service refused the check ({error})"
        except RateBudgetExhausted as error:
            proof.unproven[activity_id] = f"not checked: {error}"
        except FitsyncError as error:  # 403 (not this athlete's), 5xx after retries, a refused token
            proof.unproven[activity_id] = f"the service's answer proves no deletion ({error})"
        else:
            proof.still_there[activity_id] = "the service still has this activity: not deleted"
    return proof


def land_deletions(conn: Any, athlete_id: int, proof: Proof) -> None:
    """Land the confirmed deletions for the warehouse, grouped by reason, and forget them (in the caller's
    transaction)."""
    for reason in sorted(set(proof.deleted.values())):
        ids = sorted(a for a, r in proof.deleted.items() if r == reason)
        landing.land(conn, athlete_id, "delete_activities", [{"ids": ids, "reason": reason}])
        progress.forget(conn, athlete_id, ids)
