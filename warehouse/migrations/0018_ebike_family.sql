-- fitsync warehouse, schema 18: a motor's kilometres are not the rider's. E-bike rides were in the Ride family: their
-- distance in the rider's Ride volume, year-to-date and Eddington number (a coach read 1,142 km of Ride for 748 km
-- ridden). They are a family of their own; their load still counts in the athlete's 'All' PMC (the heart worked).
UPDATE analysis_sport_families SET family = 'E-bike' WHERE motorized;
COMMENT ON COLUMN analysis_sport_families.family IS 'Family the sport type belongs to: Ride, Run, Swim, Walk/Hike, Ski or E-bike (motorized types: a motor''s kilometres are not the rider''s)';

-- The FTP's comment still said what schema 5 did: the loads read ftp_timeline (these rows and the profile FTP as
-- fitsync saw it, one rule: a value applies until the next, whatever its source).
COMMENT ON TABLE analysis_ftp_history IS 'FTP by date set by the athlete (`fitsync thresholds set`): with the profile FTP as fitsync saw it (athlete_snapshots), one timeline (ftp_timeline) that the loads read, each value in force until the next';
