-- fitsync warehouse, schema 11: an activity's summary, as the listing sent it, is kept whole in Parquet files beside the
-- warehouse (view activity_summary_documents, warehouse/documents.py), as detailed activities are since schema 9. About
-- 1.5 KB of JSON in every activities row (more with real polylines) made each checkpoint that merged the table's row
-- group rewrite it: a backfill's peak memory grew with the history (issue 15). Rows loaded before keep theirs.
ALTER TABLE activities ADD COLUMN summary_hash UBIGINT;
COMMENT ON COLUMN activities.summary_hash IS
    'hash() of the summary JSON last listed, kept whole in activity_summary_documents; NULL until the activity is listed (and for summaries loaded before schema 11, whose JSON is summary_raw)';
COMMENT ON COLUMN activities.summary_raw IS
    'Summaries loaded before schema 11: the activity as the listing sent it. NULL for later loads: see activity_summary_documents';
