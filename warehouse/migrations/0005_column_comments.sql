-- fitsync warehouse, schema 5: a description of every table and column, where analysts look (duckdb_tables(),
-- duckdb_columns(), `fitsync query --list`, docs/warehouse.md). Units: distances and elevations in metres, times
-- in seconds, speeds in m/s, power in watts, heart rate in bpm. TIMESTAMPTZ columns are instants (UTC); a
-- TIMESTAMP *_local column is the athlete's local wall-clock time (the service writes it with a Z that fitsync
-- drops). "Loaded" times are when fitsync wrote the row's current JSON: re-loading identical JSON changes nothing.
-- The four column comments of migrations 0003 and 0004 are restated unchanged, so this file names every column.

-- --- bookkeeping ---------------------------------------------------------------------------------------------

COMMENT ON TABLE schema_migrations IS 'The numbered migrations (warehouse/migrations/) applied to this warehouse, one row each';
COMMENT ON COLUMN schema_migrations.version IS 'Migration number, the numeric prefix of its file name';
COMMENT ON COLUMN schema_migrations.name IS 'File name of the migration script, e.g. 0001_tables.sql';
COMMENT ON COLUMN schema_migrations.applied_at IS 'When the migration was applied (UTC)';

COMMENT ON TABLE schema_views IS 'Checksum of the analysis views script last applied; the script is re-applied whenever its checksum differs';
COMMENT ON COLUMN schema_views.name IS 'File name of the views script (analysis_views.sql)';
COMMENT ON COLUMN schema_views.checksum IS 'SHA-256 (hex) of the script text last applied';
COMMENT ON COLUMN schema_views.applied_at IS 'When this version of the script was last applied (UTC)';

-- --- athlete ----------------------------------------------------------------------------------------------------

COMMENT ON TABLE athletes IS 'One row per synced athlete: the profile from GET /athlete (detailed form with scope profile:read_all)';
COMMENT ON COLUMN athletes.athlete_id IS 'The service''s athlete id';
COMMENT ON COLUMN athletes.username IS 'The athlete''s username on the service';
COMMENT ON COLUMN athletes.firstname IS 'First name as shown on the profile';
COMMENT ON COLUMN athletes.lastname IS 'Last name as shown on the profile';
COMMENT ON COLUMN athletes.city IS 'City given on the profile';
COMMENT ON COLUMN athletes.state IS 'State or region given on the profile';
COMMENT ON COLUMN athletes.country IS 'Country given on the profile';
COMMENT ON COLUMN athletes.sex IS 'Sex given on the profile, as the service writes it (M or F)';
COMMENT ON COLUMN athletes.premium IS 'Whether the athlete has the service''s paid subscription (needed for activity zones and effort histories)';
COMMENT ON COLUMN athletes.measurement_preference IS 'Display units chosen on the service (feet or meters); warehouse values stay metric regardless';
COMMENT ON COLUMN athletes.ftp IS 'Current functional threshold power from the profile, in watts; NULL without profile:read_all or when unset';
COMMENT ON COLUMN athletes.weight IS 'Body weight from the profile, in kilograms; NULL without profile:read_all';
COMMENT ON COLUMN athletes.created_at IS 'When the athlete''s account was created on the service (UTC)';
COMMENT ON COLUMN athletes.updated_at IS 'When the profile was last updated on the service (UTC)';
COMMENT ON COLUMN athletes.synced_at IS 'When fitsync loaded the current version of this profile (UTC); an unchanged re-fetch does not move it';
COMMENT ON COLUMN athletes.raw IS 'The profile JSON as the service sent it, including fields fitsync does not map (e.g. bikes, shoes, clubs)';

