-- Summaries reach the warehouse as soon as the listing is done, days before a backfill's details under the
-- real service's limits: say plainly which rows are summary-only.
ALTER TABLE activities ADD COLUMN detail_loaded BOOLEAN DEFAULT false;
UPDATE activities SET detail_loaded = detail_fetched_at IS NOT NULL;
COMMENT ON COLUMN activities.detail_loaded IS 'Whether the activity''s detail (description, calories, splits, laps, segment efforts) is loaded; false while only the listing''s summary is';
