"""The recurrent mixers of hybrid models: Mamba-2 (:class:`MambaSpec`, in Nemotron-H and Nemotron 3)
and Gated DeltaNet (:class:`GatedDeltaNetSpec`, in Qwen3-Next and Qwen3.5), which hold a
fixed-size state per sequence instead of a KV cache, and the formats that state is kept in.
:class:`~lightspeed.workload.spec.TransformerSpec` places them in its block pattern.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from lightspeed.errors import UserInputError
from lightspeed.limits import MAX_HEADS_OR_HEAD_DIM
from lightspeed.records import Record

# A Mamba-2 block's recurrent state is kept in FP32: Nemotron-H's and Nemotron 3's config.json set
# mamba_ssm_cache_dtype "float32", which vLLM's --mamba-ssm-cache-dtype "auto" takes; the
# convolution's window stays in the activations' 16 bits
MAMBA_STATE_BYTES: Final = 4.0


MAMBA_CONV_STATE_BYTES: Final = 2.0


# A decode step's Mamba-2 state update per head channel and state entry: h = exp(dt·A)·h + dt·B·x
# (two multiply-adds) and y = C·h (one), two FLOP each (mamba_ssm's selective_state_update)
MAMBA_DECODE_FLOP_PER_STATE: Final = 6.0


# The formats a recurrent mixer's state may be held in while serving, bytes per entry (vLLM's
# --mamba-ssm-cache-dtype, SGLang's --mamba-ssm-dtype). A Gated DeltaNet's is the dtype its
# config.json names (mamba_ssm_dtype: Qwen3.5's say "float32", which vLLM copies into
# --mamba-ssm-cache-dtype), else the model's 16 bits (Qwen3-Next's names none and vLLM's "auto"
# takes the model's); a Mamba-2 block's is FP32 (MAMBA_STATE_BYTES). FLA's chunked training
# kernels keep each chunk's state in the inputs' dtype (chunk_fwd_h: h = k.new_empty(...)). The
# convolution's window is 16-bit like Mamba's.
STATE_DTYPES: Final = {"bfloat16": 2.0, "float16": 2.0, "float32": 4.0}


# The same formats by the short names servers' flags and lightspeed's options also take.
STATE_PRECISIONS: Final = {"fp32": "float32", "bf16": "bfloat16", "fp16": "float16"}


GDN_CHUNK_STATE_BYTES: Final = 2.0


# A decode step's Gated DeltaNet update per state entry (FLA's fused_recurrent_gated_delta_rule):
# the decay S·exp(g) (one multiply), the prediction Sᵀk, the rank-one correction k·δᵀ and the
# output Sᵀq (a multiply-add each)
GDN_DECODE_FLOP_PER_STATE: Final = 7.0


def check_state_dtype(table: str, dtype: str) -> None:
    """A recurrent mixer's ``state_dtype`` is one of :data:`STATE_DTYPES`."""
    if dtype not in STATE_DTYPES:
        raise UserInputError(f"{table} state_dtype {dtype!r} is not one of {', '.join(STATE_DTYPES)}")


def check_mixer_shape(table: str, mixer: Record, fields: tuple[str, ...], example: str) -> None:
    """Each of a recurrent mixer's ``fields`` (heads, sizes, taps, chunk) is 1 to
    :data:`MAX_HEADS_OR_HEAD_DIM`; the error names the ``table``, the field and a real model's
    shape (``example``)."""
    for label in fields:
        value = getattr(mixer, label)
        if not 1 <= value <= MAX_HEADS_OR_HEAD_DIM:
            raise UserInputError(
                f"{table} {label} must be 1 to {MAX_HEADS_OR_HEAD_DIM:,} (got {value}); {example}"
            )