COMMENT ON TABLE gear IS 'The athlete''s bikes and shoes, from the bikes and shoes arrays of the detailed profile';
COMMENT ON COLUMN gear.gear_id IS 'The service''s gear id, a string (e.g. b123 for a bike, g456 for shoes); activities.gear_id refers to it';
COMMENT ON COLUMN gear.athlete_id IS 'The athlete owning the gear';
COMMENT ON COLUMN gear.kind IS 'bike or shoe: which array of the profile the item came from';
COMMENT ON COLUMN gear.name IS 'Name the athlete gave the gear';
COMMENT ON COLUMN gear.is_primary IS 'Whether this is the athlete''s default bike or shoes (the service''s primary flag)';
COMMENT ON COLUMN gear.distance IS 'Total distance logged on this gear according to the service, in metres';
COMMENT ON COLUMN gear.synced_at IS 'When fitsync loaded the current version of this gear item (UTC)';
COMMENT ON COLUMN gear.raw IS 'The gear summary JSON as it appeared in the profile';

COMMENT ON TABLE athlete_stats IS 'Snapshots of GET /athletes/{id}/stats, one per athlete and sync date; totals are in athlete_stats_totals';
COMMENT ON COLUMN athlete_stats.athlete_id IS 'The athlete the stats belong to';
COMMENT ON COLUMN athlete_stats.snapshot_date IS 'UTC date of the load that took this snapshot; a later load the same day replaces it';
COMMENT ON COLUMN athlete_stats.biggest_ride_distance IS 'Longest ride ever, in metres, as the service reports it (Everyone-visible activities only)';
COMMENT ON COLUMN athlete_stats.biggest_climb_elevation_gain IS 'Largest climb ever, in metres of elevation gain, as the service reports it';
COMMENT ON COLUMN athlete_stats.synced_at IS 'When fitsync loaded the current version of this snapshot (UTC)';
COMMENT ON COLUMN athlete_stats.raw IS 'The stats JSON as the service sent it, including the totals objects';

COMMENT ON TABLE athlete_stats_totals IS 'The stats snapshot''s totals: one row per period (recent, ytd, all) and sport (ride, run, swim)';
COMMENT ON COLUMN athlete_stats_totals.athlete_id IS 'The athlete the totals belong to';
COMMENT ON COLUMN athlete_stats_totals.snapshot_date IS 'UTC date of the snapshot, as athlete_stats.snapshot_date';
COMMENT ON COLUMN athlete_stats_totals.period IS 'recent (the service''s last four weeks), ytd (year to date) or all (all time)';
COMMENT ON COLUMN athlete_stats_totals.sport IS 'ride, run or swim: the service''s totals group';
COMMENT ON COLUMN athlete_stats_totals.count IS 'Number of activities in the period (Everyone-visible activities only, per the service)';
COMMENT ON COLUMN athlete_stats_totals.distance IS 'Total distance in the period, in metres';
COMMENT ON COLUMN athlete_stats_totals.moving_time IS 'Total moving time in the period, in seconds';
COMMENT ON COLUMN athlete_stats_totals.elapsed_time IS 'Total elapsed time in the period, in seconds';
COMMENT ON COLUMN athlete_stats_totals.elevation_gain IS 'Total elevation gain in the period, in metres';
COMMENT ON COLUMN athlete_stats_totals.achievement_count IS 'Number of achievements in the period, as the service counts them';

COMMENT ON TABLE athlete_zones IS 'Snapshots of the athlete''s heart-rate and power zones (GET /athlete/zones): one row per zone per sync date';
COMMENT ON COLUMN athlete_zones.athlete_id IS 'The athlete the zones belong to';
COMMENT ON COLUMN athlete_zones.snapshot_date IS 'UTC date of the load that took this snapshot; a later load the same day replaces it';
COMMENT ON COLUMN athlete_zones.zone_type IS 'heartrate or power (another name when the service sends an unknown zone kind)';
COMMENT ON COLUMN athlete_zones.bucket_index IS 'Zone number, 1-based from the lowest zone';
COMMENT ON COLUMN athlete_zones.min IS 'Lower bound of the zone: bpm for heartrate, watts for power';
COMMENT ON COLUMN athlete_zones.max IS 'Upper bound of the zone (bpm or watts); -1 means no upper bound (the top zone)';
COMMENT ON COLUMN athlete_zones.seconds IS 'Time in the zone as the service reported it, in seconds; NULL for the object shape, which has bounds only';
COMMENT ON COLUMN athlete_zones.synced_at IS 'When fitsync loaded the current version of this row (UTC)';
COMMENT ON COLUMN athlete_zones.raw IS 'The zone as the service sent it (a zone object, or one member of the real object)';
COMMENT ON COLUMN athlete_zones.shape IS
    'How the service sent the zones: array (the spec''s zone objects, with time in zone) or object (the real service''s {"heart_rate": {"zones": [...]}, "power": ...}, bounds only)';
