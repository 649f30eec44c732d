"""Pipeline schedules: bubble time and in-flight activations (REFERENCE.md section 3).

With ``p`` stages, ``m`` micro-batches, per-micro-batch stage times ``F``
(forward) and ``B`` (full backward, of which ``W`` is the weight-gradient part):

=============  ==========================  =====================  ==========================  ================
schedule       bubble                      parameters per GPU     activations held, first     last stage
=============  ==========================  =====================  ==========================  ================
GPipe          ``(p-1)(F+B)``              1x                     ``m``                       ``m``
1F1B           ``(p-1)(F+B)``              1x                     ``min(p, m)``               1
interleaved    ``(p-1)(F+B)/v``            1x                     ``min(p + (p-1)/v, m)``     ``p - (p-1)/v``
ZB1P           ``(p-1)(F+B-2W)``           1x                     ``min(p, m)``               1
DualPipe       ``(p/2-1)(F&B + B - 3W)``   2x                     ``p + 1``                   ``p + 1``
DualPipeV      ``(p/2-1)(F&B + B - 3W)``   1x (2 chunks of L/2p)  ``p + 1``                   ``p + 1``
=============  ==========================  =====================  ==========================  ================

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

The last stage (the LM head, the loss and any MTP modules) holds fewer micro-batches but their
logits (:func:`last_stage_in_flight`, :func:`loss_microbatches`): under 1F1B and ZB1P it runs
each forward straight into its backward (1; ZB1P's deferred weight-gradient passes keep only
part of a layer's activations, not counted); under GPipe all ``m``; interleaved, Megatron's last
rank warms up ``(p-1-rank)*2 + (v-1)*p = (v-1)*p`` chunks
(``forward_backward_pipelining_with_interleaving``), the first ``v-1`` chunks of ``p``
micro-batches each, then runs the head's chunk one forward and its backward at a time:
``((v-1)*p + 1) / v = p - (p-1)/v`` stages' worth of layers and one micro-batch of logits.
DualPipe and DualPipeV place the first and the last stage on the same two end GPUs (stage ``i``
and ``p-1-i`` of the two directions, or of the V's two chunks), so an end GPU holds the first
stage's ``p + 1`` plus one micro-batch's loss: its forward and backward are paired like 1F1B's.
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


def last_stage_in_flight(grid: PlanGrid) -> Array:
    """Micro-batches (each a whole stage's layers) the stage with the LM head holds at its peak;
    without a pipeline, and under DualPipe (whose end GPUs hold the first stage too), the first
    stage's :func:`activations_in_flight`."""
    stages = grid.pp
    microbatches = grid.num_microbatches
    interleaved = np.minimum(stages - (stages - 1.0) / grid.vpp, microbatches)
    last = np.select(
        [
            grid.is_schedule("gpipe"),
            grid.is_schedule("interleaved") & (grid.vpp > 1),
            grid.is_schedule("dualpipe", "dualpipev"),
        ],
        [microbatches, interleaved, activations_in_flight(grid)],
        np.minimum(1.0, microbatches),
    )
    return np.where(stages > 1, last, activations_in_flight(grid))


def loss_microbatches(grid: PlanGrid) -> Array:
    """Micro-batches whose loss (logits and cross-entropy state) the last stage holds at once:
    all ``m`` under GPipe (every forward before any backward), otherwise one."""
    return np.where(grid.is_schedule("gpipe") & (grid.pp > 1), grid.num_microbatches, 1.0)


def parameter_copies(grid: PlanGrid) -> Array:
    """How many stage-sized parameter sets each GPU holds (DualPipe keeps two)."""
    return np.where(grid.is_schedule("dualpipe"), 2.0, 1.0)
