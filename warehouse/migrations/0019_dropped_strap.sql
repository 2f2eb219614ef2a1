-- fitsync warehouse, schema 19: a heart-rate strap that dropped out is no reason to multiply what it recorded. The
-- zone load of buckets covering under hr_min_coverage of the activity was scaled to its duration: 2 minutes of
-- buckets in a 3-hour ride counted 90 times over. The seconds not covered now count at the sport's usual intensity
-- (activity_load, views); this is the setting's description.
UPDATE analysis_settings
SET description = 'Share of an activity''s duration its heart-rate zone buckets must cover for a measured heart-rate load; below (a strap that dropped out), the seconds not covered count at the sport''s usual intensity (estimate_if) and the load is not counted as measured'
WHERE name = 'hr_min_coverage';
