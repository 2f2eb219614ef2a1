-- fitsync warehouse, schema 15: a deleted activity's tombstone keeps its whole detail (splits, laps and efforts as the
-- service sent them) and its zones, and stays when the activity comes back (marked restored): the audit of a
-- deletion is never erased, and an activity deleted by mistake can be rebuilt from its tombstone.

ALTER TABLE deleted_activities ADD COLUMN IF NOT EXISTS last_detail_raw JSON;
ALTER TABLE deleted_activities ADD COLUMN IF NOT EXISTS last_zones_raw JSON;
ALTER TABLE deleted_activities ADD COLUMN IF NOT EXISTS restored_at TIMESTAMPTZ;
COMMENT ON TABLE deleted_activities IS 'Activities removed from the warehouse, with why, when and their last JSON (summary, detail, zones): every deletion audited, kept when the activity comes back (restored_at)';
COMMENT ON COLUMN deleted_activities.last_detail_raw IS 'The activity''s detail document at the time of removal (its splits, laps and efforts as the service sent them); NULL when it had none';
COMMENT ON COLUMN deleted_activities.last_zones_raw IS 'The activity''s zones at the time of removal, as a JSON list of the service''s zone objects; NULL when it had none';
COMMENT ON COLUMN deleted_activities.restored_at IS 'When the activity came back (a listing or a detail loaded it again, UTC); NULL while it stays deleted';
