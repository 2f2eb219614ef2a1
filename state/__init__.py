"""fitsync's state store, and the only code that writes SQL against it.

Owns: the store (store.py: the interface and SQLite; postgres.py: PostgreSQL), its schema (migrations.py) and one
repository module per concern, named for what it holds — athletes.py (tokens, grant status, subscriber), app_state.py
(key salt and check, subscription values, webhook allowance), rate_ledger.py (the shared budget and turns),
progress.py (cursors, known activities and segments: the sync queue), landing.py, inbox.py (webhook inbox and
lifecycle), shape_reports.py; health.py reads a store for `fitsync doctor` without changing it.
Every other package but warehouse/ and sandbox/ may import it.

May import: nothing of fitsync.

One dialect of SQL, not two: each statement is written once with SQLite's `?` placeholders in the SQL both stores
speak (ON CONFLICT … excluded., CASE, FILTER, RETURNING), and PostgreSQL gets it through sql.to_psycopg, a tokenizer
that turns `?` into `%s` only outside string literals, quoted identifiers, dollar quotes and comments. Column types
are data (migrations.TYPES per dialect), not rewritten text. Chosen over SQLAlchemy Core because it keeps the
transactions exactly as they are (BEGIN IMMEDIATE on SQLite, a transaction-scoped advisory lock on PostgreSQL,
connections the callers hold across statements) and leaves the stores' tables byte for byte as older fitsyncs
made them, so existing stores open unchanged.
"""