COMMENT ON COLUMN athlete_zones.custom_zones IS 'Whether the athlete set these zones by hand rather than the service''s defaults; NULL when not sent';

-- --- activities and their children -----------------------------------------------------------------------------

COMMENT ON TABLE activities IS 'One row per activity: summary fields from the listing, detail-only fields once GET /activities/{id} is fetched';
COMMENT ON COLUMN activities.activity_id IS 'The service''s activity id';
COMMENT ON COLUMN activities.athlete_id IS 'The athlete who owns the activity (the one whose sync fetched it)';
COMMENT ON COLUMN activities.name IS 'Title of the activity';
COMMENT ON COLUMN activities.sport_type IS 'The service''s sport type (e.g. Ride, Run, GravelRide, VirtualRide); the analysis views group by it';
COMMENT ON COLUMN activities.type IS 'The service''s legacy activity type, a coarser grouping than sport_type';
COMMENT ON COLUMN activities.workout_type IS 'The service''s workout tag: runs 0 default, 1 race, 2 long run, 3 workout; rides 10 default, 11 race, 12 workout';
COMMENT ON COLUMN activities.start_date IS 'Start instant (UTC)';
COMMENT ON COLUMN activities.start_date_local IS 'Start in the athlete''s local wall-clock time (the API writes a Z, but it is not UTC); local dates come from it';
COMMENT ON COLUMN activities.timezone IS 'IANA time zone of the start, e.g. America/Los_Angeles, parsed from the service''s label "(GMT-08:00) America/Los_Angeles"';
COMMENT ON COLUMN activities.utc_offset IS 'Offset of local time from UTC at the start, in seconds (start_date_local - start_date)';
COMMENT ON COLUMN activities.distance IS 'Distance, in metres';
COMMENT ON COLUMN activities.moving_time IS 'Moving time, in seconds (pauses excluded)';
COMMENT ON COLUMN activities.elapsed_time IS 'Elapsed time from start to finish, in seconds (pauses included)';
COMMENT ON COLUMN activities.total_elevation_gain IS 'Total elevation gain, in metres';
COMMENT ON COLUMN activities.elev_high IS 'Highest elevation reached, in metres above sea level';
COMMENT ON COLUMN activities.elev_low IS 'Lowest elevation reached, in metres above sea level';
COMMENT ON COLUMN activities.average_speed IS 'Average speed over the moving time, in m/s';
COMMENT ON COLUMN activities.max_speed IS 'Maximum speed, in m/s';
COMMENT ON COLUMN activities.average_cadence IS 'Average cadence as the device recorded it: rpm when cycling, strides per minute when running';
COMMENT ON COLUMN activities.average_temp IS 'Average temperature the device recorded, in degrees Celsius; NULL without a sensor';
COMMENT ON COLUMN activities.has_heartrate IS 'Whether the activity has heart-rate data';
COMMENT ON COLUMN activities.average_heartrate IS 'Average heart rate, in bpm; NULL without heart-rate data';
COMMENT ON COLUMN activities.max_heartrate IS 'Maximum heart rate, in bpm; NULL without heart-rate data';
COMMENT ON COLUMN activities.device_watts IS 'Whether power came from a power meter (true) rather than the service''s estimate';
COMMENT ON COLUMN activities.average_watts IS 'Average power, in watts (measured or estimated: see device_watts)';
COMMENT ON COLUMN activities.weighted_average_watts IS 'The service''s weighted average power, in watts; activity_load uses it as normalized power (NP)';
COMMENT ON COLUMN activities.max_watts IS 'Maximum power, in watts; only with device power';
COMMENT ON COLUMN activities.kilojoules IS 'Mechanical work done, in kJ (from power)';
COMMENT ON COLUMN activities.suffer_score IS 'The service''s relative effort (suffer score), from heart rate; a fallback load in activity_load';
COMMENT ON COLUMN activities.calories IS 'Energy expended, in kilocalories, as the service estimates it; from the detail, NULL until the detail is fetched';
COMMENT ON COLUMN activities.achievement_count IS 'Number of achievements (segment PRs, top-10 ranks) the service awarded the activity';
COMMENT ON COLUMN activities.pr_count IS 'Number of segment personal records the service awarded in the activity';
COMMENT ON COLUMN activities.kudos_count IS 'Number of kudos received, at the time of the last load';
COMMENT ON COLUMN activities.trainer IS 'Whether the activity was recorded on an indoor trainer';
COMMENT ON COLUMN activities.commute IS 'Whether the athlete marked the activity as a commute';
COMMENT ON COLUMN activities.manual IS 'Whether the activity was entered by hand rather than recorded by a device';
COMMENT ON COLUMN activities.private IS 'Whether the activity is visible to its owner only (visibility only_me)';
COMMENT ON COLUMN activities.visibility IS 'Who may see the activity: everyone, followers_only or only_me';
COMMENT ON COLUMN activities.flagged IS 'Whether the activity is flagged on the service (e.g. reported as having wrong data)';
COMMENT ON COLUMN activities.gear_id IS 'The bike or shoes used (gear.gear_id); NULL when none was set';
COMMENT ON COLUMN activities.description IS 'The athlete''s free-text description; from the detail, NULL until the detail is fetched';
COMMENT ON COLUMN activities.device_name IS 'Name of the recording device or app, e.g. Garmin Edge 530 or Zwift';
COMMENT ON COLUMN activities.external_id IS 'Identifier the uploader gave the activity (often the uploaded file''s name); NULL for manual entries';
COMMENT ON COLUMN activities.start_lat IS 'Latitude of the start, in decimal degrees; NULL without GPS (or hidden by a privacy zone)';
COMMENT ON COLUMN activities.start_lng IS 'Longitude of the start, in decimal degrees; NULL without GPS (or hidden by a privacy zone)';
COMMENT ON COLUMN activities.end_lat IS 'Latitude of the finish, in decimal degrees; NULL without GPS (or hidden by a privacy zone)';
COMMENT ON COLUMN activities.end_lng IS 'Longitude of the finish, in decimal degrees; NULL without GPS (or hidden by a privacy zone)';
COMMENT ON COLUMN activities.summary_polyline IS 'Low-resolution route as an encoded polyline (map.summary_polyline); empty or NULL without GPS';
COMMENT ON COLUMN activities.issues IS 'What fitsync found unexpected in the activity''s JSON (e.g. a missing field, an unknown sport type); empty when none';
COMMENT ON COLUMN activities.listed_at IS 'When fitsync loaded the current summary_raw (UTC): from a listing page, or from the detail if that came first';
COMMENT ON COLUMN activities.detail_fetched_at IS 'When fitsync loaded the current detail_raw (UTC); NULL until the activity''s detail is fetched';
COMMENT ON COLUMN activities.summary_raw IS
    'The activity as the listing sent it (for an activity not listed yet: its detail, as detail_raw)';
