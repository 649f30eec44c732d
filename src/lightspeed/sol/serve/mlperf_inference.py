"""MLPerf Inference LLM benchmarks as simulator workloads (``sol/serve/data/mlperf.toml``).

LoadGen's scenarios: **Offline** issues every sample at once and reports
throughput; **Server** issues them as a Poisson process at a target rate and
is valid when the 99th percentiles of TTFT and TPOT meet the benchmark's
limits; **Interactive** is Server with tighter limits. A benchmark's result
in the Server scenarios is the highest rate that stays valid
(:func:`lightspeed.sol.serve.capacity_at_slo.max_rate_at_slo` finds it).

Each workload keeps the samples and length statistics MLCommons publishes
and the statistics of its datasets' token counts (a source per figure): a
length with a mean and a standard deviation is drawn log-normal between its
bounds; an output with only a mean, uniform about it. Where no statistic is
known, the workload says what the simulator draws instead
(``input_assumption``), and a row's or user's ISL/OSL overrides it.

>>> workload = load_mlperf_workload("llama 2 70b")
>>> workload.name, workload.server_slo.ttft_s, workload.interactive_slo.tpot_s
('llama2-70b', 2.0, 0.04)
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Final

from lightspeed.datafile import Fields, load_toml, parse_sources
from lightspeed.errors import DataFileError, InvalidPlanError, UnknownNameError, UserInputError
from lightspeed.records import Record
from lightspeed.sol.infer.plan import InferencePlan
from lightspeed.sol.serve.run_metrics import ServiceLevel
from lightspeed.sol.serve.workload import ArrivalProcess, LengthDistribution, ServingWorkload

MLPERF_SCENARIOS: Final = ("offline", "server", "interactive")
MLPERF_PERCENTILE_ATTAINMENT: Final = 0.99  # LoadGen's target_latency_percentile = 99


@dataclass(frozen=True)
class MlperfCheckpoint(Record):
    """The checkpoint a benchmark's submitters' code builds for one GPU architecture in some
    rounds (``[[workloads.<name>.checkpoints]]``): its weight format and, for a per-layer mixed
    checkpoint, its effective bits (see :class:`~lightspeed.sol.infer.plan.InferencePlan`)."""

    architecture: str
    rounds: tuple[str, ...]
    precision: str
    source: str
    effective_bits: float | None = None
    accelerators: tuple[str, ...] = ()

    def applies(self, architecture: str, accelerator: str, round_: str) -> bool:
        """Whether a row of MLPerf round ``round_`` (``5.0``) on ``accelerator`` (a catalog name
        of ``architecture``) ran this checkpoint."""
        return (
            architecture.lower() == self.architecture.lower()
            and round_ in self.rounds
            and (not self.accelerators or accelerator in self.accelerators)
        )


@dataclass(frozen=True)
class MlperfWorkload(Record):
    """One MLPerf LLM benchmark: model, samples, token lengths, latency limits (see the module)."""

    name: str
    display_name: str
    model: str
    dataset: str
    num_samples: int
    output_mean_tokens: float | None
    output_minimum_tokens: int
    output_maximum_tokens: int | None
    input_maximum_tokens: int | None
    input_assumption: str
    server_slo: ServiceLevel
    interactive_slo: ServiceLevel | None
    aliases: tuple[str, ...]
    sources: tuple[str, ...]
    input_mean_tokens: float | None = None
    input_std_tokens: float | None = None
    input_minimum_tokens: int = 1
    output_std_tokens: float | None = None
    checkpoints: tuple[MlperfCheckpoint, ...] = ()

    def checkpoint(self, architecture: str, accelerator: str, round_: str) -> MlperfCheckpoint | None:
        """The checkpoint the submitters' code builds for a row of round ``round_`` on
        ``accelerator`` (of ``architecture``), if the data file knows it."""
        return next(
            (item for item in self.checkpoints if item.applies(architecture, accelerator, round_)), None
        )

    def slo(self, scenario: str) -> ServiceLevel | None:
        """The latency limits of ``scenario`` (``None`` for Offline)."""
        _check_scenario(scenario)
        if scenario == "offline":
            return None
        if scenario == "interactive":
            if self.interactive_slo is None:
                raise UserInputError(f"MLPerf {self.display_name} has no Interactive scenario")
            return self.interactive_slo
        return self.server_slo

    def lengths(self) -> tuple[LengthDistribution | None, LengthDistribution | None]:
        """(prompt, output) distributions from the published statistics, ``None`` where unknown.

        A mean with a standard deviation is log-normal between the bounds; an output mean alone a
        uniform spread about it from the published minimum; a prompt bound alone uniform up to it."""
        output = None
        if self.output_mean_tokens is not None:
            mean = self.output_mean_tokens
            low = self.output_minimum_tokens
            if self.output_std_tokens is not None:
                output = LengthDistribution.lognormal(
                    mean, self.output_std_tokens, low, self.output_maximum_tokens
                )
            else:
                output = LengthDistribution.uniform(low, max(round(2 * mean - low), low))
        prompt = None
        if self.input_mean_tokens is not None and self.input_std_tokens is not None:
            prompt = LengthDistribution.lognormal(
                self.input_mean_tokens,
                self.input_std_tokens,
                self.input_minimum_tokens,
                self.input_maximum_tokens,
            )
        elif self.input_maximum_tokens is not None:
            prompt = LengthDistribution.uniform(1, self.input_maximum_tokens)
        return prompt, output

    def workload(
        self,
        scenario: str,
        *,
        rate_per_s: float | None = None,
        num_requests: int | None = None,
        input_lengths: LengthDistribution | None = None,
        output_lengths: LengthDistribution | None = None,
    ) -> ServingWorkload:
        """The simulator workload of ``scenario`` (Server/Interactive need ``rate_per_s``); lengths
        given here override the published ones, and a missing one is an error naming what to give."""
        _check_scenario(scenario)
        prompt, output = self.lengths()
        prompt, output = input_lengths or prompt, output_lengths or output
        if prompt is None or output is None:
            missing = "--isl" if prompt is None else "--osl"
            raise UserInputError(
                f"MLCommons publishes no {'prompt' if prompt is None else 'output'} lengths for "
                f"{self.display_name}; give them ({missing})"
            )
        if scenario == "offline":
            arrivals = ArrivalProcess.offline()
        elif rate_per_s is None:
            raise UserInputError(f"the MLPerf {scenario} scenario needs an arrival rate (queries per second)")
        else:
            arrivals = ArrivalProcess.poisson(rate_per_s)
        return ServingWorkload(
            arrivals=arrivals,
            input_lengths=prompt,
            output_lengths=output,
            num_requests=num_requests or self.num_samples,
            name=f"MLPerf {self.display_name} {scenario}",
        )


def _check_scenario(scenario: str) -> None:
    if scenario not in MLPERF_SCENARIOS:
        raise UserInputError(f"MLPerf scenario {scenario!r} is not one of {', '.join(MLPERF_SCENARIOS)}")


def _data_file() -> Path:
    return Path(str(resources.files("lightspeed.sol.serve") / "data" / "mlperf.toml"))


def _slo(table: Fields, prefix: str) -> ServiceLevel | None:
    ttft = table.optional_quantity(f"{prefix}_ttft", "seconds")
    tpot = table.optional_quantity(f"{prefix}_tpot", "seconds")
    if ttft is None and tpot is None:
        return None
    return ServiceLevel(ttft_s=ttft, tpot_s=tpot, attainment=MLPERF_PERCENTILE_ATTAINMENT, per_limit=True)


def _workload(name: str, table: Fields, sources: Mapping[str, object]) -> MlperfWorkload:
    cited = tuple(
        table.check_source(key, sources)
        for key in (
            "samples_source",
            "limits_source",
            "lengths_source",
            "output_mean_source",
            "input_stats_source",
            "output_stats_source",
        )
        if table.has(key)
    )
    server = _slo(table, "server")
    if server is None:
        raise DataFileError(table.path, "a workload needs its Server limits", field=f"workloads.{name}")
    output_mean = table.number("output_mean_tokens") if table.has("output_mean_tokens") else None
    return MlperfWorkload(
        name=name,
        display_name=table.string("display_name"),
        model=table.string("model"),
        dataset=table.string("dataset"),
        num_samples=table.integer("num_samples", minimum=1),
        output_mean_tokens=output_mean,
        output_minimum_tokens=table.integer("output_minimum_tokens", default=1, minimum=1),
        output_maximum_tokens=table.optional_integer("output_maximum_tokens"),
        input_maximum_tokens=table.optional_integer("input_maximum_tokens"),
        input_assumption=table.string("input_assumption", default=""),
        input_mean_tokens=table.number("input_mean_tokens") if table.has("input_mean_tokens") else None,
        input_std_tokens=table.number("input_std_tokens") if table.has("input_std_tokens") else None,
        input_minimum_tokens=table.integer("input_minimum_tokens", default=1, minimum=1),
        output_std_tokens=table.number("output_std_tokens") if table.has("output_std_tokens") else None,
        server_slo=server,
        interactive_slo=_slo(table, "interactive"),
        aliases=table.strings("aliases") if table.has("aliases") else (),
        sources=cited,
        checkpoints=tuple(_checkpoint(item, sources) for item in table.array_of_tables("checkpoints")),
    )


def _checkpoint(table: Fields, sources: Mapping[str, object]) -> MlperfCheckpoint:
    """One ``[[workloads.<name>.checkpoints]]`` entry; its format and effective bits must make a
    valid deployment (checked by building one)."""
    checkpoint = MlperfCheckpoint(
        architecture=table.string("architecture"),
        rounds=table.strings("rounds"),
        precision=table.string("precision"),
        source=table.check_source("source", sources),
        effective_bits=table.number("effective_bits") if table.has("effective_bits") else None,
        accelerators=table.strings("accelerators") if table.has("accelerators") else (),
    )
    try:
        InferencePlan(precision=checkpoint.precision, effective_bits=checkpoint.effective_bits)
    except InvalidPlanError as error:
        raise DataFileError(table.path, str(error), field=table.prefix.rstrip(".")) from None
    return checkpoint


@functools.lru_cache(maxsize=2)
def load_mlperf_workloads(path: Path | str | None = None) -> dict[str, MlperfWorkload]:
    """Every MLPerf LLM workload of the shipped data file, by name."""
    file = path or _data_file()
    fields = Fields(str(file), load_toml(file))
    sources = dict(parse_sources(fields))
    return {name: _workload(name, table, sources) for name, table in fields.tables("workloads").items()}


def load_mlperf_workload(name: str) -> MlperfWorkload:
    """The MLPerf workload called ``name`` or one of its aliases (``llama 2 70b``, ``mixtral``)."""
    workloads = load_mlperf_workloads()
    key = name.strip().lower()
    for workload in workloads.values():
        if key == workload.name or key in workload.aliases:
            return workload
    raise UnknownNameError("MLPerf workload", name, list(workloads), hint="see sol/serve/data/mlperf.toml")


def find_mlperf_workload(text: str) -> MlperfWorkload | None:
    """The workload whose name or an alias ``text`` mentions (longest match first), if any."""
    lowered = text.lower()
    candidates = [
        (len(alias), workload)
        for workload in load_mlperf_workloads().values()
        for alias in (workload.name, *workload.aliases)
        if alias in lowered
    ]
    return max(candidates, key=lambda pair: pair[0])[1] if candidates else None


__all__ = [
    "MLPERF_SCENARIOS",
    "MlperfCheckpoint",
    "MlperfWorkload",
    "find_mlperf_workload",
    "load_mlperf_workload",
    "load_mlperf_workloads",
]
