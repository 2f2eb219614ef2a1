-- fitsync warehouse, schema 10: the segment efforts of a detailed activity are typed columns only; their JSON is in the
-- activity's document (activity_documents), as the splits' and laps' are since schema 9. A JSON text per effort
-- (≈ 1 KB) was most of the table's bytes, and DuckDB rewrites a table's last row groups whenever a checkpoint merges
-- them: a backfill's peak memory grew with the history (issue 15). Efforts from a segment's effort history keep their
-- JSON here (no document holds it); rows loaded before keep theirs.
ALTER TABLE segment_efforts ALTER COLUMN raw DROP NOT NULL;
COMMENT ON COLUMN segment_efforts.raw IS
    'The effort JSON as a segment''s effort history sent it, including its embedded segment summary; NULL for an effort that came only in its detailed activity, whose document holds it (activity_documents); efforts loaded before schema 10 keep it here';
