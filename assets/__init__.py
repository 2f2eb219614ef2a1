"""Dagster assets pulling each connected athlete's data, one partition per athlete."""
