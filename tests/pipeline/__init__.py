"""End-to-end tests of the pipeline (issue 4) against the session sandbox: what each test of the issue's list
is covered by.

| issue's test | tests |
|---|---|
| warehouse equals the service after a sync | test_sync: test_warehouse_equals_the_service_after_a_sync |
| incremental after adds, renames, retypes, visibility changes, deletes, late uploads | test_sync: test_incremental_follows_adds_renames_retypes_visibility_and_late_uploads, test_full_reconciliation_finds_old_renames_and_deletions_no_webhook_announced, test_only_you_activity_leaves_a_read_only_grant_on_full_reconciliation |
| call counts equal the minimum | test_sync: test_backfill_costs_listing_pages_plus_one_detail_and_one_zones_call_each, test_backfill_of_two_listing_pages |
| killed at random points and restarted | test_resume: test_killed_syncs_restart_to_the_same_warehouse_with_few_repeated_calls, test_a_sync_killed_while_loading_does_not_block_later_syncs, test_many_random_kills (slow) |
| tiny rate budget, no 429; stop early and continue | test_resume: test_tiny_rate_budget_spreads_a_backfill_over_windows_without_a_429 (+ _of_forty, slow), test_a_run_out_of_patience_stops_early_and_the_next_continues_without_repeats, test_a_spent_budget_is_a_skip_for_every_asset_not_a_failure, test_sync_athlete_runs_with_the_config_it_is_given |
| 402 and 404 | test_sync: test_non_subscriber_skips_zones_and_effort_histories_with_a_note, test_a_402_despite_the_profile_is_a_skip_that_is_remembered, test_activity_deleted_between_listing_and_detail_is_audited_and_the_run_succeeds, test_activity_made_only_you_before_its_detail_leaves_a_read_only_grant |
| reads during a write | test_sync: test_reads_while_the_loader_writes_never_fail |
| definitions, schedule, checks | test_definitions (all) |
| `fitsync sync` / `fitsync query` | test_cli (all) |
"""
