"""Activity streams: the per-second samples of the activities the `streams` setting wants (`recent`: the last
`streams_days` days, the default; `all`; `off`), fetched last in a run and at the rate governor's lowest class
(`streams`), so they never delay details, zones or a webhook's re-pull; one call per activity, newest first, never for
a manual activity or one without GPS or a sensor (sync/streams.py), written to Parquet beside the warehouse as they
arrive (warehouse/streams.py). What could not be stored is kept raw and reported: the run is then not "ok", never
failed."""

from collections.abc import Callable

from dagster import AssetExecutionContext, MaterializeResult, MetadataValue, asset

from fitsync.client import rate_governor
from fitsync.client.rate_governor import RateBudgetExhausted
from fitsync.resources.api import FitsyncApi
from fitsync.resources.partitions import athlete_id, athletes_partitions
from fitsync.resources.run import API_POOL, Meter, metered
from fitsync.sync import live, streams
from fitsync.warehouse import db, documents
from fitsync.warehouse import streams as stored

STREAMS_CLASS = "streams"  # rate_governor.CLASSES: after every other class
# After every other step ready at the same time, the starred segments' histories (LAST, -10) included.
AFTER_ALL = {"dagster/priority": "-20"}
WAIT_FOR_FILE = 60.0  # reading the queue waits this long for another process's hold on the warehouse file


@asset(
    partitions_def=athletes_partitions,
    pool=API_POOL,
    group_name="fetch",
    kinds={"api", "parquet"},
    deps=["activity_details", "activity_zones"],
    op_tags=AFTER_ALL,
)
def activity_streams(context: AssetExecutionContext, fitsync_api: FitsyncApi) -> MaterializeResult:
    """Per-second streams (time, distance, latlng, altitude, speed, heart rate, cadence, power, temperature, moving,
    grade) of recorded activities, in Parquet per athlete and month; read through the activity_streams view."""
    client = fitsync_api.client()
    aid = athlete_id(context.partition_key)
    config = client.config
    with metered(client) as meter:
        if config.streams == "off":
            meter.notes.append("skipped: streams = off")
            return MaterializeResult(metadata=meter.metadata(fetched=0, remaining=0))
        try:
            with db.reading(fitsync_api.warehouse(), timeout=WAIT_FOR_FILE) as conn:
                queue = stored.waiting(conn, aid, streams.since(config.streams, config.streams_days))
                root = documents.root(conn)
        except Exception as error:  # noqa: BLE001 (busy or not created yet: the next run asks again)
            meter.notes.append(f"skipped: the warehouse could not be read ({str(error).splitlines()[0][:200]})")
            return MaterializeResult(metadata=meter.metadata(fetched=0))
        if root is None or not queue:
            return MaterializeResult(metadata=meter.metadata(fetched=0, remaining=0, samples=0))
        session = client.athlete(aid, bulk=True, max_wait=fitsync_api.max_wait_seconds, priority=STREAMS_CLASS)
        tally = _Tally(
            meter,
            aid,
            lambda: context.log.info(f"streams: {tally.fetched} fetched, {len(queue) - tally.fetched} to go"),
        )
        counted = live.Tally(len(queue))  # for the live line of `fitsync sync`: "streams n/m" and the time left
        try:
            with (
                streams.Writer(root, aid, tally.written) as writer,
                rate_governor.before_long_waits(lambda seconds: writer.flush()),
                live.fetching(aid, live.STREAMS, counted),
            ):
                for activity_id, start, elapsed_s in queue:
                    writer.add(streams.fetch(session, activity_id, start, elapsed_s))
                    counted.done += 1
        except RateBudgetExhausted as stop:
            meter.budget_spent(f"rate budget spent: the rest continues next run ({stop})")
        for line in tally.problems:
            context.log.warning(line)
        return MaterializeResult(
            metadata=meter.metadata(
                fetched=tally.fetched,
                samples=tally.samples,
                remaining=len(queue) - tally.fetched,
                by_status=MetadataValue.json(tally.by_status),
                streams_setting=config.streams,
            )
        )


# The answers that leave something out, reported (the run is then not "ok"), and where what came is.
_KEPT = "the answer is kept whole in activity_stream_answers"
_LEFT_OUT = {
    stored.PART_STORED: _KEPT,
    stored.KEPT_RAW: _KEPT,
    stored.NO_STREAMS: _KEPT,
    stored.SHORT: _KEPT,
    stored.TOO_LARGE: "nothing of it was read",
}


class _Tally:
    """What the step wrote, and what it left out (reported: the run is not "ok")."""

    def __init__(self, meter: Meter, aid: int, progress: Callable[[], None]) -> None:
        self.meter, self.aid, self.progress = meter, aid, progress
        self.fetched = self.samples = 0
        self.by_status: dict[str, int] = {}
        self.problems: list[str] = []

    def written(self, answers: list[stored.Answer], samples: int) -> None:
        self.fetched += len(answers)
        self.samples += samples
        for answer in answers:
            self.by_status[answer.status] = self.by_status.get(answer.status, 0) + 1
            if answer.status in _LEFT_OUT:
                line = (
                    f"athlete {self.aid}: activity {answer.activity_id}'s streams ({streams.ENDPOINT}): "
                    f"{'; '.join(answer.problems)} — {_LEFT_OUT[answer.status]}"
                )
                self.problems.append(line)
                self.meter.left_out(line)
        self.progress()
