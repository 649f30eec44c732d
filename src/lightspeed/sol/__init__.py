"""Speed-of-light engine: roofline, collectives, parallel plans, estimates, search."""

from lightspeed.sol.calibration import lightspeed_home
from lightspeed.sol.efficiency import EfficiencyModel, default_efficiency, load_efficiency_defaults

__all__ = ["EfficiencyModel", "default_efficiency", "lightspeed_home", "load_efficiency_defaults"]