COMMENT ON COLUMN activities.detail_raw IS
    'The detailed activity as the service sent it, without splits_metric, laps and segment_efforts: each of their elements is whole in splits_metric.raw, laps.raw and segment_efforts.raw';

COMMENT ON TABLE splits_metric IS 'Per-kilometre splits of an activity, from its detail (splits_metric array); replaced when the detail is re-fetched';
COMMENT ON COLUMN splits_metric.activity_id IS 'The activity the split belongs to';
COMMENT ON COLUMN splits_metric.split IS 'Split number, 1-based from the start';
COMMENT ON COLUMN splits_metric.distance IS 'Distance of the split, in metres (about 1000; the last split is usually shorter)';
COMMENT ON COLUMN splits_metric.elapsed_time IS 'Elapsed time of the split, in seconds';
COMMENT ON COLUMN splits_metric.moving_time IS 'Moving time of the split, in seconds';
COMMENT ON COLUMN splits_metric.elevation_difference IS 'Elevation at the end of the split minus at its start, in metres';
COMMENT ON COLUMN splits_metric.average_speed IS 'Average speed over the split, in m/s';
COMMENT ON COLUMN splits_metric.pace_zone IS 'The service''s pace zone of the split (running); 0 when none applies';
COMMENT ON COLUMN splits_metric.raw IS 'The split JSON as it appeared in the activity''s detail';

