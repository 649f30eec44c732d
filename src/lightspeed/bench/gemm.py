"""GEMM throughput: a shape sweep per dtype, and a model's own GEMM shapes.

Method (MAMF finder, REFERENCE.md section 5): first the device is warmed on the
sweep's first shape for a time budget (lazy initialisation, BLAS heuristics,
thread pools and clocks: MAMF warms 30 s), untimed and never a result; then per
shape, ``torch.mm`` on ``randn`` inputs into a preallocated output (``out=``, no
temporaries), warm-up calls, then timed repetitions with L2 flushed before each
on a GPU; FLOP = 2 m n k; the headline is the median repetition, with
min/median/max kept. Every shape is checked against a float64 reference on a
slice of rows.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from types import ModuleType
from typing import Any, Final

from lightspeed.bench.results import BenchResult, make_result
from lightspeed.bench.runtime import (
    BenchDevice,
    ProgressCallback,
    Timer,
    import_torch,
    load_average_1min,
    plan_repeats,
    require_memory,
    time_once,
    torch_dtype,
    with_load_note,
)
from lightspeed.bench.sol import DeviceSol
from lightspeed.errors import UnsupportedError, UserInputError, first_line
from lightspeed.records import Record
from lightspeed.sol.core.shapes import Linear, layer_shapes
from lightspeed.sol.infer.per_gpu import inference_local_dims
from lightspeed.workload import TransformerSpec

GEMM_DTYPES: Final = ("fp64", "fp32", "tf32", "bf16", "fp16", "fp8")
# Relative Frobenius error allowed against the float64 reference (input rounding
# dominates: bf16 keeps 8 bits of mantissa, fp8 e4m3 three).
_TOLERANCE: Final = {"fp64": 1e-10, "fp32": 1e-4, "tf32": 5e-3, "bf16": 2e-2, "fp16": 5e-3, "fp8": 1.5e-1}
_CHECK_ROWS: Final = 64


@dataclass(frozen=True)
class GemmShape(Record):
    """``(m x k) @ (k x n)``, with a label saying where the shape comes from."""

    m: int
    n: int
    k: int
    label: str = ""

    @property
    def flop(self) -> float:
        """2 m n k (one multiply and one add per term)."""
        return 2.0 * self.m * self.n * self.k

    @property
    def text(self) -> str:
        """``4096x4096x4096`` (m x n x k)."""
        return f"{self.m}x{self.n}x{self.k}"


def sweep_shapes(*, quick: bool, gpu: bool) -> list[GemmShape]:
    """Square and rectangular shapes from launch-bound to compute-bound sizes."""
    squares: tuple[int, ...]
    extra: tuple[tuple[int, int, int], ...]
    if gpu:
        squares = (2048, 4096, 8192) if quick else (1024, 2048, 4096, 6144, 8192, 12288, 16384)
        extra = () if quick else ((16384, 8192, 1280), (8192, 16384, 4096), (4096, 4096, 16384))
    else:
        squares = (256, 512, 1024, 2048) if quick else (256, 512, 1024, 1536, 2048, 3072, 4096)
        extra = () if quick else ((4096, 1024, 4096), (1024, 4096, 4096))
    shapes = [GemmShape(m=size, n=size, k=size, label="square") for size in squares]
    shapes += [GemmShape(m=m, n=n, k=k, label="rectangular") for m, n, k in extra]
    return shapes


def model_shapes(model: TransformerSpec, *, tp: int = 1, num_tokens: int = 4096) -> list[GemmShape]:
    """The GEMMs of the model's layers and its LM head, per tensor-parallel rank.

    The linear layers are the engines' own (:func:`lightspeed.sol.core.shapes.layer_shapes`):
    attention (MLA's query and key/value down-projections, whole on every rank as Megatron-Core
    and vLLM keep them; a sparse-attention indexer's projections; a gated attention's doubled
    query), a hybrid's recurrent mixer, the dense
    MLP where the model has dense MLP layers, and an MoE layer's router, routed experts and
    shared experts. ``num_tokens`` rows (micro-batch x sequence) go through every GEMM but the
    routed experts', which get ``ceil(num_tokens x top_k / num_routed_experts)`` rows each: the
    rows one expert receives when routing is even (a real router is uneven: the busiest expert
    gets more). Column-parallel layers split their outputs by ``tp``, row-parallel layers their
    inputs (Megatron); experts split their inner size by ``tp`` (expert tensor parallelism equal
    to ``tp``, no expert parallelism), as the inference engine splits them.
    """
    if tp < 1:
        raise UserInputError(f"tensor parallel size must be >= 1 (got {tp})")
    result: list[GemmShape] = []
    for gemm in _model_gemms(model, num_tokens):
        n_rank, k_rank = _rank_dims(model, gemm, tp)
        label = f"{model.name} {gemm.label} tp={tp}{gemm.note}"
        result.append(GemmShape(m=gemm.rows, n=n_rank, k=k_rank, label=label))
    return result


@dataclass(frozen=True)
class _ModelGemm:
    """One linear layer of a model as a GEMM: its rows, its label and a note on the rows."""

    linear: Linear
    label: str
    rows: int
    note: str = ""


# the engines' linear names as the GEMM labels say them
_LABELS: Final = {
    "out": "attention out",
    "up": "mlp up",
    "down": "mlp down",
    "shared_up": "shared expert up",
    "shared_down": "shared expert down",
    "expert_up": "routed expert up",
    "expert_down": "routed expert down",
    "lm_head": "lm head",
}


def _model_gemms(model: TransformerSpec, num_tokens: int) -> list[_ModelGemm]:
    """Every GEMM kind the model runs, each once, in the order a layer runs them."""
    shapes = layer_shapes(model)

    def gemms(linears: Sequence[Linear], rows: int = num_tokens, note: str = "") -> list[_ModelGemm]:
        return [_ModelGemm(linear, _LABELS.get(linear.name, linear.name.replace("_", " ")), rows, note)
                for linear in linears]  # fmt: skip

    found = gemms(shapes.attention if model.num_attention_layers else ())
    if model.recurrent is not None:
        found += [replace(gemm, label=f"{model.recurrent.label} {gemm.linear.name}")
                  for gemm in gemms(shapes.recurrent)]  # fmt: skip
    found += gemms(shapes.mlp if model.num_mlp_layers else ())
    if model.moe is not None and model.num_moe_layers:
        moe = model.moe
        per_expert = -(-num_tokens * moe.top_k // moe.num_routed_experts)  # ceil
        routing = (
            f" (even routing: {num_tokens:,} x top-{moe.top_k} / {moe.num_routed_experts} experts = "
            f"{per_expert:,} row{'s' if per_expert != 1 else ''} each)"
        )
        found += gemms((*shapes.router, *shapes.latent))
        found += gemms(shapes.experts, per_expert, routing)
        found += gemms(shapes.shared_experts)
    return found + gemms((Linear("lm_head", model.hidden_size, model.vocab_size, "column"),))


def _rank_dims(model: TransformerSpec, gemm: _ModelGemm, tp: int) -> tuple[int, int]:
    """(n, k) of ``gemm`` on one of ``tp`` ranks; a TP that splits it into fractions is refused
    (a rank cannot hold a fraction of a column: Megatron refuses such a TP too)."""
    k_rank, n_rank = inference_local_dims(gemm.linear, tp)
    n, k = gemm.linear.out_features, gemm.linear.in_features
    if float(n_rank).is_integer() and float(k_rank).is_integer():
        return int(n_rank), int(k_rank)
    columns = n_rank != n
    split = n if columns else k
    raise UserInputError(
        f"tp={tp} does not divide the {split:,} {'columns' if columns else 'rows'} of the "
        f"{gemm.label} GEMM of {model.name}; use a TP that divides it (e.g. {_divisor_near(split, tp)})"
    )


def _divisor_near(size: int, tp: int) -> int:
    """The largest power of two up to ``tp`` that divides ``size`` (1 at least)."""
    power = 1
    while power * 2 <= tp and size % (power * 2) == 0:
        power *= 2
    return power


def gemm_bytes(shape: GemmShape, precision: str) -> float:
    """Peak bytes one GEMM case allocates: fp32 operands drawn first, the operands in ``precision``,
    the output, and the float64 copy of B the correctness check multiplies by.

    >>> gemm_bytes(GemmShape(m=1024, n=1024, k=1024), "fp32") / 2**20
    30.0
    """
    element = 1.0 if precision == "fp8" else _ELEMENT_BYTES.get(precision, 4.0)
    output = 2.0 if precision == "fp8" else element
    operands = float(shape.m * shape.k + shape.n * shape.k)
    checked_rows = min(shape.m, _CHECK_ROWS)
    check = 8.0 * (shape.n * shape.k + 2 * checked_rows * (shape.k + shape.n))
    return operands * (4.0 + element) + output * shape.m * shape.n + check


_ELEMENT_BYTES: Final = {"fp64": 8.0, "fp32": 4.0, "tf32": 4.0, "bf16": 2.0, "fp16": 2.0}
# GEMM dtypes a CPU has no kernel of its own for, and why: tf32 is a GPU tensor-core mode, and
# torch's CPU build runs fp8 (torch._scaled_mm) as emulation, 1.3 s for one 256^3 multiply and
# 10.6 s at 512^3 on the 2-core dev VM (hours for a --quick sweep), which the small probe of
# check_dtype would pass
_CPU_REFUSED_DTYPES: Final = {
    "tf32": "tf32 is a GPU tensor-core mode and the CPU has no such mode; use fp32 on the CPU",
    "fp8": "the CPU has no fp8 GEMM kernel: torch emulates fp8 (seconds for one 256x256 multiply, "
    "hours for a sweep); use bf16 or fp32 on the CPU, or measure fp8 on a GPU of compute "
    "capability 8.9 or newer",
}


def check_dtype(torch: ModuleType, device: BenchDevice, precision: str) -> None:
    """Raise :class:`UnsupportedError` when ``device`` cannot multiply in ``precision``.

    Support is probed with a small multiply (an old GPU refuses fp8), after rules torch does
    not enforce itself: a CPU is refused the dtypes it has no kernel for
    (:data:`_CPU_REFUSED_DTYPES`: tf32, and fp8, which torch's CPU build emulates far too slowly
    to sweep), a GPU below compute capability 8.9 fp8.
    """
    if precision not in GEMM_DTYPES:
        raise UserInputError(f"unsupported GEMM dtype {precision!r}; use one of {', '.join(GEMM_DTYPES)}")
    if precision in _CPU_REFUSED_DTYPES and not device.is_gpu:
        raise UnsupportedError(_CPU_REFUSED_DTYPES[precision])
    if precision == "fp8" and device.is_gpu:
        capability = tuple(torch.cuda.get_device_capability(device.index))
        if capability < (8, 9):
            raise UnsupportedError(
                f"fp8 GEMM needs compute capability 8.9 or newer; {device.name} is "
                f"{capability[0]}.{capability[1]}; drop fp8 or use bf16"
            )
    try:
        _GemmCase(torch, device, GemmShape(m=32, n=32, k=32), precision).run()
    except (RuntimeError, TypeError) as error:  # torch's 'not implemented for dtype' errors are RuntimeErrors
        raise UnsupportedError(
            f"{device.name or device.kind} cannot multiply {precision} matrices with torch "
            f"{torch.__version__} ({first_line(error)}); choose another dtype"
        ) from None


def supported_dtypes(device: BenchDevice) -> list[str]:
    """Every GEMM dtype ``device`` can multiply (probed), in :data:`GEMM_DTYPES` order."""
    torch = import_torch()
    supported = []
    for precision in GEMM_DTYPES:
        try:
            check_dtype(torch, device, precision)
        except UnsupportedError:
            continue
        supported.append(precision)
    return supported


class _GemmCase:
    """Operands and the multiply for one shape and dtype."""

    def __init__(self, torch: Any, device: BenchDevice, shape: GemmShape, precision: str) -> None:
        self.torch = torch
        self.precision = precision
        generator = torch.Generator(device=device.torch_name).manual_seed(shape.m * 31 + shape.n)
        options = {"device": device.torch_name, "generator": generator}
        # B is stored transposed (n x k) and used as .t(): the layout fp8 kernels need.
        a32 = torch.randn(shape.m, shape.k, **options)
        b32 = torch.randn(shape.n, shape.k, **options)
        if precision == "fp8":
            self.a = a32.to(torch.float8_e4m3fn)
            self.b = b32.to(torch.float8_e4m3fn)
            self.out = torch.empty(shape.m, shape.n, device=device.torch_name, dtype=torch.bfloat16)
            self.scale = torch.ones((), device=device.torch_name, dtype=torch.float32)
        else:
            dtype = torch_dtype(torch, precision)
            self.a = a32.to(dtype)
            self.b = b32.to(dtype)
            self.out = torch.empty(shape.m, shape.n, device=device.torch_name, dtype=dtype)

    def run(self) -> None:
        if self.precision == "fp8":
            self.torch._scaled_mm(
                self.a,
                self.b.t(),
                scale_a=self.scale,
                scale_b=self.scale,
                out_dtype=self.torch.bfloat16,
                out=self.out,
            )
        else:
            self.torch.mm(self.a, self.b.t(), out=self.out)

    def correct(self) -> bool:
        """Relative Frobenius error of the first rows against a float64 product."""
        torch = self.torch
        rows = slice(0, _CHECK_ROWS)
        reference = self.a[rows].to(torch.float64) @ self.b.to(torch.float64).t()
        error = torch.linalg.vector_norm(self.out[rows].to(torch.float64) - reference)
        scale = torch.linalg.vector_norm(reference)
        relative = float(error / scale) if float(scale) > 0 else float(error)
        return math.isfinite(relative) and relative <= _TOLERANCE[self.precision]


def default_warmup_s(*, quick: bool, gpu: bool) -> float:
    """Seconds the device is warmed before a sweep: enough for a CPU's thread pool and a GPU's
    clocks to settle (MAMF warms a GPU for 30 s; a quick sweep trades some of that for time)."""
    if gpu:
        return 2.0 if quick else 10.0
    return 0.25 if quick else 1.0


def warm_device(case: _GemmCase, timer: Timer, *, seconds: float) -> int:
    """Run ``case`` untimed for ``seconds`` (at least 3 calls); returns the calls made."""
    deadline = time.perf_counter() + seconds
    calls = 0
    while calls < 3 or time.perf_counter() < deadline:
        case.run()
        calls += 1
        if calls % 16 == 0:
            timer.synchronize()  # a GPU's queue stays short, so the deadline means device time
    timer.synchronize()
    return calls


def _measure_shape(
    torch: Any, device: BenchDevice, timer: Timer, shape: GemmShape, precision: str, *, quick: bool
) -> tuple[list[float], bool]:
    case = _GemmCase(torch, device, shape, precision)
    first_s = time_once(case.run, timer)
    budget_s = (0.3 if quick else 2.0) if not device.is_gpu else (0.2 if quick else 1.0)
    warmup = (2 if quick else 5) if not device.is_gpu else (10 if quick else 50)
    repeats = plan_repeats(first_s, budget_s=budget_s, minimum=5, maximum=20 if quick else 100)
    seconds = timer.time(case.run, warmup=warmup, repeats=repeats)
    timer.synchronize()
    return [shape.flop / sample for sample in seconds], case.correct()


def run_gemm(
    *,
    device: BenchDevice,
    sol: DeviceSol,
    dtypes: Sequence[str] = ("fp32",),
    shapes: Sequence[GemmShape] | None = None,
    quick: bool = False,
    flush_l2: bool = True,
    progress: ProgressCallback | None = None,
    warmup_s: float | None = None,
) -> list[BenchResult]:
    """FLOP/s of each shape and dtype on ``device``, beside the dense peak.

    Unsupported dtypes are refused before anything runs. Before the first timed shape of
    each dtype the device runs the sweep's first shape untimed for ``warmup_s`` seconds
    (default: :func:`default_warmup_s`), so that no size is measured cold; the warm-up is
    never a result. The SOL is ``sol``'s dense peak of each dtype (for a CPU, of the cores the
    threads occupy: ``details["sol_scope"]``); a CPU run also records the load average and
    says when other processes ran (``details["load_note"]``).
    """
    torch = import_torch()
    load_start = load_average_1min()
    for precision in dtypes:
        check_dtype(torch, device, precision)
    chosen = list(shapes) if shapes is not None else sweep_shapes(quick=quick, gpu=device.is_gpu)
    _require_memory(torch, device, chosen, dtypes)
    warm_s = default_warmup_s(quick=quick, gpu=device.is_gpu) if warmup_s is None else warmup_s
    timer = Timer(torch, device, flush_l2=flush_l2)
    previous_tf32 = torch.backends.cuda.matmul.allow_tf32
    results: list[BenchResult] = []
    total = len(chosen) * len(dtypes)
    try:
        for precision in dtypes:
            # tf32 is fp32 storage with tensor-core math; fp32 means true fp32 math.
            torch.backends.cuda.matmul.allow_tf32 = precision == "tf32"
            peak, note = sol.compute(precision)
            if chosen:
                warm_device(_GemmCase(torch, device, chosen[0], precision), timer, seconds=warm_s)
            for shape in chosen:
                if progress is not None:
                    progress(f"gemm {precision} {shape.text}", len(results), total)
                samples, correct = _measure_shape(torch, device, timer, shape, precision, quick=quick)
                results.append(
                    make_result(
                        suite="gemm",
                        device=device.torch_name,
                        sol_device=sol.device_name,
                        name=f"gemm {shape.text}",
                        dtype=precision,
                        flop_per_call=int(shape.flop),
                        samples=samples,
                        unit="FLOP/s",
                        best="median",
                        sol=peak,
                        sol_note=note,
                        correct=correct,
                        details=_details(shape, device, sol),
                        above_sol_note=sol.above_note,
                    )
                )
    finally:
        torch.backends.cuda.matmul.allow_tf32 = previous_tf32
    if progress is not None:
        progress("gemm done", total, total)
    return with_load_note(results, device=device, load_start=load_start)


def _details(shape: GemmShape, device: BenchDevice, sol: DeviceSol) -> dict[str, object]:
    """The shape, and on a CPU the threads and which cores the SOL counts (``1 of 2 cores``)."""
    details: dict[str, object] = {"m": shape.m, "n": shape.n, "k": shape.k, "label": shape.label}
    if not device.is_gpu:
        details["num_threads"] = device.num_threads
    if sol.compute_scope:
        details["sol_scope"] = sol.compute_scope
    return details


def _require_memory(
    torch: Any, device: BenchDevice, shapes: Sequence[GemmShape], dtypes: Sequence[str]
) -> None:
    """Refuse, before anything runs, a sweep whose largest GEMM does not fit on ``device``."""
    if not shapes:
        return
    largest = max(shapes, key=lambda shape: gemm_bytes(shape, "fp64"))
    require_memory(
        torch,
        device,
        needed_bytes=max(gemm_bytes(largest, precision) for precision in dtypes),
        what=f"the {largest.m}x{largest.n}x{largest.k} GEMM ({largest.label})",
        fix="choose a smaller shape (fewer --tokens rows, or a larger --tp)",
    )


def best_per_dtype(results: Sequence[BenchResult]) -> dict[str, BenchResult]:
    """The fastest correct GEMM result of each dtype (MAMF's "best shape")."""
    best: dict[str, BenchResult] = {}
    for result in results:
        if result.suite != "gemm" or not result.correct or result.dtype is None:
            continue
        current = best.get(result.dtype)
        if current is None or result.value > current.value:
            best[result.dtype] = result
    return best
