"""Everything a fitsync process needs to talk to the service, built from one Config."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from .api import AthleteApi, PushSubscriptions
from .crypto import TokenCipher, check_key
from .open_state import open_store
from .rate_governor import RateGovernor
from .shape_reports import ShapeReports
from .subscription_state import SubscriptionState
from .tokens import TokenManager
from .transport import Transport

if TYPE_CHECKING:
    from .config import Config

log = logging.getLogger(__name__)


class FitsyncClient:
    def __init__(self, config: Config) -> None:
        self.config = config
        self.store = open_store(config)
        self.cipher = TokenCipher.for_home(config.home, config.secret_key, self.store, config.secret_key_previous)
        check_key(self.store, self.cipher)
        self.governor = RateGovernor(
            self.store,
            short_window=config.short_window,
            long_window=config.long_window,
            bulk_reserve=config.bulk_reserve,
            boundary_guard=config.boundary_guard,
        )
        self.transport = Transport(
            self.governor,
            timeout=config.timeout,
            max_retries=config.max_retries,
            max_response_bytes=config.max_response_bytes,
            deadline=config.response_deadline,
        )
        self.tokens = TokenManager(config, self.store, self.cipher, self.transport)
        self.subscription_state = SubscriptionState(self.store, self.cipher)
        self.shape_reports = ShapeReports(self.store)

    def athlete(
        self, athlete_id: int, *, bulk: bool = False, max_wait: float | None = None, priority: str | None = None
    ) -> AthleteApi:
        return AthleteApi(
            self.config.base_url,
            self.transport,
            self.tokens,
            athlete_id,
            bulk=bulk,
            max_wait=max_wait,
            reporter=self.shape_reports.report,
            priority=priority,
        )

    def subscriptions(self) -> PushSubscriptions:
        client_id, client_secret = self.config.require_app()
        return PushSubscriptions(self.config.base_url, self.transport, client_id, client_secret)

    def close(self) -> None:
        try:
            self.governor.leave()
        except Exception as error:  # the state store gone (a full disk: said by the command): they lapse on their own
            log.debug(
                "could not give up this process's places in the rate budget's queue (%s): they lapse within seconds",
                type(error).__name__,
            )
        self.transport.close()

    def __enter__(self) -> FitsyncClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"FitsyncClient(base_url={self.config.base_url!r}, home={str(self.config.home)!r})"