COMMENT ON TABLE laps IS 'Laps of an activity, from its detail (laps array); replaced when the detail is re-fetched';
COMMENT ON COLUMN laps.lap_id IS 'The service''s lap id';
COMMENT ON COLUMN laps.activity_id IS 'The activity the lap belongs to';
COMMENT ON COLUMN laps.lap_index IS 'Lap number within the activity, 1-based';
COMMENT ON COLUMN laps.name IS 'Name of the lap, e.g. Lap 1';
COMMENT ON COLUMN laps.elapsed_time IS 'Elapsed time of the lap, in seconds';
COMMENT ON COLUMN laps.moving_time IS 'Moving time of the lap, in seconds';
COMMENT ON COLUMN laps.start_date IS 'Start instant of the lap (UTC)';
COMMENT ON COLUMN laps.start_date_local IS 'Start of the lap in the athlete''s local wall-clock time (the API''s trailing Z dropped)';
COMMENT ON COLUMN laps.distance IS 'Distance of the lap, in metres';
COMMENT ON COLUMN laps.total_elevation_gain IS 'Elevation gain over the lap, in metres';
COMMENT ON COLUMN laps.average_speed IS 'Average speed over the lap, in m/s';
COMMENT ON COLUMN laps.max_speed IS 'Maximum speed in the lap, in m/s';
COMMENT ON COLUMN laps.average_cadence IS 'Average cadence in the lap: rpm when cycling, strides per minute when running';
COMMENT ON COLUMN laps.device_watts IS 'Whether the lap''s power came from a power meter rather than the service''s estimate';
COMMENT ON COLUMN laps.average_watts IS 'Average power over the lap, in watts';
COMMENT ON COLUMN laps.start_index IS 'Index of the lap''s first sample in the activity''s data streams';
COMMENT ON COLUMN laps.end_index IS 'Index of the lap''s last sample in the activity''s data streams';
COMMENT ON COLUMN laps.split IS 'Split number the service gives the lap (usually equal to lap_index)';
COMMENT ON COLUMN laps.raw IS 'The lap JSON as it appeared in the activity''s detail';

