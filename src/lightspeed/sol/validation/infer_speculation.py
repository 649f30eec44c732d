"""Read the speculative decoding a published inference row states (``kind = infer`` rows, read by
:mod:`lightspeed.sol.validation.infer_rows`; the rules are documented in ``docs/inference.md``).

:func:`stated_speculation` gives the plan the draft tokens a step (``MTP 3``, ``3-token MTP``,
``num_nextn_predict_layers=3``, ``"num_speculative_tokens": 3``, SGLang's
``--speculative-num-steps 3``, or its ``--speculative-num-draft-tokens 4`` less the token it verifies
with them; a tree, top-k above 1, is refused) with an acceptance rate or length, in the run's own
cells or a note quoting its output; a row naming speculation without both is predicted without it,
and says so. The rest of the serving plan is read by :mod:`lightspeed.sol.validation.infer_layout`.
"""

from __future__ import annotations

import re
from dataclasses import replace

from lightspeed.errors import InvalidPlanError
from lightspeed.sol.infer.plan import InferencePlan, SpeculativeDecoding
from lightspeed.sol.validation.published import PublishedRow
from lightspeed.sol.validation.readings import RowError

# Draft-then-verify decoding the row names (DeepSeek's MTP layers and TensorRT-LLM's
# ``num_nextn_predict_layers``, EAGLE, Medusa, a draft model), as a word or inside a flag or key
# (``speculative_config``, ``--speculative-num-steps``).
_SPECULATION = r"(?:mtp|nextn|speculative|eagle\d*|medusa|draft[ _]model|draft[ _]tokens?)"
_SPECULATIVE = re.compile(rf"(?<![a-z]){_SPECULATION}(?![a-z])", re.IGNORECASE)
# ... nor says it did not: ``no MTP``, ``without EAGLE``, ``MTP disabled``, ``speculative: off``
_NOT_SPECULATIVE = re.compile(
    rf"\b(?:no|without|w/o|disabled?)\s+{_SPECULATION}"
    rf"|(?<![a-z]){_SPECULATION}[\s:=_-]*(?:disabled?|off|false|none)\b",
    re.IGNORECASE,
)


def _names_speculation(row: PublishedRow) -> bool:
    """Whether a cell of the run's own says it decoded speculatively (``MTP 3 layers``), not that it
    did not (``no MTP``); a note quoting another run's (``with MTP 224.2``) is not this run."""
    return any(_SPECULATIVE.search(cell) and not _NOT_SPECULATIVE.search(cell) for cell in row.own_cells())


# Draft tokens per step as rows write them: ``MTP 3``, ``MTP=3``, ``3 MTP layers``, ``3 nextn
# steps``, ``3 draft tokens``, ``3-token MTP``, ``num_draft_tokens 3``, ``draft length 4``, ``Eagle3
# draft 3``, ``speculative tokens 5``, vLLM's ``--num-speculative-tokens 3`` (``"num_speculative_tokens":
# 3`` in its ``speculative_config``), TensorRT-LLM's ``num_nextn_predict_layers=3`` (its MTP
# decoding config: the MTP modules, one draft token each); not ``EAGLE-3``, the method's version.
# SGLang's flags are read before them (:func:`_sglang_drafts`).
_DRAFT_TOKENS = re.compile(
    r"\bmtp\s*[=:]?\s*(\d+)(?![\d.])"
    r"|\b(\d+)\s*(?:mtp|nextn)\s+(?:layers?|modules?|heads?|steps?|tokens?)\b"
    r"|\b(\d+)\s*(?:draft|speculative)\s+tokens?\b"
    r"|\b(\d+)\s*-?\s*tokens?\s+(?:mtp|eagle\d*|draft|speculative)\b"
    r"|(?:num[_ -]?draft[_ -]?tokens|draft[_ -]?(?:len(?:gth)?|tokens)"
    r"|num[_ -]?nextn[_ -]?predict[_ -]?layers|speculative[_ -](?:num[_ -])?(?:draft[_ -])?tokens"
    r"|spec(?:ulative)?[_ -]len(?:gth)?)[\"']?\s*[=:]?\s*(\d+)"
    r"|\bdraft\s*[=:]?\s*(\d+)(?![\d.a-z])",
    re.IGNORECASE,
)
# SGLang's EAGLE and MTP flags (python/sglang/srt/server_args.py): ``--speculative-num-steps N``
# drafts N tokens a step; ``--speculative-num-draft-tokens M`` counts the tokens the verify pass
# takes, the last accepted one with the drafts, which SGLang sets to N + 1 when
# ``--speculative-eagle-topk`` is 1; a top-k above 1 drafts a tree of candidates.
_SGLANG_STEPS = re.compile(r"speculative[_-]num[_-]steps[\s=:]*(\d+)", re.IGNORECASE)
_SGLANG_TOPK = re.compile(r"speculative[_-]eagle[_-]topk[\s=:]*(\d+)", re.IGNORECASE)
_SGLANG_VERIFIED = re.compile(r"speculative[_-]num[_-]draft[_-]tokens[\s=:]*(\d+)", re.IGNORECASE)
# The same pair in words (``EAGLE MTP (3 steps, 4 draft tokens)``): N steps drafting N tokens that
# the verify pass takes with the last accepted one, N + 1 "draft tokens" in SGLang's count.
_SGLANG_STEPS_IN_WORDS = re.compile(r"\b(\d+)\s*steps?\s*,\s*(\d+)\s*draft\s+tokens?\b", re.IGNORECASE)
# The mean tokens a verify pass yields (``acceptance length 2.5``, ``AL 2.5``, ``accept length``,
# ``mean accepted tokens 2.5``), or the chance a draft token is kept (``acceptance rate 0.7``,
# ``acceptance 70%``).
_ACCEPTANCE_LENGTH = re.compile(
    r"(?:accept(?:ance|ed)?[_ -]?len(?:gth)?|\bal\b|(?:mean|average|avg)\.?\s+accepted\s+tokens"
    r"|accepted\s+tokens\s+per\s+(?:step|pass|iteration))\s*[=:]?\s*(\d+(?:\.\d+)?)",
    re.IGNORECASE,
)
_ACCEPTANCE_RATE = re.compile(
    r"accept(?:ance)?(?P<rate>[_ -]?rate)?\s*(?:of\s*)?[=:]?\s*(?P<value>\d+(?:\.\d+)?)\s*(?P<percent>%?)",
    re.IGNORECASE,
)


