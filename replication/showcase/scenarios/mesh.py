"""All-active mesh (``examples/three-region-mesh.json``): three regions publish, every reading
reaches every region's ``dashboard`` once; the Spark audit then checks the same regions."""

from __future__ import annotations

from .._checks import in_every_namespace
from .._scenario import Scenario, Stage, message

REGIONS = ("weu", "eus", "sea")
PER_REGION = 50


def drive(stage: Stage) -> None:
    everywhere = [f"{region}/telemetry/dashboard" for region in REGIONS]
    for region in REGIONS:
        stage.say(f"publishing {PER_REGION} readings in {region}")
        readings = [message(f"{region}-{n:03d}", {"n": n}) for n in range(PER_REGION)]
        stage.publish(region, "telemetry", readings, expect=everywhere)


SCENARIO = Scenario(
    name="mesh",
    title="all-active mesh",
    example="three-region-mesh.json",
    drive=drive,
    checks=(in_every_namespace(),),
    audit=True,
)