COMMENT ON TABLE segment_efforts IS 'Efforts on segments: from activity details, and from effort histories of starred segments (subscribers)';
COMMENT ON COLUMN segment_efforts.effort_id IS 'The service''s segment effort id';
COMMENT ON COLUMN segment_efforts.activity_id IS 'The activity the effort is part of (the effort''s activity.id)';
COMMENT ON COLUMN segment_efforts.athlete_id IS 'The athlete who rode or ran the effort (the one whose sync fetched it)';
COMMENT ON COLUMN segment_efforts.segment_id IS 'The segment the effort is on (segments.segment_id)';
COMMENT ON COLUMN segment_efforts.name IS 'Name of the segment as the effort carries it';
COMMENT ON COLUMN segment_efforts.elapsed_time IS 'Time from the start to the end of the segment, in seconds; the PR views rank by it';
COMMENT ON COLUMN segment_efforts.moving_time IS 'Moving time on the segment, in seconds';
COMMENT ON COLUMN segment_efforts.start_date IS 'Start instant of the effort (UTC)';
COMMENT ON COLUMN segment_efforts.start_date_local IS 'Start of the effort in the athlete''s local wall-clock time (the API''s trailing Z dropped)';
COMMENT ON COLUMN segment_efforts.distance IS 'Distance of the effort, in metres';
COMMENT ON COLUMN segment_efforts.start_index IS 'Index of the effort''s first sample in the activity''s data streams';
COMMENT ON COLUMN segment_efforts.end_index IS 'Index of the effort''s last sample in the activity''s data streams';
COMMENT ON COLUMN segment_efforts.average_cadence IS 'Average cadence on the segment: rpm when cycling, strides per minute when running';
COMMENT ON COLUMN segment_efforts.device_watts IS 'Whether the effort''s power came from a power meter rather than the service''s estimate';
COMMENT ON COLUMN segment_efforts.average_watts IS 'Average power on the segment, in watts';
COMMENT ON COLUMN segment_efforts.average_heartrate IS 'Average heart rate on the segment, in bpm';
COMMENT ON COLUMN segment_efforts.max_heartrate IS 'Maximum heart rate on the segment, in bpm';
COMMENT ON COLUMN segment_efforts.pr_rank IS 'The service''s rank among the athlete''s own efforts at upload time (1-3), else NULL; a snapshot, not kept current';
COMMENT ON COLUMN segment_efforts.kom_rank IS 'The service''s rank on the segment''s overall leaderboard at upload time (1-10), else NULL';
COMMENT ON COLUMN segment_efforts.hidden IS 'Whether the service marks the effort hidden; the analysis views leave hidden efforts out';
COMMENT ON COLUMN segment_efforts.achievements IS 'The effort''s achievements as sent: a JSON array of {type_id, type, rank}';
COMMENT ON COLUMN segment_efforts.raw IS 'The effort JSON as the service sent it, including its embedded segment summary';

COMMENT ON TABLE segments IS 'Segments the athlete starred or has efforts on: detailed (GET /segments/{id}) or the summary seen in an effort';
COMMENT ON COLUMN segments.segment_id IS 'The service''s segment id';
COMMENT ON COLUMN segments.name IS 'Name of the segment';
COMMENT ON COLUMN segments.activity_type IS 'Sport the segment is for, e.g. Ride or Run';
COMMENT ON COLUMN segments.distance IS 'Length of the segment, in metres';
COMMENT ON COLUMN segments.average_grade IS 'Average gradient, in percent';
COMMENT ON COLUMN segments.maximum_grade IS 'Steepest gradient, in percent';
COMMENT ON COLUMN segments.elevation_high IS 'Highest elevation on the segment, in metres above sea level';
COMMENT ON COLUMN segments.elevation_low IS 'Lowest elevation on the segment, in metres above sea level';
COMMENT ON COLUMN segments.total_elevation_gain IS 'Total elevation gain along the segment, in metres; detailed segments only (NULL when resource_state 2)';
COMMENT ON COLUMN segments.climb_category IS 'The service''s climb category: 0 uncategorized, 1 (category 4) to 4 (category 1), 5 hors categorie (HC)';
COMMENT ON COLUMN segments.city IS 'City of the segment';
COMMENT ON COLUMN segments.state IS 'State or region of the segment';
COMMENT ON COLUMN segments.country IS 'Country of the segment';
COMMENT ON COLUMN segments.private IS 'Whether the segment is private to its creator';
COMMENT ON COLUMN segments.hazardous IS 'Whether the service flags the segment as hazardous';
COMMENT ON COLUMN segments.start_lat IS 'Latitude of the segment''s start, in decimal degrees';
COMMENT ON COLUMN segments.start_lng IS 'Longitude of the segment''s start, in decimal degrees';
COMMENT ON COLUMN segments.end_lat IS 'Latitude of the segment''s end, in decimal degrees';
COMMENT ON COLUMN segments.end_lng IS 'Longitude of the segment''s end, in decimal degrees';
COMMENT ON COLUMN segments.effort_count IS 'Number of efforts on the segment by all athletes; detailed segments only';
COMMENT ON COLUMN segments.athlete_count IS 'Number of distinct athletes with an effort on the segment; detailed segments only';
COMMENT ON COLUMN segments.star_count IS 'Number of athletes who starred the segment; detailed segments only';
COMMENT ON COLUMN segments.polyline IS 'Route of the segment as an encoded polyline (map.polyline); detailed segments only';
COMMENT ON COLUMN segments.resource_state IS '2: summary (seen in an effort), 3: detailed; a summary never overwrites a detailed row';
COMMENT ON COLUMN segments.synced_at IS 'When fitsync loaded the current version of this segment (UTC)';
COMMENT ON COLUMN segments.raw IS 'The segment JSON as sent (a detailed one carries the fetching athlete''s own athlete_segment_stats)';

