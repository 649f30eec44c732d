"""Small model specs the tests build by hand (importable as ``specs``: pytest's pythonpath has tests/)."""

from __future__ import annotations

from lightspeed.workload import AttentionSpec, TransformerSpec


def tiny_spec(num_layers: int = 4, hidden_size: int = 64, **attention: object) -> TransformerSpec:
    """A small MHA/GQA decoder (4 heads of 16, 2 KV heads) with ``attention``'s extra fields."""
    return TransformerSpec(
        name="tiny",
        display_name="tiny",
        num_layers=num_layers,
        hidden_size=hidden_size,
        ffn_hidden_size=2 * hidden_size,
        vocab_size=1000,
        attention=AttentionSpec("gqa", 4, 2, 16, **attention),  # type: ignore[arg-type]
    )
