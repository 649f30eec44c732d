"""A training row's batch and parallel degrees: the global batch (:func:`global_batch_of`), the
degrees its cells or flags state (:func:`stated_degrees`), the micro-batch (:func:`micro_batch_of`)
and the interleaving depth (:func:`interleaving_of`)."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Final

from lightspeed.catalog import Accelerator, Catalog
from lightspeed.sol.validation.hardware_text import one_named_system, row_gpus
from lightspeed.sol.validation.published import (
    BINARY_SUFFIXES,
    DECIMAL_SUFFIXES,
    DEGREE_FLAGS,
    PublishedRow,
    degree_cell,
    integer_cell,
    is_missing,
    size_cell,
)
from lightspeed.sol.validation.readings import RowError, with_magnitude_letters
from lightspeed.sol.validation.train_settings import FSDP_DEGREE
from lightspeed.workload import TransformerSpec


def global_batch_of(text: str, dp: int, seq_len: int) -> int | None:
    """Sequences a global-batch cell states: labelled (``gbs 512``), ``32/DP`` per replica,
    ``ramp to N``, sequences times their length (``2048 x 8192 tokens``), a token count
    (:func:`_sequences_of_tokens`), or a count of sequences (``2K`` is 2,048)."""
    return read_global_batch(text, dp, seq_len)[0]


def read_global_batch(text: str, dp: int, seq_len: int) -> tuple[int | None, str]:
    """(sequences, note) of a global-batch cell (:func:`global_batch_of`); the note says how a cell
    that counts tokens only (``1M tokens``) was cut into sequences, ``''`` otherwise.

    >>> read_global_batch("1M tokens", 8, 8192)
    (128, "global_batch '1M tokens' read as 128 sequences of 8,192 tokens (1,048,576 tokens)")
    >>> read_global_batch("128 sequences of 8192 = 1M tokens", 8, 8192)
    (128, '')
    """
    lowered = with_magnitude_letters(text.lower())  # ``2 million tokens``: 2m
    labelled = _LABELLED_GLOBAL_BATCH.search(lowered)
    if labelled:
        return int(labelled.group(1)), ""
    per_dp = re.search(r"(\d+)\s*(?:/|per)\s*dp\b", lowered)
    if per_dp:
        return int(per_dp.group(1)) * dp, ""
    ramp = _RAMP.search(lowered)
    if ramp:
        return int(ramp.group(1) or ramp.group(2)), ""
    first = _SEQUENCES_FIRST.search(lowered) or _COUNTED_SEQUENCES.search(lowered)
    if first and "token" in lowered:  # ``512 (1M tokens)``: the tokens say what the sequences hold
        return size_cell(first.group(1) + first.group(2)), ""
    if "token" not in lowered:
        return size_cell(text), ""
    product = _SEQUENCES_TIMES_LENGTH.search(lowered)
    if product:
        return int(product.group(1).replace(",", "")), ""
    sequences = _sequences_of_tokens(lowered, dp, seq_len)
    if not sequences:  # none, or fewer tokens than one sequence (refused by the caller)
        return sequences, ""
    return sequences, (
        f"global_batch '{text.strip()}' read as {sequences:,} sequences of {seq_len:,} tokens "
        f"({sequences * seq_len:,} tokens)"
    )


# a global batch written with its label: ``gbs 512``, ``GBS=512``, Megatron-LM's ``--global-batch-size
# 512``, ``global_batch_size: 512`` (not a token count: ``GBS 4M tokens``)
_LABELLED_GLOBAL_BATCH: Final = re.compile(
    r"\b(?:gbs|global[_-]batch[_-]size)\b[\s=:]*(\d+)(?![\d.,]|\s*(?:[kmb]\b|tok))"
)
# a batch ramped up to its final size: ``ramp to 15360``, ``ramped from 3072 to 15360``, ``3072 ->
# 15360 (ramp)``: the final size, the one the run spent its steps at
_RAMP: Final = re.compile(
    r"ramp(?:ed)?(?:[\s-]+up)?\s+(?:from\s+\d[\d,]*\s+)?to\s+(\d+)|\d+\s*(?:->|→|to)\s*(\d+)\s*\(?\s*(?:ramp|warm)"
)
# a count of sequences first, the tokens they hold after it: ``512 (1M tokens)``, ``1536 sequences
# (3.1M tokens)``, ``2048, 4M tokens``
_SEQUENCES_FIRST: Final = re.compile(
    r"^\s*(\d{1,3}(?:,\d{3})+|\d+)(?!\d|,\d)(k?)\s*(?:sequences?|seqs?|samples?)?\s*(?:\(|[,;]\s)"
)
# a count the cell calls sequences, whatever follows: ``128 sequences of 8192 = 1M tokens``
_COUNTED_SEQUENCES: Final = re.compile(r"^\s*(\d{1,3}(?:,\d{3})+|\d+)(?!\d|,\d)(k?)\s*(?:sequences?|seqs?)\b")
# ``2048 x 8192 tokens``, ``512 sequences x 8192 tokens``: sequences times their length
_SEQUENCES_TIMES_LENGTH: Final = re.compile(
    r"(\d[\d,]*)\s*(?:(?:sequences?|seqs?|samples?)\s*)?[x×*]\s*\d[\d,]*k?\s*(?:-?\s*token)"
)
_TOKEN_COUNT: Final = re.compile(r"(\d[\d,]*(?:\.\d+)?)\s*([km])?(?![a-z])")
# how far a token count may sit from a whole batch that splits over DP (a figure rounded to
# three digits, ``16.8M``, is 0.1% from 2,048 x 8,192)
_BATCH_ROUNDING: Final = 0.03


def _sequences_of_tokens(lowered: str, dp: int, seq_len: int) -> int | None:
    """Sequences a token count makes at ``seq_len``: ``16M`` read as 16 x 2^20 or 16 x 10^6,
    whichever gives a batch that splits over ``dp`` within rounding, the rounder in binary first
    (batches are powers of two or near them: ``16.8M`` at 8,192 is 2,048, not 2,152); an exact
    count (``16,777,216``) divided as it is."""
    match = _TOKEN_COUNT.search(lowered)
    if match is None:
        return None
    number = float(match.group(1).replace(",", ""))
    if not math.isfinite(number) or number <= 0:
        raise RowError(f"a global batch of {match.group(0)!r} tokens is not a positive number")
    suffix = match.group(2)
    readings = (number * BINARY_SUFFIXES[suffix], number * DECIMAL_SUFFIXES[suffix]) if suffix else (number,)
    batches = []
    for tokens in readings:
        sequences = tokens / seq_len
        nearest = max(dp, round(sequences / dp) * dp)
        distance = abs(sequences - nearest) / nearest
        if distance <= _BATCH_ROUNDING:
            batches.append((-_twos(nearest), distance, nearest))
    return min(batches)[2] if batches else round(readings[0] / seq_len)


def _twos(count: int) -> int:
    """How many times 2 divides ``count`` (``2048`` -> 11)."""
    return (count & -count).bit_length() - 1


@dataclass(frozen=True)
class Degrees:
    """The parallel degrees of a row; ``free``: those of TP, PP, CP and DP no cell states (searched)."""

    tp: int
    pp: int
    dp: int
    ep: int
    cp: int
    etp: int = 1
    free: tuple[str, ...] = ()


# The cells a parallel layout is written in; a row may write several degrees in one (``TP8 PP8 CP2``).
_PLAN_CELLS: Final = ("TP", "PP", "CP", "DP", "EP", "VPP", "sharding")


def _degree_pattern(name: str) -> re.Pattern[str]:
    """A degree with its label (``TP8``, ``tp=8``, ``VPP 8``, the ``pp16`` of ``tp4pp16cp2`` and of
    ``TP4xPP16``), its flag (:data:`~lightspeed.sol.validation.published.DEGREE_FLAGS`) or in
    words (``4-way TP``, ``8-way tensor parallelism``: :data:`_WAY_WORDS`)."""
    # (the experts' own TP, ``expert TP 4``, is not TP)
    label = rf"(?:(?<![a-z])|(?<=\dx))(?<!expert[\s_-]){name}\s*[=:]?\s*(\d+)(?![\d.])"
    flag = DEGREE_FLAGS.get(name)
    way = _WAY_WORDS.get(name)
    return re.compile(
        label
        + (rf"|(?:{flag})[\s=:\"']*(\d+)" if flag else "")
        + (rf"|(?<![\w.])(\d+)[\s-]*way\s+(?:{name}|{way}[\s-]*parallel\w*)\b" if way else ""),
        re.IGNORECASE,
    )


# a degree said as ``N-way`` its parallelism (``4-way TP``, ``2-way pipeline parallel``)
_WAY_WORDS: Final = {"tp": "tensor", "pp": "pipeline", "cp": "context", "dp": "data", "ep": "expert"}


_LABELLED_DEGREES: Final = {
    name: _degree_pattern(name) for name in ("tp", "pp", "cp", "dp", "ep", "etp", "vpp")
}
# degrees listed without their names, ``(8,8,2)`` or ``8, 8, 2`` (which is TP, which PP?); a count
# with thousands separators (``1,024``) is one number
_UNNAMED_DEGREES: Final = re.compile(r"\d+(?:\s*,\s*\d+)+")
_THOUSANDS: Final = re.compile(r"\d{1,3}(?:,\d{3})+")


def _labelled_degree(row: PublishedRow, name: str) -> int | None:
    """The degree ``name`` (``tp``, ``vpp`` ...) written with its label or flag in any parallel cell
    (``TP8 PP8 CP2`` in the TP cell, ``VPP=8`` or ``--expert-model-parallel-size 64`` in the sharding
    cell), else ``None``."""
    found = _labelled_degree_cell(row, name)
    return None if found is None else found[0]


def _labelled_degree_cell(row: PublishedRow, name: str) -> tuple[int, str] | None:
    """(degree, the parallel cell it is written in) of :func:`_labelled_degree`."""
    for column in _PLAN_CELLS:
        found = _LABELLED_DEGREES[name].search(row.text(column))
        if found is not None:
            return int(next(group for group in found.groups() if group is not None)), column
    return None


def borrowed_degrees_note(row: PublishedRow) -> str:
    """Where the degrees of TP, PP, CP, DP and EP whose own cells give no number were read from,
    when another parallel cell writes them (``TP8 PP1 DP8`` in the sharding cell), else ``''``.

    >>> row = PublishedRow("B2", "train", 2, {"sharding": "TP8 PP1 DP8"})
    >>> borrowed_degrees_note(row)
    "parallel degrees read from the sharding cell 'TP8 PP1 DP8': TP 8, PP 1, DP 8"
    """
    by_cell: dict[str, list[str]] = {}
    for name in ("tp", "pp", "cp", "dp", "ep"):
        own = row.text(name.upper())
        found = None if re.match(r"\s*\d", own) else _labelled_degree_cell(row, name)
        if found is not None and found[1] != name.upper():
            by_cell.setdefault(found[1], []).append(f"{name.upper()} {found[0]}")
    return "; ".join(
        f"parallel degrees read from the {cell} cell '{row.text(cell)}': {', '.join(degrees)}"
        for cell, degrees in by_cell.items()
    )


def _check_named_degrees(row: PublishedRow) -> None:
    """Refuse degrees listed without their names (:data:`_UNNAMED_DEGREES`): never one number."""
    for column in ("TP", "PP", "CP", "DP", "EP", "VPP"):
        text = row.text(column)
        for run in _UNNAMED_DEGREES.finditer(text):
            if not _THOUSANDS.fullmatch(run.group(0)):
                raise RowError(
                    f"{column} {text!r} lists degrees without their names; write each in its column "
                    "or with its label (TP8 PP8 CP2)"
                )


def stated_degrees(row: PublishedRow) -> dict[str, int | None]:
    """Each degree the row states, ``None`` where it states none: a cell's leading number or
    label (:func:`lightspeed.sol.validation.published.degree_cell`), else the label or flag written
    in another parallel cell (:func:`_labelled_degree`). A DP cell is its degree only when it starts
    with a number (``ZeRO-1`` names sharding)."""
    _check_named_degrees(row)
    stated: dict[str, int | None] = {}
    for name in ("tp", "pp", "cp", "ep"):
        cell = degree_cell(row, name.upper())
        stated[name] = cell if cell is not None else _labelled_degree(row, name)
    dp_text = row.text("DP")
    stated["dp"] = integer_cell(dp_text) if re.match(r"\s*\d", dp_text) else _labelled_degree(row, "dp")
    stated["etp"] = _labelled_degree(row, "etp")  # Megatron's expert tensor parallelism: "8 (ETP 4)"
    zero = next((name for name, degree in stated.items() if degree == 0), None)
    if zero is not None:  # ``TP0`` written in another cell: no layout, never an unstated degree
        raise RowError(
            f"{zero.upper()} is 0: a parallel degree is at least 1; write the degree the run used "
            "(1 where it did not split), or n/r where the source does not give it"
        )
    return stated


def degrees_of(row: PublishedRow, num_gpus: int) -> Degrees:
    """The row's degrees (:func:`stated_degrees`; 1 where unstated, DP what fills the GPUs)."""
    stated = stated_degrees(row)
    tp, pp, cp, ep, etp = (stated[name] or 1 for name in ("tp", "pp", "cp", "ep", "etp"))
    dp = stated["dp"]
    if dp is not None and tp * pp * cp * dp != num_gpus:
        dp = _dp_times_fsdp(row, tp * pp * cp, dp, num_gpus)
    if dp is not None and tp * pp * cp * dp != num_gpus:
        raise RowError(
            f"TP x PP x CP x DP = {tp} x {pp} x {cp} x {dp} = {tp * pp * cp * dp} GPUs, "
            f"not the {num_gpus} GPUs reported"
        )
    if dp is None:
        if num_gpus % (tp * pp * cp):
            raise RowError(f"{num_gpus} GPUs do not split into TP x PP x CP = {tp * pp * cp}")
        dp = num_gpus // (tp * pp * cp)
    free = tuple(name for name in ("tp", "pp", "cp", "dp") if stated[name] is None)
    return Degrees(tp, pp, dp, ep, cp, etp, free)