COMMENT ON TABLE starred_segments IS 'The segments each athlete has starred, the whole list replaced at each fetch (unstarring removes the row)';
COMMENT ON COLUMN starred_segments.athlete_id IS 'The athlete who starred the segment';
COMMENT ON COLUMN starred_segments.segment_id IS 'The starred segment (segments.segment_id once its detail is fetched)';
COMMENT ON COLUMN starred_segments.synced_at IS 'When fitsync loaded the current version of this row (UTC)';
COMMENT ON COLUMN starred_segments.raw IS 'The segment summary JSON as GET /segments/starred listed it';

COMMENT ON TABLE activity_zones IS 'An activity''s zone distributions (GET /activities/{id}/zones, a paid feature): one row per zone type';
COMMENT ON COLUMN activity_zones.activity_id IS 'The activity the distribution belongs to';
COMMENT ON COLUMN activity_zones.zone_type IS 'heartrate or power (the real service also sends pace)';
COMMENT ON COLUMN activity_zones.score IS 'The service''s score for the distribution: relative effort for heartrate, a power-based training load for power';
COMMENT ON COLUMN activity_zones.sensor_based IS 'Whether the distribution comes from sensor data rather than an estimate';
COMMENT ON COLUMN activity_zones.points IS 'The service''s points value for the distribution, as sent (undocumented by the service)';
COMMENT ON COLUMN activity_zones.custom_zones IS 'Whether the athlete''s custom zones (not the service''s defaults) were used';
COMMENT ON COLUMN activity_zones.raw IS 'The zone distribution JSON as sent, buckets included';

COMMENT ON TABLE activity_zone_buckets IS 'Time in each zone of an activity, with the bounds the activity''s zones had then: one row per bucket';
COMMENT ON COLUMN activity_zone_buckets.activity_id IS 'The activity the bucket belongs to';
COMMENT ON COLUMN activity_zone_buckets.zone_type IS 'heartrate or power (the real service also sends pace), as in activity_zones';
COMMENT ON COLUMN activity_zone_buckets.bucket_index IS 'Zone number, 1-based from the lowest zone';
COMMENT ON COLUMN activity_zone_buckets.min IS 'Lower bound of the zone: bpm for heartrate, watts for power';
COMMENT ON COLUMN activity_zone_buckets.max IS 'Upper bound of the zone (bpm or watts); -1 means no upper bound (the top zone)';
COMMENT ON COLUMN activity_zone_buckets.seconds IS 'Time spent in the zone during the activity, in seconds';

COMMENT ON TABLE deleted_activities IS 'Activities removed from the warehouse, with why and their last summary JSON, so a deletion can be audited or undone';
COMMENT ON COLUMN deleted_activities.activity_id IS 'The removed activity''s id';
COMMENT ON COLUMN deleted_activities.athlete_id IS 'The athlete who owned the activity';
COMMENT ON COLUMN deleted_activities.deleted_at IS 'When fitsync removed the activity and its child rows (UTC)';
COMMENT ON COLUMN deleted_activities.reason IS 'Why: not found, made private, missing in reconciliation, or a webhook delete the service confirmed';
COMMENT ON COLUMN deleted_activities.last_summary_raw IS 'The activity''s summary_raw at the time of removal';

