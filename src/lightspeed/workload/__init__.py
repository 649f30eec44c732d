"""Workload models: transformer architectures and what they cost.

Parameters, FLOPs per token and bytes (weights, optimizer state, KV cache)
for dense, GQA, MoE and MLA transformers; known models ship as TOML data
files and Hugging Face ``config.json`` files import without network access.
"""

from lightspeed.workload.spec import AttentionSpec, MoESpec, TransformerSpec

__all__ = ["AttentionSpec", "MoESpec", "TransformerSpec"]
