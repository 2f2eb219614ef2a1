-- Sandbox world and service state. One file; the server and the `fitsync sandbox` commands share it (WAL).
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);

CREATE TABLE IF NOT EXISTS apps (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    callback_domain TEXT NOT NULL,
    secret_hash TEXT NOT NULL,
    created_at INTEGER NOT NULL
);

-- `data` holds the athlete's facts as JSON; representations are computed from it.
CREATE TABLE IF NOT EXISTS athletes (
    id INTEGER PRIMARY KEY,
    premium INTEGER NOT NULL,
    data TEXT NOT NULL
);

CREATE TABLE IF NOT EXISTS gear (
    id TEXT PRIMARY KEY,
    athlete_id INTEGER NOT NULL REFERENCES athletes(id),
    kind TEXT NOT NULL CHECK (kind IN ('bike', 'shoe')),
    name TEXT NOT NULL,
    is_primary INTEGER NOT NULL
);

CREATE TABLE IF NOT EXISTS segments (
    id INTEGER PRIMARY KEY,
    activity_type TEXT NOT NULL,
    private INTEGER NOT NULL,
    owner_id INTEGER,
    climb_category INTEGER NOT NULL,
    start_lat REAL NOT NULL,
    start_lng REAL NOT NULL,
    data TEXT NOT NULL
);

CREATE TABLE IF NOT EXISTS stars (
    athlete_id INTEGER NOT NULL,
    segment_id INTEGER NOT NULL,
    starred_at INTEGER NOT NULL,
    PRIMARY KEY (athlete_id, segment_id)
);

CREATE TABLE IF NOT EXISTS activities (
    id INTEGER PRIMARY KEY,
    athlete_id INTEGER NOT NULL REFERENCES athletes(id),
    start_ts INTEGER NOT NULL,
    visibility TEXT NOT NULL CHECK (visibility IN ('everyone', 'followers_only', 'only_me')),
    type TEXT NOT NULL,
    sport_type TEXT NOT NULL,
    gear_id TEXT,
    data TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS activities_by_athlete ON activities (athlete_id, start_ts);
-- Covers gear distance (the sum of its activities' distances) without reading every activity's JSON.
CREATE INDEX IF NOT EXISTS activities_gear_distance ON activities (gear_id, json_extract(data, '$.distance'));

CREATE TABLE IF NOT EXISTS efforts (
    id INTEGER PRIMARY KEY,
    activity_id INTEGER NOT NULL REFERENCES activities(id) ON DELETE CASCADE,
    athlete_id INTEGER NOT NULL,
    segment_id INTEGER NOT NULL,
    start_ts INTEGER NOT NULL,
    elapsed_time INTEGER NOT NULL,
    hidden INTEGER NOT NULL,
    data TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS efforts_by_segment ON efforts (segment_id, athlete_id, start_ts);
CREATE INDEX IF NOT EXISTS efforts_by_activity ON efforts (activity_id);

-- OAuth. Secrets, codes and tokens are stored as SHA-256 digests; token values are re-derived from
-- `token_key` with the server secret (kept beside the db) so a refresh can return the current value.
CREATE TABLE IF NOT EXISTS browser_sessions (
    hash TEXT PRIMARY KEY,
    athlete_id INTEGER NOT NULL,
    created_at INTEGER NOT NULL
);

CREATE TABLE IF NOT EXISTS consent_requests (
    hash TEXT PRIMARY KEY,
    app_id INTEGER NOT NULL,
    athlete_id INTEGER NOT NULL,
    redirect_uri TEXT NOT NULL,
    scope TEXT NOT NULL,
    state TEXT,
    created_at INTEGER NOT NULL
);

CREATE TABLE IF NOT EXISTS grants (
    app_id INTEGER NOT NULL,
    athlete_id INTEGER NOT NULL,
    scope TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    revoked_at INTEGER,
    PRIMARY KEY (app_id, athlete_id)
);

CREATE TABLE IF NOT EXISTS codes (
    hash TEXT PRIMARY KEY,
    app_id INTEGER NOT NULL,
    athlete_id INTEGER NOT NULL,
    redirect_uri TEXT NOT NULL,
    scope TEXT NOT NULL,
    expires_at REAL NOT NULL,
    used_at REAL,
    family_id INTEGER
);

CREATE TABLE IF NOT EXISTS token_families (
    id INTEGER PRIMARY KEY,
    app_id INTEGER NOT NULL,
    athlete_id INTEGER NOT NULL,
    scope TEXT NOT NULL,
    created_at REAL NOT NULL,
    revoked_at REAL
);

CREATE TABLE IF NOT EXISTS access_tokens (
    hash TEXT PRIMARY KEY,
    token_key TEXT NOT NULL,
    family_id INTEGER NOT NULL REFERENCES token_families(id),
    expires_at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS access_tokens_by_family ON access_tokens (family_id, expires_at);

CREATE TABLE IF NOT EXISTS refresh_tokens (
    hash TEXT PRIMARY KEY,
    token_key TEXT NOT NULL,
    family_id INTEGER NOT NULL REFERENCES token_families(id),
    current INTEGER NOT NULL,
    created_at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS refresh_tokens_by_family ON refresh_tokens (family_id, current);

-- Rate usage per application, window and budget.
CREATE TABLE IF NOT EXISTS rate_usage (
    app_id INTEGER NOT NULL,
    window TEXT NOT NULL,
    window_start INTEGER NOT NULL,
    budget TEXT NOT NULL,
    used INTEGER NOT NULL,
    PRIMARY KEY (app_id, window, budget)
);

-- Push subscriptions, the durable event queue and the delivery log.
CREATE TABLE IF NOT EXISTS subscriptions (
    id INTEGER PRIMARY KEY AUTOINCREMENT,  -- ids are never handed out twice
    app_id INTEGER NOT NULL UNIQUE,
    callback_url TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
);

CREATE TABLE IF NOT EXISTS events (
    id INTEGER PRIMARY KEY,
    subscription_id INTEGER NOT NULL,
    payload TEXT NOT NULL,
    created_at REAL NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('pending', 'delivered', 'failed')),
    attempts INTEGER NOT NULL DEFAULT 0,
    next_attempt_at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS events_due ON events (status, next_attempt_at);

CREATE TABLE IF NOT EXISTS deliveries (
    id INTEGER PRIMARY KEY,
    event_id INTEGER NOT NULL,
    attempt INTEGER NOT NULL,
    started_at REAL NOT NULL,
    status_code INTEGER,
    error TEXT,
    duration_ms REAL NOT NULL
);

CREATE TABLE IF NOT EXISTS counters (name TEXT PRIMARY KEY, value INTEGER NOT NULL);