COMMENT ON TABLE unrecognized_payloads IS 'Answers of a shape fitsync does not know, kept whole: one row per endpoint, object and problem (latest copy)';
COMMENT ON COLUMN unrecognized_payloads.athlete_id IS 'The athlete whose sync received the answer';
COMMENT ON COLUMN unrecognized_payloads.endpoint IS 'The operation that answered, as method and path template, e.g. GET /athlete/zones';
COMMENT ON COLUMN unrecognized_payloads.object_id IS 'Id of the object asked for (e.g. the activity id), as text; empty string when the answer is not about one object';
COMMENT ON COLUMN unrecognized_payloads.problem IS 'What did not match, e.g. expected a list of activity records, got dict';
COMMENT ON COLUMN unrecognized_payloads.received_at IS 'When fitsync loaded this copy of the answer (UTC)';
COMMENT ON COLUMN unrecognized_payloads.raw IS 'The answer''s body as received';

-- --- analysis settings (schema 2) --------------------------------------------------------------------------------

COMMENT ON TABLE analysis_settings IS 'Numeric settings the analysis views read (CTL/ATL time constants, ramp days, PI threshold): change a row to change the views';
COMMENT ON COLUMN analysis_settings.name IS 'Setting name: ctl_days, atl_days, ramp_days or pi_polarized_above';
COMMENT ON COLUMN analysis_settings.value IS 'The setting''s value (days for the time constants and ramp_days)';
COMMENT ON COLUMN analysis_settings.description IS 'What the setting does, in words';

COMMENT ON TABLE analysis_seiler_zones IS 'Maps the zones of an activity''s distribution onto Seiler''s three zones, by zone type and number of zones';
COMMENT ON COLUMN analysis_seiler_zones.athlete_id IS '0 for the default mapping; an athlete''s own row overrides the default row with the same other keys';
COMMENT ON COLUMN analysis_seiler_zones.zone_type IS 'heartrate or power, as activity_zone_buckets.zone_type';
COMMENT ON COLUMN analysis_seiler_zones.zone_count IS 'Number of buckets the activity''s zones have; the mapping applies only to distributions with this many';
COMMENT ON COLUMN analysis_seiler_zones.bucket_index IS 'Zone number, 1-based, as activity_zone_buckets.bucket_index';
COMMENT ON COLUMN analysis_seiler_zones.seiler_zone IS 'Seiler zone: 1 below the first threshold, 2 between the thresholds, 3 above the second';

COMMENT ON TABLE analysis_ftp_history IS 'FTP by date for power TSS; with no row in force, the profile FTP (athletes.ftp) applies';
COMMENT ON COLUMN analysis_ftp_history.athlete_id IS 'The athlete the FTP belongs to';
COMMENT ON COLUMN analysis_ftp_history.valid_from IS 'Local date from which this FTP applies, until the next row''s valid_from';
COMMENT ON COLUMN analysis_ftp_history.ftp IS 'Functional threshold power, in watts (> 0)';
COMMENT ON COLUMN analysis_ftp_history.note IS 'Free-text note, e.g. how the FTP was measured';

COMMENT ON TABLE analysis_sport_families IS 'Sport types grouped into families (Eddington, YTD) and whether each gets power-based TSS; unlisted types are Other';
COMMENT ON COLUMN analysis_sport_families.sport_type IS 'A sport type as in activities.sport_type';
COMMENT ON COLUMN analysis_sport_families.family IS 'Family the sport type belongs to: Ride, Run, Swim, Walk/Hike or Ski';
COMMENT ON COLUMN analysis_sport_families.power_tss IS 'Whether a device-power activity of this type gets power TSS from the (cycling) FTP';

COMMENT ON TABLE analysis_form_bands IS 'Named bands of form (TSB) for the PMC''s form_band';
COMMENT ON COLUMN analysis_form_bands.band IS 'Band name: high risk, optimal, grey zone, fresh or transition';
COMMENT ON COLUMN analysis_form_bands.tsb_from IS 'Lowest TSB in the band, inclusive; NULL means unbounded below';
COMMENT ON COLUMN analysis_form_bands.tsb_to IS 'TSB upper limit of the band, exclusive; NULL means unbounded above';
COMMENT ON COLUMN analysis_form_bands.sort_order IS 'Position of the band from most fatigued (1) to freshest, for display';