# a shard group written with its size beside copies of it in the DP cell (BloombergGPT's ``ZeRO
# stage 3 over 128 GPUs`` with ``4 model copies``: MiCS)
_SHARD_GROUP: Final = re.compile(r"(?:zero|fsdp|shard)[^;]*?\bover\s+(\d+)\s+(?:gpus|ranks|devices)\b")


def _dp_times_fsdp(row: PublishedRow, model_parallel: int, dp: int, num_gpus: int) -> int:
    """The data-parallel size of a row that writes FSDP as a mesh axis of its own beside DP
    (MaxText's and JAX's ``ici_fsdp_parallelism`` x ``ici_data_parallelism``; both replicate the
    batch, and an axis of -1 takes the devices the others leave): DP x FSDP when that fills the
    GPUs, else the DP cell's."""
    sharding = row.text("sharding").lower()
    found = FSDP_DEGREE.search(sharding) or _SHARD_GROUP.search(sharding)
    fsdp = int(found.group(1)) if found else 0
    if fsdp == -1 and num_gpus % (model_parallel * dp) == 0:  # MaxText's -1: every chip left over
        fsdp = num_gpus // (model_parallel * dp)
    return dp * fsdp if fsdp > 1 and model_parallel * dp * fsdp == num_gpus else dp


