"""The environment fingerprint: parsed from /proc/cpuinfo text, cheap, stable."""

from __future__ import annotations

import subprocess
import sys

from lightspeed.bench import environment_fingerprint
from lightspeed.environment import _cpuinfo_fields

# Two sockets x two cores with hyper-threading: 8 logical CPUs, 4 physical cores.
CPUINFO = "\n\n".join(
    f"processor\t: {cpu}\nmodel name\t: Test CPU 9000\nphysical id\t: {cpu // 4}\n"
    f"core id\t\t: {(cpu // 2) % 2}\nflags\t\t: fpu sse avx2 fma avx512f avx512_bf16"
    for cpu in range(8)
)


def test_cpuinfo_parsing_counts_physical_cores() -> None:
    model, flags, cores = _cpuinfo_fields(CPUINFO)
    assert model == "Test CPU 9000"
    assert flags == ("avx2", "fma", "avx512f", "avx512_bf16")
    assert cores == 4


def test_empty_cpuinfo_gives_unknown_cores() -> None:
    assert _cpuinfo_fields("") == ("", (), None)


def test_fingerprint_is_stable_and_describes_this_machine() -> None:
    first = environment_fingerprint()
    second = environment_fingerprint()
    assert first.fingerprint_id == second.fingerprint_id
    assert len(first.fingerprint_id) == 16
    assert first.host_name
    assert first.num_logical_cpus >= 1


def test_fingerprint_does_not_import_torch() -> None:
    code = "import sys, lightspeed.bench as b; b.environment_fingerprint(); print('torch' in sys.modules)"
    output = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert output.strip() == "False"
