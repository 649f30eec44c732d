"""Speed-of-light engine: roofline, collectives, parallel plans, estimates, search."""

from lightspeed.sol.calibration import lightspeed_home
from lightspeed.sol.capacity import MemoryPlan, plan_memory
from lightspeed.sol.efficiency import EfficiencyModel, default_efficiency, load_efficiency_defaults

__all__ = [
    "EfficiencyModel",
    "MemoryPlan",
    "default_efficiency",
    "lightspeed_home",
    "load_efficiency_defaults",
    "plan_memory",
]
