"""Data tables for the synthetic world: home regions with their segments, sports, names and gear.

Kept apart from the generator so the world can be tuned by editing rows, not branches.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SegmentSpec:
    """A named segment of a region: its type, length (m) and average grade (%)."""

    name: str
    activity_type: str  # 'Ride' or 'Run'
    distance: float
    grade: float


@dataclass(frozen=True)
class Region:
    """A home region: real centre and IANA zone, so local times and DST come out right."""

    name: str
    lat: float
    lng: float
    timezone: str
    city: str
    state: str
    country: str
    elevation: float  # metres at the centre
    hills: float  # amplitude (m) of the rolling roads between segments
    temp_mean: float  # °C, yearly mean
    temp_swing: float  # °C added in July (negative in the southern hemisphere)
    segments: tuple[SegmentSpec, ...]


def _rides(*rows: tuple[str, float, float]) -> tuple[SegmentSpec, ...]:
    return tuple(SegmentSpec(n, "Ride", d, g) for n, d, g in rows)


def _runs(*rows: tuple[str, float, float]) -> tuple[SegmentSpec, ...]:
    return tuple(SegmentSpec(n, "Run", d, g) for n, d, g in rows)


# Offsets: -8/-7 (DST), -7/-6 (DST), -7 (no DST), +1/+2 (DST), 0/+1 (DST), +10/+11 (southern DST).
REGIONS: tuple[Region, ...] = (
    Region(
        "San Francisco",
        37.7749,
        -122.4194,
        "America/Los_Angeles",
        "San Francisco",
        "CA",
        "United States",
        20,
        30,
        14.5,
        3,
        _rides(
            ("Hawk Hill", 2680, 5.7),
            ("Twin Peaks from Portola", 2900, 6.2),
            ("Old La Honda", 5400, 7.3),
            ("Kings Mountain", 6600, 6.8),
            ("Mount Tamalpais (Pantoll to Summit)", 9500, 7.0),
            ("Mount Diablo (North Gate)", 17700, 4.7),
            ("Great Highway Sprint", 3200, 0.1),
            ("Crissy Field Dash", 1600, 0.0),
            ("Sausalito Waterfront", 2300, 0.3),
            ("Polo Fields Loop", 2400, -0.2),
            ("Cañada Road Rollers", 6000, 0.4),
        )
        + _runs(
            ("Crissy Field Out", 2400, 0.1),
            ("Lands End Trail", 1900, 2.4),
            ("Lyon Street Steps", 290, 16.5),
            ("Panhandle Stretch", 1500, 0.6),
            ("Twin Peaks Run Up", 1300, 8.5),
            ("Embarcadero Mile", 1609, 0.0),
            ("Stow Lake Loop", 1000, 0.2),
        ),
    ),
    Region(
        "Boulder",
        40.0150,
        -105.2705,
        "America/Denver",
        "Boulder",
        "CO",
        "United States",
        1640,
        25,
        11,
        11,
        _rides(
            ("Flagstaff Mountain", 7000, 7.3),
            ("Lefthand Canyon to Ward", 26000, 3.3),
            ("Sunshine Canyon", 8800, 6.1),
            ("Magnolia Road", 7400, 8.5),
            ("Old Stage Road", 2400, 6.6),
            ("Lee Hill Drive", 2600, 7.1),
            ("63rd Street Sprint", 3000, 0.2),
            ("Diagonal Highway TT", 9000, 0.3),
            ("Nelson Road", 4200, 0.8),
            ("St. Vrain Road Rollers", 5000, 0.5),
        )
        + _runs(
            ("Boulder Creek Path", 3200, 0.8),
            ("Mount Sanitas Trail", 2000, 14.5),
            ("Chautauqua Hill", 1100, 7.0),
            ("Wonderland Lake Loop", 2100, 0.6),
            ("Royal Arch Trail", 2000, 13.0),
            ("CU Track Mile", 1609, 0.0),
        ),
    ),
    Region(
        "Tucson",
        32.2226,
        -110.9747,
        "America/Phoenix",
        "Tucson",
        "AZ",
        "United States",
        730,
        12,
        21.5,
        10,
        _rides(
            ("Mount Lemmon to Windy Point", 23500, 5.5),
            ("Gates Pass", 3200, 5.6),
            ("Madera Canyon", 12000, 4.6),
            ("Sabino Canyon Climb", 5800, 4.1),
            ("Snyder Hill", 1500, 3.5),
            ("Tucson Mountain Park Rollers", 6000, 1.2),
            ("Old Spanish Trail Sprint", 2500, 0.5),
            ("Saguaro East Loop", 12800, 1.0),
            ("The Shootout Sprint (Mission Rd)", 1800, 0.3),
        )
        + _runs(
            ("Rillito River Path", 4000, 0.3),
            ("Sabino Canyon Tram Road", 5900, 3.7),
            ("Tumamoc Hill", 2400, 8.3),
            ("Reid Park Loop", 2600, 0.1),
            ("A Mountain", 1300, 7.4),
        ),
    ),
    Region(
        "Girona",
        41.9794,
        2.8214,
        "Europe/Madrid",
        "Girona",
        "Catalonia",
        "Spain",
        75,
        30,
        15,
        8,
        _rides(
            ("Rocacorba", 10500, 6.5),
            ("Els Àngels", 10600, 4.2),
            ("Mare de Déu del Mont", 18400, 5.2),
            ("Sant Grau", 12000, 4.6),
            ("Santa Pellaia", 7800, 4.5),
            ("Sant Hilari Sacalm", 16000, 3.6),
            ("Pont de Pedra Sprint", 1200, 0.0),
            ("Carretera de Quart", 5000, 0.6),
            ("Llagostera Straight", 3500, -0.4),
            ("Tossa – Sant Feliu Coast Road", 21000, 0.7),
        )
        + _runs(
            ("Passeig de la Devesa", 1300, 0.0),
            ("Muralla de Girona", 1800, 3.2),
            ("Via Verda del Carrilet", 5000, 0.4),
            ("Les Pedreres", 1500, 6.8),
            ("Pujada a Sant Miquel", 3500, 7.5),
        ),
    ),
    Region(
        "London",
        51.5072,
        -0.1276,
        "Europe/London",
        "London",
        "England",
        "United Kingdom",
        20,
        10,
        11.5,
        7,
        _rides(
            ("Box Hill (Zig Zag Road)", 2500, 5.0),
            ("Leith Hill (Sheephouse Lane)", 2200, 6.8),
            ("Swain's Lane", 900, 8.6),
            ("Broomfield Hill", 500, 6.7),
            ("White Lane", 1100, 9.0),
            ("Ditchling Beacon", 1450, 9.7),
            ("Regent's Park Outer Circle", 4400, 0.0),
            ("Richmond Park Sawyers to Roehampton", 5000, 0.2),
            ("Hyde Park Sprint", 800, 0.1),
            ("Lee Valley Velopark Loop", 1600, 0.0),
            ("The Mall Sprint", 700, -0.1),
        )
        + _runs(
            ("Hyde Park Serpentine", 2300, 0.0),
            ("Primrose Hill", 500, 7.0),
            ("Parliament Hill", 900, 6.0),
            ("Victoria Park Loop", 5000, 0.0),
            ("Thames Path: Tower Bridge to Westminster", 3000, 0.0),
            ("Battersea Park Lap", 2600, 0.0),
        ),
    ),
    Region(
        "Sydney",
        -33.8688,
        151.2093,
        "Australia/Sydney",
        "Sydney",
        "NSW",
        "Australia",
        30,
        25,
        18,
        -5,
        _rides(
            ("Bobbin Head (North)", 4600, 4.6),
            ("Akuna Bay Climb", 3700, 5.1),
            ("Mona Vale Road", 2400, 5.3),
            ("Galston Gorge", 2300, 7.0),
            ("Mount Keira", 6900, 6.3),
            ("Anzac Bridge Sprint", 1200, 0.8),
            ("Centennial Park Grand Drive", 3800, 0.1),
            ("McCarrs Creek Road", 7000, 0.9),
            ("Homebush Bay Drive TT", 5000, 0.0),
            ("Bondi to Bronte Sprint", 2100, 1.0),
        )
        + _runs(
            ("The Bay Run", 7000, 0.0),
            ("Bondi to Coogee Coastal Walk", 6000, 1.3),
            ("Harbour Bridge Crossing", 1500, 1.1),
            ("Centennial Park Loop Run", 3600, 0.1),
            ("Mrs Macquarie's Chair Out", 2000, -0.3),
        ),
    ),
)

REGIONS_BY_NAME: dict[str, Region] = {r.name: r for r in REGIONS}

# Names of an athlete's own private segment near home.
PRIVATE_SEGMENT_NAMES: tuple[str, ...] = (
    "Driveway to the Corner",
    "Home Stretch",
    "Secret Hill",
    "Mailbox Sprint",
    "Backyard Loop",
    "Bakery Dash",
)


@dataclass(frozen=True)
class Sport:
    """How one sport_type behaves: legacy type, segments it matches and plausible effort ranges."""

    sport_type: str
    legacy_type: str
    noun: str  # used in default names: "Morning <noun>"
    segment_type: str | None  # segments it records efforts on
    base: str  # athlete base speed it derives from: 'ride', 'run' or 'fixed'
    speed: tuple[float, float]  # factor on the base speed, or m/s when base == 'fixed'
    distance_km: tuple[float, float] | None  # None: a time-only sport
    minutes: tuple[float, float]  # duration range of time-only sports
    gps: bool
    indoor: bool
    power: bool  # may carry a power meter
    cadence: tuple[float, float] | None
    hr_frac: tuple[float, float]  # average HR as a fraction of max HR for an easy session
    met: float  # calories for sports without power
    gear: str | None  # 'bike' or 'shoe'
    gear_roles: tuple[str, ...]  # preferred gear roles, best first
    hills: float  # factor on the region's rolling amplitude
    workout_types: tuple[tuple[int | None, float], ...]  # (workout_type, weight)


_RIDE_WT = ((10, 0.82), (12, 0.14), (11, 0.04))
_RUN_WT = ((0, 0.7), (2, 0.14), (3, 0.13), (1, 0.03))
_NONE_WT = ((None, 1.0),)

SPORTS: dict[str, Sport] = {
    s.sport_type: s
    for s in (
        Sport(
            "Ride",
            "Ride",
            "Ride",
            "Ride",
            "ride",
            (1.0, 1.0),
            (22, 120),
            (0, 0),
            True,
            False,
            True,
            (80, 92),
            (0.66, 0.76),
            8.0,
            "bike",
            ("road",),
            1.0,
            _RIDE_WT,
        ),
        Sport(
            "GravelRide",
            "Ride",
            "Gravel Ride",
            "Ride",
            "ride",
            (0.82, 0.88),
            (30, 100),
            (0, 0),
            True,
            False,
            False,
            (76, 86),
            (0.66, 0.76),
            8.5,
            "bike",
            ("gravel", "road"),
            1.4,
            ((10, 1.0),),
        ),
        Sport(
            "MountainBikeRide",
            "Ride",
            "Mountain Bike Ride",
            "Ride",
            "ride",
            (0.6, 0.7),
            (15, 50),
            (0, 0),
            True,
            False,
            False,
            (70, 82),
            (0.7, 0.8),
            8.5,
            "bike",
            ("mtb", "gravel", "road"),
            2.0,
            ((10, 1.0),),
        ),
        Sport(
            "EBikeRide",
            "EBikeRide",
            "E-Bike Ride",
            None,
            "fixed",
            (6.0, 7.2),
            (15, 45),
            (0, 0),
            True,
            False,
            False,
            (60, 75),
            (0.55, 0.62),
            4.0,
            None,
            (),
            1.0,
            _NONE_WT,
        ),
        Sport(
            "EMountainBikeRide",
            "EBikeRide",
            "E-Mountain Bike Ride",
            None,
            "fixed",
            (4.0, 5.2),
            (15, 40),
            (0, 0),
            True,
            False,
            False,
            (60, 75),
            (0.58, 0.66),
            5.0,
            None,
            (),
            2.0,
            _NONE_WT,
        ),
        Sport(
            "VirtualRide",
            "VirtualRide",
            "Virtual Ride",
            None,
            "ride",
            (0.95, 1.02),
            (18, 60),
            (0, 0),
            False,
            True,
            True,
            (84, 95),
            (0.7, 0.8),
            8.0,
            "bike",
            ("trainer", "road"),
            0.8,
            ((10, 0.7), (12, 0.3)),
        ),
        Sport(
            "Run",
            "Run",
            "Run",
            "Run",
            "run",
            (1.0, 1.0),
            (5, 21),
            (0, 0),
            True,
            False,
            False,
            (80, 90),
            (0.74, 0.82),
            10.0,
            "shoe",
            ("road", "race"),
            0.6,
            _RUN_WT,
        ),
        Sport(
            "TrailRun",
            "Run",
            "Trail Run",
            "Run",
            "run",
            (0.78, 0.86),
            (8, 25),
            (0, 0),
            True,
            False,
            False,
            (76, 86),
            (0.74, 0.84),
            10.5,
            "shoe",
            ("trail", "road"),
            2.5,
            ((0, 0.85), (2, 0.15)),
        ),
        Sport(
            "VirtualRun",
            "VirtualRun",
            "Virtual Run",
            None,
            "run",
            (0.98, 1.04),
            (5, 12),
            (0, 0),
            False,
            True,
            False,
            (82, 90),
            (0.75, 0.83),
            10.0,
            "shoe",
            ("road",),
            0.0,
            ((0, 0.7), (3, 0.3)),
        ),
        Sport(
            "Walk",
            "Walk",
            "Walk",
            None,
            "fixed",
            (1.25, 1.55),
            (2, 8),
            (0, 0),
            True,
            False,
            False,
            (52, 60),
            (0.5, 0.58),
            3.5,
            "shoe",
            ("road",),
            0.5,
            _NONE_WT,
        ),
        Sport(
            "Hike",
            "Hike",
            "Hike",
            None,
            "fixed",
            (0.85, 1.25),
            (6, 20),
            (0, 0),
            True,
            False,
            False,
            (48, 56),
            (0.58, 0.68),
            6.0,
            "shoe",
            ("trail",),
            9.0,
            _NONE_WT,
        ),
        Sport(
            "Swim",
            "Swim",
            "Swim",
            None,
            "fixed",
            (0.7, 1.0),
            (1, 3.5),
            (0, 0),
            False,
            True,
            False,
            (24, 30),
            (0.66, 0.76),
            8.0,
            None,
            (),
            0.0,
            _NONE_WT,
        ),
        Sport(
            "Rowing",
            "Rowing",
            "Row",
            None,
            "fixed",
            (3.4, 4.0),
            (5, 14),
            (0, 0),
            True,
            False,
            False,
            (22, 28),
            (0.68, 0.78),
            7.0,
            None,
            (),
            0.0,
            _NONE_WT,
        ),
        Sport(
            "NordicSki",
            "NordicSki",
            "Nordic Ski",
            None,
            "fixed",
            (3.0, 4.5),
            (10, 30),
            (0, 0),
            True,
            False,
            False,
            None,
            (0.7, 0.8),
            9.0,
            None,
            (),
            2.0,
            _NONE_WT,
        ),
        Sport(
            "AlpineSki",
            "AlpineSki",
            "Alpine Ski",
            None,
            "fixed",
            (5.0, 8.0),
            (15, 40),
            (0, 0),
            True,
            False,
            False,
            None,
            (0.55, 0.65),
            5.5,
            None,
            (),
            6.0,
            _NONE_WT,
        ),
        Sport(
            "WeightTraining",
            "WeightTraining",
            "Weight Training",
            None,
            "fixed",
            (0, 0),
            None,
            (30, 70),
            False,
            True,
            False,
            None,
            (0.55, 0.65),
            5.0,
            None,
            (),
            0.0,
            _NONE_WT,
        ),
        Sport(
            "Yoga",
            "Yoga",
            "Yoga",
            None,
            "fixed",
            (0, 0),
            None,
            (30, 75),
            False,
            True,
            False,
            None,
            (0.45, 0.52),
            2.5,
            None,
            (),
            0.0,
            _NONE_WT,
        ),
        Sport(
            "Workout",
            "Workout",
            "Workout",
            None,
            "fixed",
            (0, 0),
            None,
            (30, 60),
            False,
            True,
            False,
            None,
            (0.62, 0.72),
            6.0,
            None,
            (),
            0.0,
            _NONE_WT,
        ),
        # A newer sport type that older clients do not know; its legacy type is the generic one.
        Sport(
            "Pickleball",
            "Workout",
            "Pickleball",
            None,
            "fixed",
            (0, 0),
            None,
            (45, 90),
            False,
            False,
            False,
            None,
            (0.6, 0.7),
            6.0,
            "shoe",
            ("road",),
            0.0,
            _NONE_WT,
        ),
    )
}

# The generic row used for sport types the table does not model.
FALLBACK_SPORT = SPORTS["Workout"]

# The service's other sport types (recorded with the generic row): sport_type -> legacy type.
OTHER_SPORT_TYPES: dict[str, str] = {
    "BackcountrySki": "BackcountrySki",
    "Badminton": "Workout",
    "Canoeing": "Canoeing",
    "Crossfit": "Crossfit",
    "Elliptical": "Elliptical",
    "Golf": "Golf",
    "Handcycle": "Handcycle",
    "HighIntensityIntervalTraining": "Workout",
    "IceSkate": "IceSkate",
    "InlineSkate": "InlineSkate",
    "Kayaking": "Kayaking",
    "Kitesurf": "Kitesurf",
    "Pilates": "Workout",
    "Racquetball": "Workout",
    "RockClimbing": "RockClimbing",
    "RollerSki": "RollerSki",
    "Sail": "Sail",
    "Skateboard": "Skateboard",
    "Snowboard": "Snowboard",
    "Snowshoe": "Snowshoe",
    "Soccer": "Soccer",
    "Squash": "Workout",
    "StairStepper": "StairStepper",
    "StandUpPaddling": "StandUpPaddling",
    "Surfing": "Surfing",
    "TableTennis": "Workout",
    "Tennis": "Workout",
    "Velomobile": "Velomobile",
    "VirtualRow": "Rowing",
    "Wheelchair": "Wheelchair",
    "Windsurf": "Windsurf",
}

# Athlete kinds when not chosen: (kind, weight). Runners may own a bike; runner_only athletes never ride.
KIND_MIX: tuple[tuple[str, float], ...] = (("cyclist", 70), ("runner", 20), ("runner_only", 10))

# Activity mixes per athlete kind: (sport_type, weight).
SPORT_MIX: dict[str, tuple[tuple[str, float], ...]] = {
    "cyclist": (
        ("Ride", 48),
        ("GravelRide", 8),
        ("MountainBikeRide", 5),
        ("VirtualRide", 12),
        ("Run", 10),
        ("Walk", 4),
        ("Hike", 2),
        ("WeightTraining", 4),
        ("Yoga", 1),
        ("Swim", 2),
        ("NordicSki", 1),
        ("EBikeRide", 1),
        ("Rowing", 1),
        ("Pickleball", 1),
    ),
    "runner": (
        ("Run", 50),
        ("TrailRun", 12),
        ("VirtualRun", 3),
        ("Ride", 10),
        ("Walk", 6),
        ("Hike", 4),
        ("Swim", 4),
        ("WeightTraining", 5),
        ("Yoga", 3),
        ("Workout", 2),
        ("AlpineSki", 1),
    ),
    "runner_only": (
        ("Run", 58),
        ("TrailRun", 15),
        ("VirtualRun", 4),
        ("Walk", 7),
        ("Hike", 5),
        ("Swim", 3),
        ("WeightTraining", 4),
        ("Yoga", 3),
        ("Workout", 1),
    ),
}

# Local start hour weights (hour, weight).
START_HOURS: tuple[tuple[int, float], ...] = (
    (5, 2),
    (6, 6),
    (7, 8),
    (8, 7),
    (9, 6),
    (10, 5),
    (11, 3),
    (12, 6),
    (13, 2),
    (14, 2),
    (15, 2),
    (16, 3),
    (17, 6),
    (18, 7),
    (19, 4),
    (20, 2),
    (21, 1),
)

# Default activity names by local hour: (first hour, word).
DAY_PARTS: tuple[tuple[int, str], ...] = (
    (0, "Night"),
    (4, "Morning"),
    (11, "Lunch"),
    (13, "Afternoon"),
    (17, "Evening"),
    (21, "Night"),
)

CUSTOM_NAMES: dict[str, tuple[str, ...]] = {
    "Ride": (
        "Coffee ride ☕",
        "Hill repeats",
        "Recovery spin",
        "Tempo Tuesday",
        "Group ride with the club",
        "Sortida amb la colla",
        "Chasing the sunset",
        "Long Sunday miles",
        "Bonked 🥵",
        "Café-stop loop",
    ),
    "Run": (
        "Easy miles",
        "Track session 6x800",
        "Long run with friends",
        "parkrun",
        "Tempo run",
        "Recovery jog",
        "Fartlek in the park",
        "Trail vibes 🌲",
        "Progression run",
    ),
    "VirtualRide": (
        "Zwift - Watopia Figure 8",
        "Zwift - Innsbruck KOM After Party",
        "Zwift - Makuri Islands",
        "Zwift - Tempus Fugit in Watopia",
        "Zwift - Group Ride",
    ),
    "other": ("Easy day", "With the family", "Quick one", "Cross training"),
}

DESCRIPTIONS: tuple[str, ...] = (
    "Legs felt good today.",
    "Windy out there!",
    "New shoes, first outing.",
    "Followed the plan.",
    "Ran into an old friend mid-way.",
    "Too hot. Way too hot.",
    "Rain jacket on and off all day.",
    "Felt flat, cut it short.",
    "Great views from the top 🏔️",
    "Coffee at the usual spot.",
)

FIRST_NAMES: dict[str, tuple[str, ...]] = {
    "F": ("Marianne", "Ana", "Lucía", "Emma", "Chloe", "Sofia", "Grace", "Mia", "Olivia", "Núria", "Zoë", "Hannah"),
    "M": ("Jordi", "Tom", "Liam", "Mateo", "Oscar", "Noah", "Pau", "Lars", "James", "Élie", "Hiroshi", "Daniel"),
}
LAST_NAMES: tuple[str, ...] = (
    "Teutenberg",
    "García",
    "Smith",
    "Nguyen",
    "O'Connor",
    "Müller",
    "Rossi",
    "Puig",
    "Johnson",
    "Kowalski",
    "Martínez",
    "Brown",
    "Tanaka",
    "Andersen",
    "Walker",
    "Ferrer",
)

# Gear catalogue: (name, role). The role decides which sport picks it.
BIKES: tuple[tuple[str, str], ...] = (
    ("Specialized Tarmac SL7", "road"),
    ("Canyon Ultimate CF SLX", "road"),
    ("Trek Domane SL 6", "road"),
    ("Cervélo R5", "road"),
    ("Cannondale Topstone", "gravel"),
    ("Canyon Grail", "gravel"),
    ("Specialized Stumpjumper", "mtb"),
    ("Santa Cruz Tallboy", "mtb"),
    ("Wahoo KICKR Bike", "trainer"),
    ("Indoor trainer bike", "trainer"),
)
SHOES: tuple[tuple[str, str], ...] = (
    ("Nike Pegasus 40", "road"),
    ("Hoka Clifton 9", "road"),
    ("Asics Novablast 4", "road"),
    ("Saucony Endorphin Speed 3", "race"),
    ("Nike Vaporfly 3", "race"),
    ("Salomon Speedcross 6", "trail"),
    ("Brooks Cascadia 17", "trail"),
)
GEAR_ROLES: dict[str, str] = dict(BIKES + SHOES)

# Recording devices: bike computers, watches and indoor apps.
BIKE_COMPUTERS: tuple[str, ...] = ("Garmin Edge 1040", "Garmin Edge 530", "Wahoo ELEMNT BOLT", "Hammerhead Karoo 2")
WATCHES: tuple[str, ...] = (
    "Garmin Forerunner 265",
    "Garmin fēnix 7",
    "COROS PACE 3",
    "Apple Watch Series 9",
    "Polar Pacer Pro",
)
INDOOR_APPS: dict[str, str] = {"VirtualRide": "Zwift", "VirtualRun": "Zwift"}
PHONE_APP = "Strava App"
