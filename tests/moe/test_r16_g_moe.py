"""Round 16 fixes (helper G): expert load counted once per forward under activation checkpointing,
and per-rank long CSVs of different widths refused with the --experts that adds them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from lightspeed.errors import UserInputError
from lightspeed.moe import combine_loads, expert_load_from_array, read_expert_loads

TOKENS = 16  # 2 sequences x 8 tokens
TOP_K = 2
EXPERTS = 4
HIDDEN = 8


def _moe_model(torch: Any, checkpoint: str) -> Any:
    """Two MoE blocks (a ``gate`` beside its ``experts``), each run under ``torch.utils.checkpoint``
    (``checkpoint``: "none", "reentrant" or "non-reentrant")."""
    nn = torch.nn

    class Block(nn.Module):  # type: ignore[misc]
        def __init__(self) -> None:
            super().__init__()
            self.gate = nn.Linear(HIDDEN, EXPERTS, bias=False)
            self.experts = nn.ModuleList(nn.Linear(HIDDEN, HIDDEN) for _ in range(EXPERTS))

        def forward(self, hidden: Any) -> Any:
            weights, chosen = torch.topk(self.gate(hidden).softmax(dim=-1), TOP_K, dim=-1)
            out = torch.zeros_like(hidden)
            for slot in range(TOP_K):
                for expert, layer in enumerate(self.experts):
                    mask = (chosen[:, slot] == expert).unsqueeze(-1)
                    out = out + mask * weights[:, slot : slot + 1] * layer(hidden)
            return hidden + out

    class Model(nn.Module):  # type: ignore[misc]
        def __init__(self) -> None:
            super().__init__()
            self.blocks = nn.ModuleList([Block(), Block()])

        def forward(self, hidden: Any) -> Any:
            for block in self.blocks:
                if checkpoint == "none":
                    hidden = block(hidden)
                else:
                    hidden = torch.utils.checkpoint.checkpoint(
                        block, hidden, use_reentrant=checkpoint == "reentrant"
                    )
            return hidden

    torch.manual_seed(0)
    return Model().train()


@pytest.mark.parametrize("checkpoint", ["none", "non-reentrant", "reentrant"])
def test_checkpoint_recompute_is_not_counted_twice(checkpoint: str) -> None:
    """16 tokens routed to 2 experts each: 16 x 2 = 32 token-expert pairs per layer, whether or not
    the backward pass recomputes the blocks (the old recorder counted 64 under checkpointing)."""
    torch = pytest.importorskip("torch")
    from lightspeed.moe import ExpertLoadRecorder

    model = _moe_model(torch, checkpoint)
    hidden = torch.randn(TOKENS, HIDDEN, requires_grad=True)
    with ExpertLoadRecorder(model, top_k=TOP_K) as recorder:
        model(hidden).pow(2).sum().backward()
        recorder.step()
    counts = recorder.load().array()
    assert counts.shape == (2, EXPERTS)
    assert counts.sum(axis=1).tolist() == [TOKENS * TOP_K] * 2


def test_loads_of_different_widths_say_which_experts_option_adds_them() -> None:
    narrow = expert_load_from_array([[10, 20]], source="l.csv")
    wide = expert_load_from_array([[10, 20, 5]], source="m.csv")
    with pytest.raises(UserInputError, match=r"cannot be added; .*--experts 3\)"):
        combine_loads([narrow, wide])
    with pytest.raises(UserInputError, match=r"cannot be added$"):  # other layers: no width to give
        combine_loads([narrow, expert_load_from_array([[1, 2], [3, 4]], source="n.csv")])


def test_cli_per_rank_sglang_csvs_of_different_widths(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """Rank 0 routed no token to expert 2, so its SGLang dump has no row for it."""
    first, second = tmp_path / "l.csv", tmp_path / "m.csv"
    first.write_text("layer_id,expert_id,count\n3,0,10\n3,1,20\n", encoding="utf-8")
    second.write_text("layer_id,expert_id,count\n3,0,10\n3,1,20\n3,2,5\n", encoding="utf-8")
    refused = run_cli("moe", "stats", str(first), str(second))
    assert refused.code == 2
    assert "--experts 3" in refused.err
    added = read_expert_loads([first, second], num_experts=3)
    assert added.counts == ((20.0, 40.0, 5.0),)  # by hand: 10+10, 20+20, 0+5
    assert run_cli("moe", "stats", str(first), str(second), "--experts", "3").code == 0