@dataclass(frozen=True)
class MambaSpec(Record):
    """A Mamba-2 mixer (Dao & Gu 2024, "Transformers are SSMs", the SSD layer).

    ``num_heads`` heads of ``head_dim`` channels make the inner width ``d_inner``; B and C
    are shared by ``num_groups`` groups of heads, each with ``state_size`` state channels.
    One block projects the hidden state to ``z``, ``x``, ``B``, ``C`` and one ``dt`` per
    head (``in_proj``: ``h -> 2·d_inner + 2·G·N + H``), runs a depthwise causal
    convolution of ``conv_kernel`` taps over ``x``, ``B``, ``C``, the chunked state-space
    scan (chunks of ``chunk_size`` tokens), a gated RMSNorm, and projects back
    (``out_proj``: ``d_inner -> h``). It keeps no per-token cache: a sequence carries
    a recurrent state of ``H·P·N`` values and the convolution's last ``conv_kernel - 1``
    inputs, whatever its length; ``state_dtype`` is the state's format when serving
    (:data:`STATE_DTYPES`; FP32 as mamba_ssm keeps it).
    """

    num_heads: int
    head_dim: int
    state_size: int
    num_groups: int = 1
    conv_kernel: int = 4
    chunk_size: int = 128
    state_dtype: str = "float32"

    def __post_init__(self) -> None:
        check_mixer_shape(
            "mamba",
            self,
            ("num_heads", "head_dim", "state_size", "num_groups", "conv_kernel", "chunk_size"),
            "Nemotron-H uses 128 heads of 64 channels, a state of 128 and 8 groups",
        )
        check_state_dtype("mamba", self.state_dtype)
        if self.num_heads % self.num_groups:
            raise UserInputError(
                f"mamba num_heads ({self.num_heads}) must be a multiple of num_groups ({self.num_groups})"
            )

    @property
    def inner_size(self) -> int:
        """``d_inner``: the heads' channels together."""
        return self.num_heads * self.head_dim

    @property
    def conv_channels(self) -> int:
        """Channels the causal convolution runs over: ``x``, ``B`` and ``C``."""
        return self.inner_size + 2 * self.num_groups * self.state_size

    @property
    def in_proj_width(self) -> int:
        """Outputs of ``in_proj``: ``z``, ``x``, ``B``, ``C`` and one ``dt`` per head."""
        return 2 * self.inner_size + 2 * self.num_groups * self.state_size + self.num_heads

    @property
    def state_values(self) -> int:
        """Values a sequence carries from token to token: the SSM state (``H·P·N``)."""
        return self.num_heads * self.head_dim * self.state_size

    def scan_flop_per_token(self) -> float:
        """Forward FLOP per token of one block's chunked SSD scan (Dao & Gu 2024, section 6): the
        intra-chunk ``C·Bᵀ`` scores (``2·G·Q·N``), their
        product with ``X`` (``2·H·Q·P``), the chunk states ``Bᵀ·X`` and the output from them
        ``C·h`` (``2·H·N·P`` each). Kernels compute whole chunks: the causal mask saves nothing.
        Every term is of heads or groups, so a tensor-parallel rank's is ``1/tp`` of it.

        >>> MambaSpec(num_heads=64, head_dim=64, state_size=128, num_groups=8).scan_flop_per_token()
        3407872.0
        """
        heads, groups = self.num_heads, self.num_groups
        chunk, channels, state = self.chunk_size, self.head_dim, self.state_size
        return 2.0 * groups * chunk * state + 2.0 * heads * chunk * channels + 4.0 * heads * state * channels

    @property
    def streamed_values_per_token(self) -> int:
        """Values one block's memory-bound kernels move per token: the causal convolution reads
        and writes its channels, the gated norm reads ``y`` and ``z`` and writes its output."""
        return 2 * self.conv_channels + 3 * self.inner_size

    @property
    def head_params(self) -> int:
        """Parameters beside the two projections, split over tensor parallelism with the heads: the
        depthwise convolution's taps and a bias per channel, ``A``, ``D`` and the ``dt`` bias per
        head, and the gated norm's ``d_inner`` weights."""
        return self.conv_channels * (self.conv_kernel + 1) + 3 * self.num_heads + self.inner_size

    @property
    def sequence_state_bytes(self) -> float:
        """Bytes one sequence keeps in one block, whatever its length: the SSM state in its
        ``state_dtype`` and the 16-bit convolution window (:data:`MAMBA_CONV_STATE_BYTES`)."""
        state = self.state_values * STATE_DTYPES[self.state_dtype]
        return state + self.conv_state_values * MAMBA_CONV_STATE_BYTES

    @property
    def conv_state_values(self) -> int:
        """Values of the convolution's window a sequence carries: the last ``conv_kernel - 1``
        inputs of every channel."""
        return (self.conv_kernel - 1) * self.conv_channels

    @property
    def scan_streamed_values_per_token(self) -> int:
        """Values the chunked scan reads and writes per token: ``x``, ``B``, ``C``, ``dt`` in and
        ``y`` out."""
        return 2 * self.inner_size + 2 * self.num_groups * self.state_size + self.num_heads

    @property
    def chunk_state_bytes(self) -> float:
        """Bytes of one entry of the state the chunked scan writes at each chunk's end (FP32 in
        mamba_ssm's ``_chunk_state_fwd``)."""
        return MAMBA_STATE_BYTES

    @property
    def decode_flop_per_state(self) -> float:
        """FLOP per state entry of one decode step's update (:data:`MAMBA_DECODE_FLOP_PER_STATE`)."""
        return MAMBA_DECODE_FLOP_PER_STATE

    @property
    def label(self) -> str:
        """The mixer's name in messages and reports."""
        return "Mamba-2"

    @property
    def split_unit(self) -> tuple[int, str]:
        """(count, name) of what tensor parallelism must split whole: Megatron-Core's
        ``MambaMixer`` gives each rank whole groups of heads."""
        return self.num_groups, "Mamba groups"