def _gpus_from_degrees(row: PublishedRow) -> tuple[int, str] | None:
    """(GPUs, note) of a row whose GPUs no cell counts but which states TP, PP, CP and DP: their
    product; ``None`` when one is unstated."""
    stated = stated_degrees(row)
    degrees = [stated[name] for name in ("tp", "pp", "cp", "dp")]
    if any(degree is None for degree in degrees):
        return None
    product = math.prod(degree or 1 for degree in degrees)
    written = " x ".join(str(degree) for degree in degrees)
    return product, f"GPUs not reported: TP x PP x CP x DP = {written} = {product}"


def gpus_of_row(catalog: Catalog, row: PublishedRow) -> tuple[int, str]:
    """(GPUs, note) of a training row: :func:`lightspeed.sol.validation.hardware_text.row_gpus`, or
    with no count in the GPUs and hardware cells the product of the degrees the row states, else one
    system the hardware cell names (:func:`one_named_system`) where the degrees it states fit in it."""
    try:
        return row_gpus(catalog, row)
    except RowError:
        if not is_missing(row.text("GPUs")):
            raise
        from_degrees = _gpus_from_degrees(row) or _one_system_holding_the_degrees(catalog, row)
        if from_degrees is None:
            raise
        return from_degrees


def _one_system_holding_the_degrees(catalog: Catalog, row: PublishedRow) -> tuple[int, str] | None:
    """:func:`one_named_system`, where the degrees the row states divide its GPUs (TP 8 PP 8 CP 2
    on a DGX H100 ran on more than one of them, how many the row does not say)."""
    system = one_named_system(catalog, row)
    degrees = stated_degrees(row)
    stated = math.prod(degrees[name] or 1 for name in ("tp", "pp", "cp", "dp"))
    return system if system is not None and system[0] % stated == 0 else None


