"""Microbenchmarks of this machine against its speed of light.

Suites (``gemm``, ``membw``, ``copy``, ``launch``, ``collectives``) run through
PyTorch (the ``bench`` extra), imported only when a suite runs. The
environment fingerprint needs no extra.
"""

from lightspeed.bench.environment import EnvironmentFingerprint, environment_fingerprint

__all__ = ["EnvironmentFingerprint", "environment_fingerprint"]
