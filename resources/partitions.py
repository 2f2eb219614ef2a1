"""One partition per athlete: the athletes fitsync syncs are the dynamic partitions of every per-athlete asset."""

from dagster import DynamicPartitionsDefinition

athletes_partitions = DynamicPartitionsDefinition(name="athletes")


def athlete_id(partition_key: str) -> int:
    return int(partition_key)
