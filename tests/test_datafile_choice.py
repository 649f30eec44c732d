"""``Fields.choice``: the one rule for a data-file string that must be one of a set (a catalog
entry's kind, a model's release format, a checkpoint's weight format, a structured row's MoE
dispatcher)."""

from __future__ import annotations

import pytest

from lightspeed.datafile import Fields
from lightspeed.errors import DataFileError


def test_a_listed_value_is_returned() -> None:
    fields = Fields("rows.toml", {"plan": {"ep_dispatcher": "deepep"}}).table("plan")
    assert fields is not None
    assert fields.choice("ep_dispatcher", ("alltoall", "deepep", "hybridep"), "MoE dispatcher") == "deepep"


@pytest.mark.parametrize("value", ["nccl", "", "DeepEP"])
def test_an_unlisted_value_names_the_file_field_value_and_the_choices(value: str) -> None:
    fields = Fields("rows.toml", {"plan": {"ep_dispatcher": value}}).table("plan")
    assert fields is not None
    with pytest.raises(DataFileError) as raised:
        fields.choice("ep_dispatcher", ("alltoall", "deepep", "hybridep"), "MoE dispatcher")
    assert str(raised.value) == (
        f"rows.toml: unknown MoE dispatcher; field 'plan.ep_dispatcher'; value {value!r}; "
        "fix: use one of alltoall, deepep, hybridep"
    )


def test_a_value_that_is_not_a_string_is_refused_as_such() -> None:
    with pytest.raises(DataFileError, match="expected a string"):
        Fields("rows.toml", {"kind": 5}).choice("kind", ("model",), "kind")