@dataclass(frozen=True)
class GatedDeltaNetSpec(Record):
    """A Gated DeltaNet mixer (Yang, Kautz & Hatamizadeh 2025, "Gated Delta Networks: Improving
    Mamba2 with Delta Rule", ICLR; the linear-attention layers of Qwen3-Next and Qwen3.5).

    ``num_key_heads`` query and key heads of ``key_head_dim`` and ``num_value_heads`` value heads
    of ``value_head_dim`` (each query/key head serves ``num_value_heads / num_key_heads`` value
    heads). One block projects the hidden state to ``q``, ``k``, ``v``, the output gate ``z`` and
    one decay ``a`` and one write strength ``b`` per value head (``in_proj``:
    ``h -> 2·Hk·Dk + 2·Hv·Dv + 2·Hv``), runs a depthwise causal convolution of ``conv_kernel``
    taps (no bias) over ``q``, ``k``, ``v``, normalizes ``q`` and ``k``, runs the chunked
    gated delta rule (chunks of ``chunk_size`` tokens; FLA's ``chunk_gated_delta_rule``), a gated
    RMSNorm of one ``value_head_dim`` weight shared by the heads, and projects back
    (``out_proj``: ``Hv·Dv -> h``). A sequence carries a state of ``Hv·Dk·Dv`` values and the
    convolution's last ``conv_kernel - 1`` inputs, whatever its length; ``state_dtype`` is the
    state's format when serving (:data:`STATE_DTYPES`).
    """

    num_key_heads: int
    num_value_heads: int
    key_head_dim: int
    value_head_dim: int
    conv_kernel: int = 4
    chunk_size: int = 64
    state_dtype: str = "bfloat16"

    def __post_init__(self) -> None:
        check_mixer_shape(
            "gated_delta_net",
            self,
            (
                "num_key_heads",
                "num_value_heads",
                "key_head_dim",
                "value_head_dim",
                "conv_kernel",
                "chunk_size",
            ),
            "Qwen3-Next uses 16 query/key heads and 32 value heads of 128 channels",
        )
        check_state_dtype("gated_delta_net", self.state_dtype)
        if self.num_value_heads % self.num_key_heads:
            raise UserInputError(
                f"gated_delta_net num_value_heads ({self.num_value_heads}) must be a multiple of "
                f"num_key_heads ({self.num_key_heads})"
            )

    @property
    def num_heads(self) -> int:
        """Heads the recurrence runs over: the value heads (queries and keys are repeated)."""
        return self.num_value_heads

    @property
    def inner_size(self) -> int:
        """The value heads' channels together (``out_proj``'s input)."""
        return self.num_value_heads * self.value_head_dim

    @property
    def key_size(self) -> int:
        """The query (or key) heads' channels together."""
        return self.num_key_heads * self.key_head_dim

    @property
    def conv_channels(self) -> int:
        """Channels the causal convolution runs over: ``q``, ``k`` and ``v``."""
        return 2 * self.key_size + self.inner_size

    @property
    def in_proj_width(self) -> int:
        """Outputs of ``in_proj``: ``q``, ``k``, ``v``, ``z`` and ``a``, ``b`` per value head."""
        return 2 * self.key_size + 2 * self.inner_size + 2 * self.num_value_heads

    @property
    def state_values(self) -> int:
        """Values a sequence carries from token to token: ``Hv`` matrices of ``Dk x Dv``."""
        return self.num_value_heads * self.key_head_dim * self.value_head_dim

    @property
    def conv_state_values(self) -> int:
        """Values of the convolution's window a sequence carries."""
        return (self.conv_kernel - 1) * self.conv_channels

    def scan_flop_per_token(self) -> float:
        """Forward FLOP per token of one block's chunked gated delta rule (Yang et al. 2025,
        section 3.3: the WY representation computed chunk by chunk), per value head with chunk
        ``C``, key size ``K`` and value size ``V``: the intra-chunk ``K·Kᵀ`` and ``Q·Kᵀ`` and the
        WY factor ``W = T·K`` (``2·C·K`` each), the pseudo-values ``U = T·V`` and the intra-chunk
        output (``2·C·V`` each), the chunk's inverse ``T`` (``2·C³/3`` per chunk, ``2·C²/3`` per
        token), and three products with the state (``U - W·S``, ``Q·S``, ``Kᵀ·(U - W·S)``,
        ``2·K·V`` each). Every term is per head, so a tensor-parallel rank's is ``1/tp`` of it.

        >>> GatedDeltaNetSpec(16, 32, 128, 128).scan_flop_per_token()
        5854549.333333334
        """
        chunk, key, value = self.chunk_size, self.key_head_dim, self.value_head_dim
        per_head = 6.0 * chunk * key + 4.0 * chunk * value + 2.0 * chunk * chunk / 3.0 + 6.0 * key * value
        return self.num_value_heads * per_head

    @property
    def streamed_values_per_token(self) -> int:
        """Values one block's memory-bound kernels move per token: the causal convolution reads and
        writes its channels, the L2 norms of ``q`` and ``k`` read and write theirs, the gated norm
        reads the output and ``z`` and writes its own."""
        return 2 * self.conv_channels + 4 * self.key_size + 3 * self.inner_size

    @property
    def scan_streamed_values_per_token(self) -> int:
        """Values the chunked rule reads and writes per token: ``q``, ``k``, ``v``, the decay and
        write strength in, the output out."""
        return self.conv_channels + self.inner_size + 2 * self.num_value_heads

    @property
    def head_params(self) -> int:
        """Parameters beside the two projections: the convolution's taps (no bias), ``A`` and the
        decay bias per value head, and the gated norm's ``value_head_dim`` weights."""
        return self.conv_channels * self.conv_kernel + 2 * self.num_value_heads + self.value_head_dim

    @property
    def sequence_state_bytes(self) -> float:
        """Bytes one sequence keeps in one block, whatever its length: the state in its
        ``state_dtype`` and the 16-bit convolution window."""
        state = self.state_values * STATE_DTYPES[self.state_dtype]
        return state + self.conv_state_values * MAMBA_CONV_STATE_BYTES

    @property
    def chunk_state_bytes(self) -> float:
        """Bytes of one entry of the state kept at each chunk's end in training (the inputs' 16
        bits, :data:`GDN_CHUNK_STATE_BYTES`)."""
        return GDN_CHUNK_STATE_BYTES

    @property
    def decode_flop_per_state(self) -> float:
        """FLOP per state entry of one decode step's update (:data:`GDN_DECODE_FLOP_PER_STATE`)."""
        return GDN_DECODE_FLOP_PER_STATE

    @property
    def label(self) -> str:
        """The mixer's name in messages and reports."""
        return "Gated DeltaNet"

    @property
    def split_unit(self) -> tuple[int, str]:
        """(count, name) of what tensor parallelism must split whole: Megatron-Core's
        ``GatedDeltaNet`` gives each rank whole query/key heads with their value heads."""
        return self.num_key_heads, "Gated DeltaNet query/key heads"


# A hybrid's recurrent mixer: a fixed-size state per sequence instead of a KV cache
RecurrentMixer = MambaSpec | GatedDeltaNetSpec
