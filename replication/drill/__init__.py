"""The failover drill: ``python -m replication drill`` (see :mod:`replication.drill._drill`).

- ``_processes``: one emulator process per namespace (killable), Azurite, the replicator;
- ``_apps``: the sample applications, written with :mod:`replication.failover`;
- ``_figures``: published, consumed, lost, RTO, duplicates and switch times per phase;
- ``_drill``: the drill itself: :func:`run_drill` on processes of its own, :func:`drill` on any
  :class:`DrillSite` (the showcase's failover scenario runs it on its emulators); the hang
  drills (:class:`Hang`) need a :class:`HangSite`, which can freeze a namespace or the store.
"""

from ._drill import (
    STORE_FROZEN,
    DrillReport,
    DrillSettings,
    DrillSite,
    Hang,
    HangSite,
    Pick,
    drill,
    pick_applications,
    run_drill,
)
from ._figures import Delivery, Done, PhaseFigures, phase_figures
from ._processes import (
    AZURITE_ACCOUNT,
    AZURITE_KEY,
    AzuriteProcess,
    DrillSetupError,
    azurite,
    azurite_command,
    azurite_process,
)

__all__ = [
    "AZURITE_ACCOUNT",
    "AZURITE_KEY",
    "STORE_FROZEN",
    "AzuriteProcess",
    "Delivery",
    "Done",
    "DrillReport",
    "DrillSettings",
    "DrillSetupError",
    "DrillSite",
    "Hang",
    "HangSite",
    "PhaseFigures",
    "Pick",
    "azurite",
    "azurite_command",
    "azurite_process",
    "drill",
    "phase_figures",
    "pick_applications",
    "run_drill",
]
