"""Read a published inference row's parallel layout and serving plan from its cells (``kind =
infer`` rows, read by :mod:`lightspeed.sol.validation.infer_rows`; the rules are documented in
``docs/inference.md``):

* **Parallelism** (:func:`stated_layout`): each degree from its own cell, else its label or flag
  in another layout cell (``TP8EP8``, ``tp8_ep8``, ``TP4PP2``, ``4x2 (TPxPP)``, ``--ep-size 8``,
  ``moe_expert_parallel_size=8``, ``--tensor-parallel-size 4 --pipeline-parallel-size 2``), else
  in the source, hardware or precision cell (said in the notes); a count of copies (``2 replicas
  of TP4``, ``8 x TP1 instances``) is replicas, never TP. No TP anywhere: tp=1, or the smallest TP
  that holds the model (:func:`~lightspeed.sol.validation.infer_load.fitting_split`), said in the
  notes. The GPUs left over are replicas; a DP degree or count of copies saying otherwise refuses
  the row, and fills the GPUs when no cell counts them (:func:`gpus_from_layout`). A row with none
  of them that says it ran ``a single instance`` (``one replica``) is one TP group over its GPUs
  (:func:`_one_instance`). ``DEP8`` / ``TEP8`` (TensorRT-LLM's and InferenceMAX's recipes) are
  attention DP 8 / TP 8 with EP 8; vLLM's ``--enable-expert-parallel`` is EP = TP x DP. Pools
  counted as ``1P1D`` / ``1 prefill + 1 decode`` are the plan's ``disaggregated``; disaggregation
  named without the counts is refused unless the figure is of one pool (:func:`_pools`).
* **Attention data parallelism** on an MoE row that names it (``attention DP``, ``ADP``,
  TensorRT-LLM's ``enable_attention_dp``, SGLang's ``--enable-dp-attention``) or whose EP spans
  several DP ranks' TP groups (vLLM's DP with expert parallelism): as many groups as the DP
  degree, of the TP's GPUs each where they fit, else of TP / DP (SGLang's ``--tp 8 --dp 8``); with
  no DP degree one-GPU groups, as many as the TP (as the EP when TP is 1)
  (:func:`_attention_groups`).
* **Batch cap**: a stated cap on sequences (``max_batch N [per rank]``, ``maximum batch size N``,
  ``Max Num Seqs N``, ``max_running_requests N``, in a load cell, the sharding cell or the
  source's command) is the plan's ``max_batch`` (:func:`stated_cap`), never a static batch.

The formats in the plan come from :mod:`lightspeed.sol.validation.infer_precision`, its speculative
decoding from :mod:`lightspeed.sol.validation.infer_speculation`.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Final, NamedTuple

from lightspeed.catalog import Cluster
from lightspeed.sol.infer.plan import InferencePlan, PoolShape, ServingLoad
from lightspeed.sol.validation import infer_precision
from lightspeed.sol.validation.infer_load import RowSimulation, fitting_split, mlperf_split
from lightspeed.sol.validation.infer_precision import RowPrecision
from lightspeed.sol.validation.published import (
    DEGREE_FLAGS,
    LABELLED_DEGREES,
    VALUE_AS_WRITTEN,
    PublishedRow,
    integer_cell,
    is_missing,
)
from lightspeed.sol.validation.readings import RowError
from lightspeed.workload import TransformerSpec

# a count as tables write it, with or without thousands separators (``Batch Size 1,750``)
# A whole count: never the first digits of a longer number (``1e400`` is no 1, ``8.5`` no 8).
INTEGER = r"(\d{1,3}(?:,\d{3})+|\d+)(?![\d.]|,\d|e[+-]?\d)"
# A cap on the sequences a server runs at once, as its options say it: ``max_batch 384 per rank``,
# ``maximum batch size 64`` (TensorRT-LLM's ``--max_batch_size``), ``Max Num Seqs 3200`` (vLLM's
# ``--max-num-seqs``), ``max_running_requests 4096`` (SGLang's ``--max-running-requests``).
_SEQUENCE_CAP = re.compile(
    r"max(?:imum)?[ _-]?(?:batch(?:[ _-]?size)?|num[ _-]?seqs|running[ _-]?requests)\s*[=:]?\s*"
    rf"{INTEGER}(?P<per_rank>\s*\(?\s*(?:per|/)\s*(?:attention[ -]?(?:dp\s+)?)?(?:rank|gpu|dp\s+rank)\b)?"
)
# TensorRT-LLM's own flag (``--max_batch_size``, trtllm-bench and trtllm-serve): each attention-DP
# rank schedules its own batch of that many (the DeepSeek-R1 blog's 'concurrency 3072' over eight
# ranks of ``--max_batch_size 384``)
_TRTLLM_CAP_FLAG = re.compile(r"max_batch_size")
_TRTLLM = re.compile(r"tensorrt[ _-]?llm|trt[ _-]?llm|trtllm")
# A cap's label with a value no whole number reads (``maximum batch size 1e400``, ``max_num_seqs=-1``,
# ``max batch nan``): refused, never dropped
_CAP_VALUE = re.compile(
    r"max(?:imum)?[ _-]?(?:batch(?:[ _-]?size)?|num[ _-]?seqs|running[ _-]?requests)\s*[=:]?\s*"
    + VALUE_AS_WRITTEN
)
_ATTENTION_DP = re.compile(r"attention[ _-]?dp|\badp\b|dp[ _-]attention")


# The cells a row writes its parallel layout in, several degrees to a cell allowed (``TP8 EP8``),
# and the cells that describe the run in prose (``vllm serve ... -tp 4`` in the source, ``H200,
# TP4`` in the hardware cell, ``fp8 TP4`` in the precision cell), where a degree is read only with
# its label or flag.
_LAYOUT_CELLS: Final = ("TP", "PP", "DP", "EP", "sharding")
_PROSE_CELLS: Final = ("source", "hardware", "precision")


def _degree_label(name: str) -> re.Pattern[str]:
    """``name`` (``tp``, ``pp``, ``ep``, ``dp``) labelling its degree: ``TP4``, ``tp=4``, ``TP 4``,
    ``TP: 4``, the ``pp2`` of ``tp4pp2`` and the ``ep8`` of ``tp8_ep8``; the serving tools' short
    flags (SGLang's ``--tp 4`` / ``--tp-size 4`` / ``--ep-size 8`` / ``--dp 8``, vLLM's ``-tp 4`` /
    ``-pp 2`` / ``-dp 8``, trtllm-serve's ``--tp_size 8`` / ``--ep_size 8``, TensorRT-LLM's
    ``moe_ep_size``), a JSON key (``"tp": 4``); or its spelled-out flag (``published.DEGREE_FLAGS``). Not
    the end of a longer word (``MTP 3``, ``ETP1``, ``steps 3``, ``DEP8``), nor TensorRT-LLM's
    ``moe_tp_size`` (the experts' TP), nor the first of a range or list (a sweep's ``TP 1/2/4/8``,
    a citation's pages ``pp 12-25``)."""
    experts_tp = r"(?<!moe_)" if name == "tp" else ""
    label = rf"(?<![a-z]){experts_tp}{name}(?:[_-]?size)?"
    number = r"(\d+)(?![\d.]|e[+-]?\d)(?!\s*[-–/,]\s*\d)"
    return re.compile(rf"(?:{label}|{DEGREE_FLAGS[name]})[\"']?\s*[=:]?\s*{number}", re.IGNORECASE)


_DEGREE_LABELS: Final = {name: _degree_label(name) for name in ("tp", "pp", "ep", "dp")}
# Two degrees written as a product with their names after or before it: ``4x2 (TPxPP)``, ``TPxPP
# 4x2``, ``TP/PP = 4/2``.
_TIMES = r"\s*[x×*/]\s*"
_NAMES = rf"(tp|pp|ep|dp){_TIMES}(tp|pp|ep|dp)"
_PAIR_AFTER = re.compile(rf"(\d+){_TIMES}(\d+)\s*\(?\s*{_NAMES}\b", re.IGNORECASE)
_PAIR_BEFORE = re.compile(rf"\b{_NAMES}\s*[=:]?\s*\(?\s*(\d+){_TIMES}(\d+)", re.IGNORECASE)
# A count of model copies before their layout: ``2 replicas of TP4``, ``8 x TP1 instances``, ``2x
# TP4``, ``2 replicas``.
_REPLICA_COUNT = re.compile(
    r"(?<![\w.])(\d+)\s*(?:[x×*]\s*(?=tp\s*[=:]?\s*\d)|(?:model\s+)?(?:replicas?|instances?|engines?|copies)\b)",
    re.IGNORECASE,
)
# The MoE recipes' shorthand of TensorRT-LLM's DeepSeek-R1 blogs and InferenceMAX: ``DEP8`` is
# attention data parallelism over 8 GPUs with the experts over the same 8 (``--tp 8 --ep 8
# --enable_attention_dp``: 8 attention groups of one GPU), ``TEP8`` tensor parallelism over 8 GPUs
# with the experts over them (``--tp 8 --ep 8``).
_SHORTHAND = re.compile(r"(?<![a-z])([dt])ep[\s_-]*(\d+)(?![\d.])", re.IGNORECASE)
# vLLM's ``--enable-expert-parallel`` (``enable_expert_parallel=True``, or its short flag ``-ep``: one
# dash, no value, unlike SGLang's ``--ep 8``): the experts spread over all the engine's GPUs, EP =
# TP x DP (docs.vllm.ai, serving/expert_parallel_deployment.md).
_VLLM_EXPERT_PARALLEL = re.compile(
    r"enable[\s_-]expert[\s_-]parallel(?!\w|\s*[=:]\s*false)|(?<![\w-])-ep\b(?!\s*[=:]?\s*\d)", re.IGNORECASE
)


class StatedLayout(NamedTuple):
    """The parallel layout a row writes, ``None`` where no cell states a degree: TP, PP, EP and DP
    (:func:`_stated_degree`), the copies a phrase counts (``2 replicas of TP4``), a recipe shorthand
    (``('dep', 8)``), whether vLLM's ``--enable-expert-parallel`` is set, and notes on degrees read in
    the prose cells."""

    tp: int | None = None
    pp: int | None = None
    ep: int | None = None
    dp: int | None = None
    replicas: int | None = None
    shorthand: tuple[str, int] | None = None
    vllm_expert_parallel: bool = False
    notes: tuple[str, ...] = ()

    @property
    def splits(self) -> bool:
        """Whether the row states how the model is split or copied (TP, EP, DP, replicas, a shorthand)."""
        stated = (self.tp, self.ep, self.dp, self.replicas, self.shorthand)
        return self.vllm_expert_parallel or any(value is not None for value in stated)


def _texts(row: PublishedRow, cells: tuple[str, ...]) -> list[tuple[str, str]]:
    """(cell, text) of each of ``cells`` the row fills."""
    return [(cell, row.text(cell)) for cell in cells if not is_missing(row.text(cell))]


def _first_match(row: PublishedRow, pattern: re.Pattern[str], cells: tuple[str, ...]) -> re.Match[str] | None:
    """The first match of ``pattern`` in ``cells``, in their order."""
    return next((match for _, text in _texts(row, cells) if (match := pattern.search(text))), None)


def _paired_degrees(row: PublishedRow) -> dict[str, int]:
    """The degrees the layout cells write as a product with their names (:data:`_PAIR_AFTER`)."""
    degrees: dict[str, int] = {}
    for _, text in _texts(row, _LAYOUT_CELLS):
        for match in _PAIR_AFTER.finditer(text):
            first, second, name_a, name_b = match.groups()
            degrees.update({name_a.lower(): int(first), name_b.lower(): int(second)})
        for match in _PAIR_BEFORE.finditer(text):
            name_a, name_b, first, second = match.groups()
            degrees.update({name_a.lower(): int(first), name_b.lower(): int(second)})
    return degrees


def _own_degree(text: str, name: str) -> int | None:
    """The degree a cell of its own states: its leading number (``8``, ``1 for attention (--tp 8
    ...)``), else its label or flag (``TP=8``), else its only number, not one another degree's
    label holds; counts of copies, products and shorthands set aside (``2 replicas of TP4`` is TP
    4)."""
    for phrase in (_REPLICA_COUNT, _SHORTHAND, _PAIR_AFTER, _PAIR_BEFORE):
        text = phrase.sub(" ", text)
    if re.match(r"\s*\d", text):
        return integer_cell(text)
    found = _DEGREE_LABELS[name].search(text)
    # a number another degree's label holds is not this one's (``yes (-ep, TP1 DP4 EP)`` is no EP 1)
    return int(found.group(1)) if found else integer_cell(LABELLED_DEGREES.sub(" ", text))


def _labelled_degree(row: PublishedRow, name: str, cells: tuple[str, ...]) -> tuple[int, str] | None:
    """(degree, the cell and words stating it) of ``name`` written with its label or flag in
    ``cells``; ``None`` where none does. Cells stating it twice differently refuse the row."""
    found: dict[int, str] = {}
    for cell, text in _texts(row, cells):
        for match in _DEGREE_LABELS[name].finditer(text):
            found.setdefault(int(match.group(1)), f"the {cell} cell's '{match.group(0).strip()}'")
    if len(found) > 1:
        said = " and ".join(found.values())
        raise RowError(
            f"{said} state different {name.upper()}s: write the one the figure ran in the {name.upper()} cell"
        )
    return next(iter(found.items()), None)


def _stated_degree(row: PublishedRow, name: str) -> tuple[int | None, str]:
    """(degree, note) of ``name`` as the row states it: a product naming it (``4x2 (TPxPP)``), its
    own cell (:func:`_own_degree`), its label or flag in another layout cell (``TP8 EP8`` in the TP
    cell, ``--ep-size 8`` in the sharding cell), else in a prose cell (said in the note); ``None``
    where no cell states it."""
    column = name.upper()
    paired = _paired_degrees(row).get(name)
    if paired is not None:
        return paired, ""
    if not is_missing(row.text(column)) and (own := _own_degree(row.text(column), name)) is not None:
        return own, ""
    labelled = _labelled_degree(row, name, tuple(cell for cell in _LAYOUT_CELLS if cell != column))
    if labelled is not None:
        return labelled[0], ""
    prose = _labelled_degree(row, name, _PROSE_CELLS)
    if prose is None:
        return None, ""
    return prose[0], f"{column} {prose[0]} from {prose[1]} (the {column} cell gives none)"


def stated_layout(row: PublishedRow) -> StatedLayout:
    """The parallel layout the row's cells state (:class:`StatedLayout`); a degree or count of 0
    refuses the row (no GPUs run it)."""
    degrees = {name: _stated_degree(row, name) for name in ("tp", "pp", "ep", "dp")}
    copies = _first_match(row, _REPLICA_COUNT, _LAYOUT_CELLS)
    shorthand = _first_match(row, _SHORTHAND, _LAYOUT_CELLS + _PROSE_CELLS)
    stated = {name.upper(): degree for name, (degree, _) in degrees.items()}
    stated["replicas"] = int(copies.group(1)) if copies else None
    if shorthand:
        stated[shorthand.group(1).upper() + "EP"] = int(shorthand.group(2))
    for name, degree in stated.items():
        if degree is not None and degree < 1:
            raise RowError(f"{name} {degree} runs on no GPUs: a parallel degree is a whole number >= 1")
    return StatedLayout(
        tp=degrees["tp"][0],
        pp=degrees["pp"][0],
        ep=degrees["ep"][0],
        dp=degrees["dp"][0],
        replicas=int(copies.group(1)) if copies else None,
        shorthand=(shorthand.group(1).lower() + "ep", int(shorthand.group(2))) if shorthand else None,
        vllm_expert_parallel=_first_match(row, _VLLM_EXPERT_PARALLEL, _LAYOUT_CELLS + _PROSE_CELLS)
        is not None,
        notes=tuple(note for _, note in degrees.values() if note),
    )


def _shorthand_layout(stated: StatedLayout) -> tuple[int, int, int, str]:
    """(attention TP, EP, attention groups, note) of a recipe shorthand (:data:`_SHORTHAND`); a
    degree stated beside it that says otherwise refuses the row."""
    assert stated.shorthand is not None
    kind, size = stated.shorthand
    dep = kind == "dep"
    consistent = {"tp": {1, size} if dep else {size}, "ep": {size}, "dp": {size} if dep else {1}}
    for name, values in consistent.items():
        value = getattr(stated, name)
        if value is not None and value not in values:
            raise RowError(
                f"{kind.upper()}{size} puts {'attention DP' if dep else 'TP'} {size} and EP {size} on {size} "
                f"GPUs, but the row states {name.upper()} {value}: write the degrees in their cells"
            )
    layout = f"{size} attention groups of one GPU (attention DP)" if dep else f"TP {size}"
    note = (
        f"{kind.upper()}{size}: {layout}, the experts over the {size} GPUs (EP {size}), as TensorRT-LLM's "
        "and InferenceMAX's recipes name it"
    )
    return (1, size, size, note) if dep else (size, size, 1, note)


def _vllm_expert_parallel(stated: StatedLayout, tp: int) -> tuple[int, str]:
    """(EP, note) of vLLM's ``--enable-expert-parallel``: TP x DP; an EP cell saying otherwise
    refuses the row."""
    dp = stated.dp or 1
    if stated.ep is not None and stated.ep != tp * dp:
        raise RowError(
            f"vLLM's --enable-expert-parallel spreads the experts over TP x DP = {tp} x {dp} = {tp * dp} "
            f"GPUs, not the EP {stated.ep} the row states"
        )
    return tp * dp, f"vLLM's --enable-expert-parallel: EP = TP x DP = {tp} x {dp} = {tp * dp}"


def _attention_groups(tp: int, ep: int, dp: int | None, stage_gpus: int) -> tuple[int, int, str]:
    """(attention groups, GPUs per group, how read) of an MoE row running attention data parallel
    with ``stage_gpus`` GPUs a stage: the DP degree when the row states one (``8 (attention DP)``,
    ``144 (MLA/shared expert DP)``), of the TP's GPUs each where TP x DP GPUs fit a stage (vLLM's
    ``-tp``, each DP rank's TP), else of TP / DP (SGLang's ``--tp 8 --dp 8 --enable-dp-attention``
    and TensorRT-LLM's ``tp_size`` with attention DP count all the groups' GPUs); with no DP degree
    the TP's GPUs as one-GPU groups (TensorRT-LLM's ``--tp 8 --enable_attention_dp``), or, with a
    TP of 1, one group per GPU of the EP group (SGLang's ``--dp-size`` equal to ``--ep-size``)."""
    if dp is not None and dp > 1:
        if tp * dp <= stage_gpus:
            return dp, tp, ""
        if tp % dp == 0:
            how = (
                f" (TP {tp} counts the GPUs of all {dp} groups, as SGLang's --tp with --dp and "
                "TensorRT-LLM's tp_size with attention DP do)"
            )
            return dp, tp // dp, how
        raise RowError(
            f"attention DP {dp} with TP {tp}: {tp * dp} GPUs a stage are more than the {stage_gpus} the row "
            f"has, and {dp} groups do not split TP {tp}; write the GPUs of one attention group in the TP cell"
        )
    if tp == 1 and ep > 1:
        return ep, 1, ""
    return tp, 1, ""


def _parallel_degrees(
    row: PublishedRow, model: TransformerSpec, num_gpus: int, stated: StatedLayout, tp_given: int | None
) -> tuple[int, int, int, int, list[str]]:
    """(TP, PP, EP, attention groups, notes) of the row's deployment: its stated degrees, 1 where
    unstated (said for TP), a recipe shorthand (:func:`_shorthand_layout`), vLLM's expert parallelism
    (:func:`_vllm_expert_parallel`), and on an MoE attention data parallelism where the row names it
    or its EP spans several DP ranks' TP groups (:func:`_attention_groups`)."""
    pp = stated.pp or 1
    tp = tp_given or stated.tp or 1
    notes = list(stated.notes)
    if tp_given is None and stated.tp is None and stated.shorthand is None:
        notes.append("no TP stated in any cell: tp=1")
    if model.moe is None and stated.shorthand is not None:
        kind = stated.shorthand[0].upper()
        raise RowError(f"{kind} names an expert-parallel recipe; {model.name} has no experts")
    if stated.shorthand is not None:
        tp, ep, groups, note = _shorthand_layout(stated)
        return tp, pp, ep, groups, [*notes, note]
    ep = stated.ep or 1
    if model.moe is None:
        return tp, pp, ep, 1, notes
    if stated.vllm_expert_parallel:
        ep, note = _vllm_expert_parallel(stated, tp)
        notes.append(note)
    named = _ATTENTION_DP.search(row.described()) is not None
    if not named and not (stated.dp is not None and stated.dp > 1 and ep > tp):
        return tp, pp, ep, 1, notes
    if not named:
        notes.append(
            f"EP {ep} is wider than TP {tp}: the DP {stated.dp} ranks share the experts, so their attention "
            "is data parallel (vLLM's DP with expert parallelism, SGLang's DP attention)"
        )
    groups, tp, how = _attention_groups(tp, ep, stated.dp, num_gpus // pp)
    notes.append(f"attention data parallelism: {groups} attention groups of {tp} GPU(s) per stage{how}")
    return tp, pp, ep, groups, notes


def _replicas(num_gpus: int, tp: int, pp: int, groups: int, stated: StatedLayout) -> int:
    """The replicas of ``tp x groups x pp`` GPUs the row's ``num_gpus`` hold; a count of copies or a
    DP degree (one not spent on attention groups) that says otherwise refuses the row."""
    per_replica = tp * groups * pp
    if num_gpus % per_replica:
        split = f"TP x PP = {tp * pp}" if groups == 1 else f"TP x attention groups x PP = {per_replica}"
        raise RowError(f"{num_gpus} GPUs do not split into {split}")
    copies = stated.replicas or (stated.dp if groups == 1 else None)
    if copies is not None and copies * per_replica != num_gpus:
        raise RowError(
            f"the row states {copies} replicas (DP) of {per_replica} GPUs (TP {tp}, PP {pp}): "
            f"{copies * per_replica} GPUs, not the {num_gpus} it reports"
        )
    return num_gpus // per_replica


# Prefill/decode disaggregation with its pools counted, as Dynamo, SGLang and vLLM write it: ``1P1D``,
# ``2P3D``, ``2P:7D`` (x prefill instances, y decode instances), ``1 prefill + 1 decode instance``,
# ``1 prefill worker TP4, 1 decode worker TP4``.
_POOL_COUNTS = re.compile(
    r"(?<![\w.])(\d+)\s*p\s*[:/+,-]?\s*(\d+)\s*d\b"
    r"|(?<![\w.])(\d+)\s*(?:x\s*)?prefill\b[^;|]{0,40}?(?<![\w.])(\d+)\s*(?:x\s*)?decode\b",
    re.IGNORECASE,
)
# Words naming disaggregated serving, with or without the pools' counts (``disaggregated``, ``PD
# disaggregation``, ``xPyD``).
_DISAGGREGATION = re.compile(r"disaggregat\w*|\bxpyd\b", re.IGNORECASE)


def _stated_pools(row: PublishedRow) -> tuple[int, int, str, str] | None:
    """(prefill replicas, decode replicas, the cell stating them, its text) the layout cells, else
    the prose cells, count (:data:`_POOL_COUNTS`); ``None`` where none does."""
    for cell, text in _texts(row, _LAYOUT_CELLS + _PROSE_CELLS):
        match = _POOL_COUNTS.search(text)
        if match is not None:
            prefill, decode = (int(group) for group in match.groups() if group is not None)
            return prefill, decode, cell, text
    return None


def _pools(row: PublishedRow, replicas: int, tp: int, one_pool: bool) -> tuple[tuple[int, int] | None, str]:
    """(the plan's ``disaggregated``, note): the prefill and decode replicas the row counts, each of
    the row's replica shape; ``None`` where the row counts none or its figure is of one pool. A row
    naming disaggregation without the counts, or counts that are not its replicas, or pools of
    different TPs (which the engine models, ``--prefill-tp``, but this reader does not read), is
    refused."""
    stated = _stated_pools(row)
    if stated is None:
        named = _first_match(row, _DISAGGREGATION, _LAYOUT_CELLS)
        if named is not None and not one_pool:
            raise RowError(
                f"the row names disaggregated serving ('{named.group(0)}') without its pools: write how many "
                "prefill and decode replicas ran (e.g. '1P1D'), or the pool the figure is of"
            )
        return None, ""
    prefill, decode, cell, text = stated
    if one_pool:
        return None, f"{prefill}P{decode}D deployment: the figure is of one pool, predicted on its own"
    pool_tps = {int(match.group(1)) for match in _DEGREE_LABELS["tp"].finditer(text)}
    if pool_tps - {tp}:
        raise RowError(
            f"the pools run TP {', '.join(str(value) for value in sorted(pool_tps | {tp}))}; the row reader "
            "reads one replica shape for both pools (predict it with plan infer --disaggregated P:D "
            "--prefill-tp T ...)"
        )
    if prefill + decode != replicas:
        raise RowError(
            f"{prefill}P{decode}D is {prefill + decode} replicas, but the row's GPUs hold {replicas} of its "
            "replica shape: give each pool's GPUs in the TP/PP cells"
        )
    return (prefill, decode), f"disaggregated: {prefill} prefill, {decode} decode replicas (the {cell} cell)"


def gpus_from_layout(row: PublishedRow, stated: StatedLayout) -> tuple[int, str] | None:
    """(GPUs, note) of a row whose GPUs no cell counts but which states its TP and its copies (a DP
    degree, ``2 replicas of TP4``, ``1P1D``): TP x PP x copies, PP 1 unless stated; ``None`` where
    one is unstated, or where its DP may count attention groups (attention data parallelism, a
    recipe shorthand, expert parallelism wider than TP), whose size depends on the server."""
    pools = _stated_pools(row)
    copies = stated.replicas or stated.dp or (pools[0] + pools[1] if pools else None)
    if stated.tp is None or copies is None:
        return None
    wide = (stated.ep or 1) > stated.tp or stated.vllm_expert_parallel or stated.shorthand is not None
    if wide or _ATTENTION_DP.search(row.described()):
        return None
    pp = stated.pp or 1
    gpus = stated.tp * pp * copies
    unstated = "" if stated.pp else " (no PP stated: 1)"
    return gpus, f"GPUs not reported: TP x PP x replicas = {stated.tp} x {pp} x {copies} = {gpus}{unstated}"


# Each pool counted with its own degrees, as vLLM's and Dynamo's P/D posts write them: a count and
# the pool's degrees in parentheses (``4 Prefill (TP1 DP4 EP, 4 GPUs each) + 1 Decode (TP1 DP8 EP)``)
# or before the pool's name (``8 TP=1 prefills ... + 2 TP=4 decoders``).
_POOL_WITH_DEGREES: Final = {
    phase: re.compile(
        rf"(?<![\w.])(\d+)\s*(?:x\s*)?{phase}\w*\s*\(([^)]*)\)"
        rf"|(?<![\w.])(\d+)\s*(?:x\s*)?(tp\s*[=:]?\s*\d+)\s+{phase}\w*",
        re.IGNORECASE,
    )
    for phase in ("prefill", "decode")
}


class _PoolDegrees(NamedTuple):
    """One pool as a row writes it: its replicas and each replica's TP, PP, attention groups, EP."""

    replicas: int
    tp: int
    pp: int
    groups: int
    ep: int


def _pool_degrees(row: PublishedRow, model: TransformerSpec) -> tuple[_PoolDegrees, _PoolDegrees] | None:
    """(prefill, decode) pools each written with its own degrees (:data:`_POOL_WITH_DEGREES`) in a
    layout cell; ``None`` where no cell writes both. A pool's DP is attention groups, its experts
    over TP x DP where it names expert parallelism without a degree (vLLM's ``-ep``), on an MoE
    only; a dense pool's DP is refused (replicas inside a pool are more pools)."""
    for _, text in _texts(row, _LAYOUT_CELLS):
        found = [_POOL_WITH_DEGREES[phase].search(text) for phase in ("prefill", "decode")]
        if found[0] is None or found[1] is None:
            continue
        pools = []
        for match in found:
            assert match is not None
            count, words = (
                (match.group(1), match.group(2)) if match.group(1) else (match.group(3), match.group(4))
            )
            degrees = {
                name: (int(hit.group(1)) if (hit := _DEGREE_LABELS[name].search(words)) else None)
                for name in ("tp", "pp", "ep", "dp")
            }
            tp, pp, groups = degrees["tp"] or 1, degrees["pp"] or 1, degrees["dp"] or 1
            if groups > 1 and model.moe is None:
                raise RowError(
                    f"a pool of DP {groups} on dense {model.name} ('{match.group(0)}'): write its replicas "
                    "as the pool's count"
                )
            named_ep = re.search(r"\bep\b|expert", words, re.IGNORECASE) is not None
            ep = degrees["ep"] or (tp * groups if named_ep and model.moe is not None else 1)
            pools.append(_PoolDegrees(int(count), tp, pp, groups, ep))
        return pools[0], pools[1]
    return None


def _pooled_deployment(
    row: PublishedRow,
    model: TransformerSpec,
    num_gpus: int,
    precision: RowPrecision,
    pools: tuple[_PoolDegrees, _PoolDegrees],
) -> tuple[InferencePlan, list[str]]:
    """The plan of a row whose prefill and decode pools each have their own degrees; their GPUs
    must be the row's."""
    prefill, decode = pools
    prefill_gpus = prefill.tp * prefill.pp * prefill.groups
    decode_gpus = decode.tp * decode.pp * decode.groups
    used = prefill.replicas * prefill_gpus + decode.replicas * decode_gpus
    if used != num_gpus:
        raise RowError(
            f"{prefill.replicas} prefill replicas of {prefill_gpus} GPUs and {decode.replicas} decode "
            f"replicas of {decode_gpus} use {used} GPUs, not the {num_gpus} the row reports"
        )
    shape = PoolShape(tp=prefill.tp, pp=prefill.pp, ep=prefill.ep, dp_attention=prefill.groups)
    decode_shape = PoolShape(tp=decode.tp, pp=decode.pp, ep=decode.ep, dp_attention=decode.groups)
    kv_precision = infer_precision.kv_precision(row)
    plan = InferencePlan(
        tp=decode.tp,
        pp=decode.pp,
        ep=decode.ep,
        dp_attention=decode.groups,
        disaggregated=(prefill.replicas, decode.replicas),
        prefill_shape=None if shape == decode_shape else shape,
        precision=precision.format,
        activation_precision=precision.activation,
        effective_bits=precision.effective_bits,
        kv_precision=kv_precision,
        kv_replication=model.attention.kind != "mla"
        and max(decode.tp, prefill.tp) > model.attention.num_kv_heads,
    )
    note = (
        f"disaggregated: {prefill.replicas} prefill replicas ({shape.describe()}) and "
        f"{decode.replicas} decode replicas ({decode_shape.describe()}), each pool's degrees as the "
        "row writes them"
    )
    notes = [precision[1], note]
    if kv_precision is not None:
        notes.append(f"KV cache {kv_precision} (the row names it)")
    return plan, notes


def deployment(
    row: PublishedRow,
    model: TransformerSpec,
    num_gpus: int,
    precision: RowPrecision,
    stated: StatedLayout,
    *,
    tp: int | None = None,
    one_pool: bool = False,
) -> tuple[InferencePlan, list[str]]:
    """The deployment a row describes (degrees, attention data parallelism, pools, formats) and
    notes; ``precision`` is the row's format, ``tp`` replaces a TP no cell states, ``one_pool`` says
    the figure is of a prefill or decode pool on its own."""
    pooled = None if one_pool else _pool_degrees(row, model)
    if pooled is not None:
        return _pooled_deployment(row, model, num_gpus, precision, pooled)
    _check_expert_parallel_degree(row, model, stated)
    tp, pp, ep, groups, layout_notes = _parallel_degrees(row, model, num_gpus, stated, tp)
    if ep > 1 and tp * groups == 1:  # one-GPU replicas: the engine would say "try ep=1"
        raise RowError(
            f"EP {ep} spreads the experts over more GPUs than a replica's TP x attention groups "
            f"({tp} x {groups}): the row states no attention DP; write DP {ep} (attention DP), TP {ep}, "
            f"or DEP{ep}/TEP{ep}"
        )
    replicas = _replicas(num_gpus, tp, pp, groups, stated)
    pools, pools_note = _pools(row, replicas, tp, one_pool)
    kv_precision = infer_precision.kv_precision(row)
    notes = [precision[1], *layout_notes, *([pools_note] if pools_note else [])]
    if kv_precision is not None:
        notes.append(f"KV cache {kv_precision} (the row names it)")
    plan = InferencePlan(
        tp=tp,
        pp=pp,
        ep=ep,
        dp_attention=groups,
        replicas=1 if pools else replicas,
        disaggregated=pools,
        precision=precision.format,
        activation_precision=precision.activation,
        effective_bits=precision.effective_bits,
        kv_precision=kv_precision,
        kv_replication=model.attention.kind != "mla" and tp > model.attention.num_kv_heads,
    )
    return plan, notes


# Words saying a deployment spreads its experts over GPUs (``Large-Scale Expert Parallelism``,
# ``wide EP``), read in the cells that describe the run (not its source's title).
_EXPERT_PARALLEL = re.compile(r"\bexpert[ -]parallel(?:ism)?\b|\b(?:wide|large[ -]scale)[ -]ep\b")
_DEPLOYMENT_CELLS: Final = ("sharding", "TP", "PP", "DP", "global_batch", "seq", "hardware")


def _check_expert_parallel_degree(row: PublishedRow, model: TransformerSpec, stated: StatedLayout) -> None:
    """Refuse an MoE row that says its experts are spread over GPUs without saying over how many
    (no EP degree, recipe shorthand or vLLM's ``--enable-expert-parallel``, whose EP is TP x DP):
    any EP the reader chose would predict another deployment than the one measured."""
    if model.moe is None or stated.ep is not None or stated.shorthand or stated.vllm_expert_parallel:
        return
    cells = " | ".join(row.text(cell) for cell in _DEPLOYMENT_CELLS).lower()
    named = _EXPERT_PARALLEL.search(cells)
    if named:
        raise RowError(
            f"the row names expert parallelism ('{named.group(0)}') but no EP degree: fill the EP cell "
            "(and DP for attention data parallelism, GPUs for the pool the figure is of)"
        )


class UnstatedSplit(NamedTuple):
    """What :func:`unstated_tp` chose for a row that states no TP: TP and PP (``None`` for what
    the stated degrees decide), DEP's size where an MLPerf row runs attention data parallelism
    with the experts over the group (``None`` otherwise), and why."""

    tp: int | None = None
    pp: int | None = None
    dep: int | None = None
    note: str = ""


def unstated_tp(
    row: PublishedRow,
    stated: StatedLayout,
    *,
    model: TransformerSpec,
    cluster: Cluster,
    precision: RowPrecision,
    load: ServingLoad,
    simulation: RowSimulation | None,
    num_gpus: int,
    static_batch: float | None = None,
) -> UnstatedSplit:
    """The split of a row whose cells state no TP: an MLPerf row's most productive layout
    (:func:`mlperf_split`; DEP only where no cell states a degree), a row saying it ran one
    instance (:func:`_one_instance`), else, where no cell splits or copies the model, the smallest
    TP that holds it, pipelined across scale-up domains where none holds it alone
    (:func:`fitting_split`); empty where the stated degrees decide."""
    if stated.tp is not None:
        return UnstatedSplit()
    if simulation is not None and simulation.mlperf:
        layout = mlperf_split(
            model,
            cluster,
            precision.format,
            simulation.workload,
            num_gpus=num_gpus,
            effective_bits=precision.effective_bits,
            expert_layouts=not stated.splits,
        )
        if layout.groups > 1:
            return UnstatedSplit(dep=layout.groups, note=layout.note)
        return UnstatedSplit(tp=layout.tp, note=layout.note)
    if not stated.splits and stated.pp is None and _ONE_INSTANCE.search(row.described()):
        one_tp, note = _one_instance(cluster, num_gpus)
        return UnstatedSplit(tp=one_tp, note=note)
    if not stated.splits:
        across = "tp" if _SGLANG.search(row.described()) else "pp"
        split = fitting_split(
            model,
            cluster,
            precision.format,
            load,
            num_gpus=num_gpus,
            across=across,
            static_batch=static_batch,
        )
        if split is None:
            # no split holds it: a deployment at TP 1 would only fail later, naming a TP the row never ran
            raise RowError(
                f"no split of the row's {num_gpus} GPUs holds {model.name} in {precision.format} with a "
                "request of the row's lengths; state the precision the run served (e.g. fp8) or the "
                "GPUs and parallel degrees it used"
            )
        tp, pp, note = split
        return UnstatedSplit(tp=tp, pp=pp if stated.pp is None and pp > 1 else None, note=note)
    return UnstatedSplit()


# The cells a server's cap is written in: the load cells, and a server's options in the sharding
# cell or the source's command line (``trtllm-bench throughput --max_batch_size 64``).
_CAP_CELLS: Final = ("seq", "global_batch", "micro_batch", "sharding", "source")


def stated_cap(row: PublishedRow, plan: InferencePlan) -> tuple[InferencePlan, str]:
    """``plan`` with the cap on sequences its cells state (:data:`_SEQUENCE_CAP`, :data:`_CAP_CELLS`) as its
    ``max_batch`` per replica (a cap ``per rank`` counts once per attention rank), and a note;
    ``plan`` unchanged where the row states none."""
    text = " | ".join(row.text(cell) for cell in _CAP_CELLS).lower()
    cap = _SEQUENCE_CAP.search(text)
    if cap is None:
        unread = _CAP_VALUE.search(text)
        if unread is not None:
            raise RowError(f"the cap '{unread.group(0)}' is not a whole number of sequences")
        return plan, ""
    per_rank = int(cap.group(1).replace(",", ""))
    if per_rank < 1:
        raise RowError(f"the cap '{cap.group(0).strip()}' allows no sequence: a cap is a whole number >= 1")
    each_rank = bool(cap.group("per_rank")) or bool(
        _TRTLLM_CAP_FLAG.search(cap.group(0)) and _TRTLLM.search(row.described())
    )
    ranks = plan.dp_attention if each_rank else 1
    where = f" x {ranks} attention ranks" if ranks > 1 else ""
    note = f"server cap of {per_rank} sequences{' per rank' if each_rank else ''}{where}"
    return replace(plan, max_batch=per_rank * ranks), f"{note}: at most {per_rank * ranks} per replica"


# SGLang spans nodes with tensor parallelism (its DeepSeek-V3 guide: ``--tp 16 --nnodes 2`` on two
# 8-GPU H100/H800 nodes); vLLM's distributed-serving guide sets TP to a node's GPUs and PP to the
# node count, as TensorRT-LLM's multi-node examples pipeline across nodes
_SGLANG = re.compile(r"\bsglang\b")


# One server instance over all the row's GPUs (``a single instance on all eight GPUs``, ``one
# replica``): the GPUs are one tensor-parallel group, not replicas.
_ONE_INSTANCE = re.compile(r"\b(?:single|one)\s+(?:model\s+)?(?:instance|replica|engine)\b")


def _one_instance(cluster: Cluster, num_gpus: int) -> tuple[int | None, str]:
    """(TP, note) of a row running one instance over its ``num_gpus``: all of them in one TP group
    when the scale-up domain holds them, else ``(None, '')`` (the row's own cells decide)."""
    if num_gpus <= 1 or num_gpus > cluster.system.scale_up_domain_size:
        return None, ""
    return num_gpus, f"one instance over all {num_gpus} GPUs, as the row says: tp={num_gpus}, no replicas"


__all__ = [
    "INTEGER",
    "StatedLayout",
    "UnstatedSplit",
    "deployment",
    "gpus_from_layout",
    "stated_cap",
    "stated_layout",
    "unstated_tp",
]
