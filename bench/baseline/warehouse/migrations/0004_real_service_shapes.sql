-- fitsync warehouse, schema 4: the real service's shapes beside the spec's, and what fitsync did not know.
-- athlete_zones holds the spec's array (bounds with time in zone) and the real object (bounds only, `seconds`
-- NULL) in the same rows; `shape` says which was received.
ALTER TABLE athlete_zones ADD COLUMN shape VARCHAR;
ALTER TABLE athlete_zones ADD COLUMN custom_zones BOOLEAN;
COMMENT ON COLUMN athlete_zones.shape IS
    'How the service sent the zones: array (the spec''s zone objects, with time in zone) or object (the real service''s {"heart_rate": {"zones": [...]}, "power": ...}, bounds only)';
COMMENT ON COLUMN athlete_zones.raw IS 'The zone as the service sent it (a zone object, or one member of the real object)';

-- Answers of a shape fitsync does not know (an object where a list belongs, zones of another form): kept whole,
-- one row per endpoint, object and problem (the latest copy), so nothing that arrived is lost.
CREATE TABLE unrecognized_payloads (
    athlete_id BIGINT NOT NULL,
    endpoint VARCHAR NOT NULL,        -- e.g. GET /athlete/zones
    object_id VARCHAR NOT NULL,       -- '' when the answer is not about one object
    problem VARCHAR NOT NULL,
    received_at TIMESTAMPTZ NOT NULL,
    raw JSON,
    PRIMARY KEY (athlete_id, endpoint, object_id, problem)
);