SEARCHED_MICRO_BATCH_SIZES: Final = (1, 2, 4, 8, 16)
# Megatron-LM's ``--num-layers-per-virtual-pipeline-stage`` (layers per model chunk, not chunks)
_LAYERS_PER_VIRTUAL_STAGE: Final = re.compile(r"layers[\s_-]+per[\s_-]+virtual")
SEARCHED_VPPS: Final = (2, 3, 4, 6, 8)
SEARCHED_RECOMPUTES: Final = ("none", "selective", "partial", "full")
# a micro-batch written with its label, in the micro-batch or the global-batch cell: ``mbs 1``,
# ``MBS=1``, Megatron-LM's ``--micro-batch-size 1``, ``micro_batch_size: 1``, torchtitan's
# ``local_batch_size`` / ``Local batch size: 10`` (its JobConfig's training.local_batch_size, the
# batch each data-parallel rank runs a step)
_LABELLED_MICRO_BATCH: Final = re.compile(
    r"\b(?:mbs|micro[\s_-]*batch[\s_-]*size|local[\s_-]*batch[\s_-]*size)\b[\s=:]*(\d+)(?![\d.,])"
)
# a micro-batch written as its tokens (Fast-LLM's ``micro_batch_size`` counts tokens): ``8192 tokens``
_MICRO_BATCH_TOKENS: Final = re.compile(r"^\s*\d[\d,]*\s*k?\s*tokens?\b")


