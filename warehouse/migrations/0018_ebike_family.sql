-- fitsync warehouse, schema 18: a motor's kilometres are not the rider's. E-bike rides were in the Ride family: their
-- distance in the rider's Ride volume, year-to-date and Eddington number (a coach read 1,142 km of Ride for 748 km
-- ridden). They are a family of their own; their load still counts in the athlete's 'All' PMC (the heart worked).
UPDATE analysis_sport_families SET family = 'E-bike' WHERE motorized;
