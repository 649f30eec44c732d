"""Pipeline schedules: bubble time and in-flight activations (REFERENCE.md section 3).

With ``p`` stages, ``m`` micro-batches, per-micro-batch stage times ``F``
(forward) and ``B`` (full backward, of which ``W`` is the weight-gradient part):

=============  ==============================  =====================  =============================
schedule       bubble                          parameters per GPU     activations held (micro-batches)
=============  ==============================  =====================  =============================
GPipe          ``(p-1)(F+B)``                  1x                     ``m``
1F1B           ``(p-1)(F+B)``                  1x                     ``min(p, m)``
interleaved    ``(p-1)(F+B)/v``                1x                     ``min(p + (p-1)/v, m)``, v >= 2
ZB1P           ``(p-1)(F+B-2W)``               1x                     ``min(p, m)``
DualPipe       ``(p/2-1)(F&B + B - 3W)``       2x                     ``p + 1``
DualPipeV      ``(p/2-1)(F&B + B - 3W)``       1x (2 chunks of L/2p)  ``p + 1``
=============  ==============================  =====================  =============================

``F&B`` (a forward and a backward chunk run overlapped) is taken as ``F + B``:
overlap hides communication, not compute. Interleaving needs ``v >= 2`` virtual chunks per GPU
(Megatron runs it only with a virtual pipeline size; plans refuse it otherwise,
:mod:`lightspeed.sol.train.plan`); a row with ``v = 1`` is costed as 1F1B, which is what it is
(the interleaved warm-up formula would hold ``2p - 1`` micro-batches, not ``p``).

Interleaved in-flight activations, in micro-batches of a whole stage: Megatron's first rank
runs ``(p-1)*2 + (v-1)*p`` warm-up chunks (``forward_backward_pipelining_with_interleaving``),
one more before its first backward, each ``1/v`` of the stage's layers:
``((p-1)*2 + (v-1)*p + 1) / v = p + (p-1)/v``. It never holds more than all of its step's
``m*v`` chunks (with ``m = p`` it runs every forward first), which are ``m`` micro-batches'
worth: the cap is ``m`` micro-batches, not ``m*v``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from lightspeed.sol.train.grid import PlanGrid

Array = Any


def bubble_s(grid: PlanGrid, forward_s: Array, backward_s: Array, weight_grad_s: Array) -> Array:
    """Idle time per step that the schedule leaves on the bottleneck stage."""
    stages = grid.pp
    full = (stages - 1.0) * (forward_s + backward_s)
    interleaved = full / grid.vpp
    zero_bubble = (stages - 1.0) * np.maximum(forward_s + backward_s - 2.0 * weight_grad_s, 0.0)
    dual = np.maximum(stages / 2.0 - 1.0, 0.0) * np.maximum(
        forward_s + 2.0 * backward_s - 3.0 * weight_grad_s, 0.0
    )
    bubble = np.select(
        [
            grid.is_schedule("interleaved"),
            grid.is_schedule("zb1p"),
            grid.is_schedule("dualpipe", "dualpipev"),
        ],
        [interleaved, zero_bubble, dual],
        full,
    )
    return np.where(stages > 1, bubble, 0.0)


def activations_in_flight(grid: PlanGrid) -> Array:
    """Micro-batches (each a whole stage's activations) the first stage holds at its peak."""
    stages = grid.pp
    microbatches = grid.num_microbatches
    one_f_one_b = np.minimum(stages, microbatches)
    # warm-up chunks plus one, at 1/v of a stage each; at most the step's m micro-batches
    interleaved = np.minimum(stages + (stages - 1.0) / grid.vpp, microbatches)
    return np.select(
        [
            grid.is_schedule("gpipe"),
            grid.is_schedule("interleaved") & (grid.vpp > 1),
            grid.is_schedule("dualpipe", "dualpipev"),
        ],
        [microbatches, interleaved, stages + 1.0],
        one_f_one_b,
    )


def parameter_copies(grid: PlanGrid) -> Array:
    """How many stage-sized parameter sets each GPU holds (DualPipe keeps two)."""
    return np.where(grid.is_schedule("dualpipe"), 2.0, 1.0)