def micro_batch_of(row: PublishedRow, seq_len: int) -> int | None:
    """The micro-batch a row states (:func:`written_micro_batch`), refused outside 1 to
    :data:`MAX_MICRO_BATCH` sequences (it may set the global batch too: a huge one would pass)."""
    micro = written_micro_batch(row, seq_len)
    if micro is not None and not 1 <= micro <= MAX_MICRO_BATCH:
        raise RowError(
            f"micro_batch {row.text('micro_batch')!r} is {micro} sequences; "
            f"write a whole number from 1 to {MAX_MICRO_BATCH:,}"
        )
    return micro


MAX_MICRO_BATCH: Final = 65_536
# MaxText's ``per_device_batch_size``: sequences per JAX device, and a chip that software sees as
# several devices (TPU7x: two TensorCores without megacore, JAX's ``ChipVersion`` table) runs that
# many times as many
_PER_DEVICE_BATCH: Final = re.compile(r"per[\s_-]*device[\s_-]*batch[\s_-]*size")


def per_device_micro_batch(
    row: PublishedRow, micro: int | None, accelerator: Accelerator | None
) -> tuple[int | None, str]:
    """(micro-batch per GPU or chip, note): a micro-batch written per device (MaxText's
    ``per_device_batch_size``) times the devices one ``accelerator`` package shows
    (``num_logical_devices``), else ``micro`` as written."""
    devices = accelerator.num_logical_devices if accelerator is not None else 1
    written = any(
        _PER_DEVICE_BATCH.search(row.text(cell).lower()) for cell in ("micro_batch", "global_batch")
    )
    if micro is None or devices == 1 or not written:
        return micro, ""
    assert accelerator is not None
    note = (
        f"per_device_batch_size counts devices, and a {accelerator.display_name} shows {devices}: "
        f"{micro} x {devices} = {micro * devices} sequences a chip"
    )
    return micro * devices, note


def written_micro_batch(row: PublishedRow, seq_len: int) -> int | None:
    """The micro-batch a row writes: labelled (:data:`_LABELLED_MICRO_BATCH`) in its micro-batch
    or global-batch cell, else its tokens over the sequence length when the cell counts tokens
    (:data:`_MICRO_BATCH_TOKENS`, a whole number of sequences), else the micro-batch cell's number."""
    for column in ("micro_batch", "global_batch"):
        found = _LABELLED_MICRO_BATCH.search(row.text(column).lower())
        if found is not None:
            return int(found.group(1))
    cell = row.text("micro_batch")
    count = size_cell(cell) if _MICRO_BATCH_TOKENS.search(cell.lower()) else None  # 8k tokens: 8,192
    if count is not None:
        if count % seq_len:
            raise RowError(f"micro_batch {cell!r} is not a whole number of {seq_len}-token sequences")
        return count // seq_len
    return integer_cell(cell)


