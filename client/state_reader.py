"""What the read-only commands (`status`, `athletes`, `doctor`) read of the state store, without writing a byte.

FitsyncClient is for commands that act: opening it creates the home, the store's file and tables and the token key
file. This reads the same athletes, subscription and rate budget from a store opened to look only
(open_state.open_store_for_reading), and never makes a key: a store with encrypted values has its key already.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from fitsync.state import app_state
from fitsync.state import athletes as athlete_rows

from .crypto import KEY_FILE, SALT, CipherError, TokenCipher, unreadable_tokens
from .open_state import open_store_for_reading
from .rate_governor import BudgetLine, RateGovernor
from .subscription_state import Subscription, SubscriptionState
from .tokens import AthleteRecord

if TYPE_CHECKING:
    from fitsync.state.store import StateStore

    from .config import Config


@dataclass(frozen=True)
class StateReader:
    config: Config
    store: StateStore

    @classmethod
    def open(cls, config: Config) -> StateReader | None:
        """The reader of the configured store; None when there is no state yet (`fitsync connect` makes it)."""
        store = open_store_for_reading(config)
        return None if store is None else cls(config, store)

    def athletes(self) -> list[AthleteRecord]:
        return [AthleteRecord(**r) for r in athlete_rows.records(self.store)]

    def budget(self) -> list[BudgetLine]:
        """The app's rate windows: used, limit, when each resets."""
        config = self.config
        return RateGovernor(
            self.store,
            short_window=config.short_window,
            long_window=config.long_window,
            bulk_reserve=config.bulk_reserve,
            boundary_guard=config.boundary_guard,
        ).snapshot()

    def subscription(self) -> Subscription | None:
        """The stored push subscription; its callback address empty when no key of this process opens it."""
        cipher = self._cipher()
        try:
            if cipher is not None:
                return SubscriptionState(self.store, cipher).current()
        except CipherError:
            pass
        with self.store.reading() as conn:
            sub_id = app_state.get(conn, "subscription_id")
        return None if sub_id is None else Subscription(int(sub_id), "")

    def token_problem(self) -> str | None:
        """Why the stored tokens cannot be read with this home's key (its file missing, or another key), or None."""
        try:
            cipher = self._cipher()
        except CipherError as error:  # a damaged key file, a wrong passphrase
            return str(error)
        if cipher is None and (self.config.secret_key or self.config.secret_key_previous):
            return None  # a passphrase on a store without its salt yet: only a writing command can tell
        return unreadable_tokens(self.store, cipher, self.config.home)

    def _cipher(self) -> TokenCipher | None:
        """The token key when it exists already (the key file, or the salt of a passphrase in the store); making
        one is for the commands that store tokens."""
        config = self.config
        if not config.secret_key and not (config.home / KEY_FILE).is_file():
            return None
        if config.secret_key or config.secret_key_previous:
            with self.store.reading() as conn:
                if app_state.get(conn, SALT) is None:
                    return None
        return TokenCipher.for_home(config.home, config.secret_key, self.store, config.secret_key_previous)
