-- fitsync warehouse, schema 9: splits and laps are typed columns only, their JSON kept once in the activity's
-- detail_raw (now the whole document). A JSON text per split and lap was most of a load's work (issue 15). Rows
-- loaded before keep their raw; activities loaded by their detail before any listing have summary_raw NULL.
ALTER TABLE splits_metric ALTER COLUMN raw DROP NOT NULL;
ALTER TABLE laps ALTER COLUMN raw DROP NOT NULL;
ALTER TABLE activities ALTER COLUMN summary_raw DROP NOT NULL;
COMMENT ON COLUMN activities.detail_raw IS
    'The detailed activity as the service sent it, whole: the one copy of its splits_metric and laps as JSON (their rows hold typed columns); NULL until the detail is fetched';
COMMENT ON COLUMN activities.summary_raw IS
    'The activity as the listing sent it; NULL while only its detail has been loaded (see detail_raw)';
COMMENT ON COLUMN splits_metric.raw IS 'NULL: the split''s JSON is in activities.detail_raw (splits loaded before schema 9 kept it here)';
COMMENT ON COLUMN laps.raw IS 'NULL: the lap''s JSON is in activities.detail_raw (laps loaded before schema 9 kept it here)';
COMMENT ON COLUMN deleted_activities.last_summary_raw IS 'The activity''s summary_raw at the time of removal (its detail_raw when it had no summary)';