def interleaving_of(row: PublishedRow, model: TransformerSpec, pp: int) -> tuple[tuple[int, ...], str]:
    """(interleaving depths, schedule): the VPP cell's depth, not the schedule's name
    (``interleaved 1F1B (v=6)`` is 6), else a depth labelled in another parallel cell (``PP8 VPP8``,
    ``VPP=8``), else every depth searched when the row says interleaved, else, with pipeline
    stages and a depth not reported (``n/r``, an empty cell), every depth and none (the fastest
    that fits, as for a micro-batch left unsaid), else 1 (``n/a``, ``-``: not used)."""
    vpp_text = row.text("VPP").lower()
    schedule = "dualpipe" if "dualpipe" in vpp_text else "1f1b"
    if is_missing(vpp_text):
        labelled = _labelled_degree(row, "vpp")
        if labelled:
            return (labelled,), schedule
        if "interleav" in row.text("PP").lower():
            return SEARCHED_VPPS, schedule
        unreported = pp > 1 and not _NOT_USED.match(vpp_text) and not _PLAIN_SCHEDULE.search(vpp_text)
        return ((1, *SEARCHED_VPPS) if unreported else (1,)), schedule
    vpp_number = re.sub(r"\b1f1b\b", "", vpp_text)
    fixed_vpp = integer_cell(vpp_number) if "yes" not in vpp_text else None
    if fixed_vpp and _LAYERS_PER_VIRTUAL_STAGE.search(vpp_text):
        # Megatron's --num-layers-per-virtual-pipeline-stage N: a stage's whole layers in chunks of N
        fixed_vpp = max(1, model.num_layers // (pp * fixed_vpp))
    if fixed_vpp:
        return (fixed_vpp,), schedule
    interleaved = ("yes" in vpp_text or "interleav" in vpp_text) and not _NOT_INTERLEAVED.search(vpp_text)
    return (SEARCHED_VPPS if interleaved else (1,)), schedule


# a VPP cell saying the column does not apply to the row (``n/a``, a dash): no interleaving
_NOT_USED: Final = re.compile(r"\s*(?:n/a|[-\u2013\u2014])\s*$")
# a VPP cell naming a schedule that does not interleave (``n/r (PipeDream-Flush)``, ``GPipe``)
_PLAIN_SCHEDULE: Final = re.compile(r"pipedream|gpipe")
# interleaving said to be off: ``non-interleaved``, ``no interleaving``, ``not interleaved``
_NOT_INTERLEAVED: Final = re.compile(r"\bnon[\s-]*interleav|\bno(?:t)?\s+interleav")


# Metrics a run's global batch does not set: rates per GPU or over the job (a step time, the hours
# or time to a token budget scale with it).
_BATCH_FREE_METRICS: Final = frozenset(
    {"tflop_per_s_per_gpu", "mfu", "tokens_per_s", "tokens_per_s_per_gpu", "samples_per_s", "pflop_per_s"}
)


def unreported_global_batch(micro: int | None, degrees: Degrees, metric: str | None) -> tuple[int, str]:
    """(global batch, note) for a row that leaves it out: one micro-batch per data-parallel rank
    (no gradient accumulation) where that cannot change the figure much, i.e. a rate without
    pipeline parallelism (no bubble to fill); the gradient sync and the optimizer step are then
    paid on every micro-batch, the slowest reading of the rate. With the micro-batch unreported too,
    the largest one searched sets the batch and the smaller ones accumulate up to it."""
    if metric not in _BATCH_FREE_METRICS:
        raise RowError(f"global_batch is not reported and the row's {metric or 'figure'} scales with it")
    if degrees.pp > 1:
        raise RowError(
            f"global_batch is not reported; with pipeline parallelism (PP {degrees.pp}) the bubble "
            "depends on it: write it in the global_batch cell"
        )
    # an unstated TP has every split of the GPUs searched (rows.candidate_plans), each with its own
    # DP: the batch follows each split's
    per_split = "tp" in degrees.free
    searched = " and ".join(name.upper() for name in ("tp", "cp") if name in degrees.free)
    largest = max(SEARCHED_MICRO_BATCH_SIZES)
    if micro is None:
        # the micro-batches searched all divide the largest one's batch: the largest runs one per
        # DP rank, the others accumulate up to it
        batch = largest * degrees.dp
        taken = (
            f"the largest micro-batch searched, {largest}, x each split's DP ({searched} searched)"
            if per_split
            else f"{batch} (the largest micro-batch searched, {largest}, x DP {degrees.dp})"
        )
        return batch, (
            f"global batch and micro-batch not reported: the batch taken as {taken}; without "
            "pipeline parallelism the rate barely depends on it"
        )
    batch = micro * degrees.dp
    taken = (
        f"micro-batch {micro} x each split's DP ({searched} searched),"
        if per_split
        else f"{batch} (micro-batch {micro} x DP {degrees.dp},"
    )
    return batch, (
        f"global batch not reported: taken as {taken} no gradient accumulation; without pipeline "
        "parallelism the rate barely depends on it, and syncing gradients on every micro-batch is its "
        "slowest reading" + ("" if per_split else ")")
    )
