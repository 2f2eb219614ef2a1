-- fitsync warehouse, schema 3: an activity's detail_raw no longer repeats the arrays its child tables keep
-- (splits_metric, laps, segment_efforts: each element whole in its row's raw). Rows loaded before keep the whole
-- document until the activity is fetched again. The comment says so where analysts look (duckdb_columns()).
COMMENT ON COLUMN activities.detail_raw IS
    'The detailed activity as the service sent it, without splits_metric, laps and segment_efforts: each of their elements is whole in splits_metric.raw, laps.raw and segment_efforts.raw';
COMMENT ON COLUMN activities.summary_raw IS
    'The activity as the listing sent it (for an activity not listed yet: its detail, as detail_raw)';