def _sglang_drafts(text: str) -> tuple[int, str] | None:
    """(draft tokens a step, how read) of SGLang's flags (:data:`_SGLANG_STEPS`), ``None`` where the
    row writes none; a tree of drafts (top-k above 1) is refused: lightspeed models a chain."""
    topk = _SGLANG_TOPK.search(text)
    if topk is not None and int(topk.group(1)) > 1:
        raise RowError(
            f"'{topk.group(0)}' drafts a tree of candidates; lightspeed models speculative decoding as a "
            "chain of draft tokens (top-k 1)"
        )
    steps = _SGLANG_STEPS.search(text)
    if steps is not None:
        return int(steps.group(1)), f" (SGLang's --speculative-num-steps {steps.group(1)})"
    in_words = _SGLANG_STEPS_IN_WORDS.search(text)
    if in_words is not None and int(in_words.group(2)) == int(in_words.group(1)) + 1:
        steps_said, verified_said = in_words.groups()
        return int(steps_said), f" (SGLang's {steps_said} steps verified as {verified_said} tokens)"
    verified = _SGLANG_VERIFIED.search(text)
    if verified is None:
        return None
    count = int(verified.group(1)) - 1
    how = (
        f" (SGLang's --speculative-num-draft-tokens {verified.group(1)} less the last accepted token, "
        "verified with the drafts)"
    )
    return count, how


def _draft_tokens(text: str) -> tuple[int, str] | None:
    """(draft tokens a step, how read) the lower-case ``text`` states (:func:`_sglang_drafts`,
    :data:`_DRAFT_TOKENS`), ``None`` where it states none."""
    sglang = _sglang_drafts(text)
    if sglang is not None:
        return sglang
    drafts = _DRAFT_TOKENS.search(text)
    return None if drafts is None else (int(next(group for group in drafts.groups() if group)), "")


def _acceptance(text: str, count: int) -> tuple[SpeculativeDecoding, str] | None:
    """(decoding of ``count`` draft tokens a step, what was read) at the acceptance length or rate
    the lower-case ``text`` states, ``None`` where it states neither. A bare ``acceptance 2.5`` (no
    ``rate``, no ``%``) between 1 and ``count + 1`` is a length: a rate is a share (0.7 or 70%)."""
    length = _ACCEPTANCE_LENGTH.search(text)
    if length is not None:
        return _from_length(count, length.group(1), f"acceptance length {length.group(1)}")
    rate = _ACCEPTANCE_RATE.search(text)
    if rate is None:
        return None
    value, percent = rate.group("value"), rate.group("percent")
    if not (rate.group("rate") or percent) and 1.0 < float(value) < count + 1.0:
        said = f"'{rate.group(0).strip()}' read as an acceptance length (a rate is 0.7 or 70%)"
        return _from_length(count, value, said)
    decoding = SpeculativeDecoding(count, float(value) / (100.0 if percent or float(value) > 1.0 else 1.0))
    return decoding, f"acceptance rate {value}{percent}"


def _from_length(count: int, length: str, said: str) -> tuple[SpeculativeDecoding, str]:
    """(decoding of ``count`` draft tokens whose verify passes yield ``length`` tokens, note)."""
    decoding = SpeculativeDecoding.from_acceptance_length(count, float(length))
    return decoding, f"{said} (each draft token kept with probability {decoding.acceptance_rate:.2f})"


def stated_speculation(row: PublishedRow, plan: InferencePlan) -> tuple[InferencePlan, str]:
    """``plan`` decoding speculatively as the row states it (draft tokens per step,
    :func:`_draft_tokens`, and an acceptance rate or length, :func:`_acceptance`, in the run's own
    cells or else in a note quoting its output, :meth:`PublishedRow.same_run_notes`), with its note;
    where the row names speculation without both, ``plan`` as it is and a note saying it is
    predicted without."""
    if not _names_speculation(row):
        return plan, ""
    text = row.described()
    drafts = _draft_tokens(text)
    try:
        accepted = _acceptance(text, drafts[0]) if drafts is not None else None
    except InvalidPlanError as error:
        raise RowError(f"speculative decoding as the row states it: {error}") from None
    if drafts is not None and accepted is None:  # printed beside the figure, in the same output
        try:
            quoted = _acceptance(row.same_run_notes(), drafts[0])
        except InvalidPlanError as error:  # a note's figure against the row's drafts: say so, go on
            return plan, f"speculative decoding named but not modelled: the note's {error}"
        accepted = None if quoted is None else (quoted[0], f"{quoted[1]}, from the run's own output")
    if drafts is None or accepted is None:
        return plan, (
            "speculative decoding named but not modelled: the row states no draft tokens per step "
            "and acceptance rate or length, so it is predicted without it"
        )
    decoding, said = accepted
    note = f"speculative decoding as the row states it: {drafts[0]} draft tokens a step{drafts[1]}, {said}"
    return replace(plan, speculative=decoding), note


__all__ = [
    "stated_speculation",
]
