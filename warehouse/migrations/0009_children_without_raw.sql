-- fitsync warehouse, schema 9: a detailed activity's JSON is kept whole outside the tables, in Parquet files beside
-- the warehouse (view activity_documents, warehouse/documents.py); splits and laps are typed columns only. A JSON text
-- per split and lap, and the document in activities, were most of a load's work, and DuckDB's checkpoints of the
-- documents made a backfill's memory grow with the history (issue 15). Rows loaded before keep their JSON where it was.
ALTER TABLE splits_metric ALTER COLUMN raw DROP NOT NULL;
ALTER TABLE laps ALTER COLUMN raw DROP NOT NULL;
ALTER TABLE activities ALTER COLUMN summary_raw DROP NOT NULL;
ALTER TABLE activities ADD COLUMN detail_hash UBIGINT;
COMMENT ON COLUMN activities.detail_hash IS
    'hash() of the detail JSON last loaded, kept whole in activity_documents; NULL until the detail is fetched (and for details loaded before schema 9, whose JSON is detail_raw)';
COMMENT ON COLUMN activities.detail_raw IS
    'Details loaded before schema 9: the detailed activity without its splits, laps and efforts (those are in the child rows'' raw). NULL for later loads: see activity_documents';
COMMENT ON COLUMN activities.summary_raw IS
    'The activity as the listing sent it; NULL while only its detail has been loaded (see activity_documents)';
COMMENT ON COLUMN splits_metric.raw IS 'NULL: the split''s JSON is in its activity''s document (activity_documents); splits loaded before schema 9 kept it here';
COMMENT ON COLUMN laps.raw IS 'NULL: the lap''s JSON is in its activity''s document (activity_documents); laps loaded before schema 9 kept it here';
COMMENT ON COLUMN deleted_activities.last_summary_raw IS 'The activity''s summary_raw at the time of removal (its detail document when it had no summary)';
