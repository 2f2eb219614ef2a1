"""One partition per athlete: the athletes fitsync syncs are the dynamic partitions of every per-athlete asset."""

from dagster import DynamicPartitionsDefinition

ATHLETES = "athletes"
"""The name of the athletes' partitions, for the instance's dynamic-partition calls (the definition's `name` is
typed optional: a dynamic partitions definition may also be a function without a name)."""

athletes_partitions = DynamicPartitionsDefinition(name=ATHLETES)


def athlete_id(partition_key: str) -> int:
    return int(partition_key)
