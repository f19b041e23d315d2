"""Concept prompts as users give them: a phrase with its exemplar boxes (:class:`ConceptPrompt`), an exemplar written
as text (:func:`parse_exemplar`, ``"VIEW,x0,y0,x1,y1[,neg]"``) and the checks made before any model runs (exemplars
on the input's views, at most the checkpoint's number of concepts). ``vision-predict --concept / --exemplar``
(:mod:`vision.concept.cli`) and the demo's Track tab both read prompts through them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Sequence

from vision.errors import InputError

if TYPE_CHECKING:
    from vision.concept.predictor import ConceptPredictor

__all__ = ["ConceptPrompt", "parse_exemplar", "check_exemplars", "check_concept_count"]


@dataclass
class ConceptPrompt:
    """One concept of the command line: a ``phrase`` (None: exemplars only) and its ``exemplars``
    ``(view, [x0, y0, x1, y1] input pixels, positive)``, as :meth:`ConceptPredictor.add_concept` takes them."""

    phrase: str | None
    exemplars: list[tuple[int, list[float], bool]] = field(default_factory=list)



def parse_exemplar(text: str, name: str = "--exemplar") -> tuple[int, list[float], bool]:
    """``"VIEW,x0,y0,x1,y1[,neg|pos]"`` -> ``(view, [x0, y0, x1, y1], positive)``: view a whole number >= 0, the
    box four finite numbers with x0 < x1 and y0 < y1 (pixels of the input). :class:`InputError` naming the
    exemplar (``name`` and the text) otherwise."""
    fields = [f.strip() for f in str(text).split(",")]
    what = f"{name} {text!r}"
    if len(fields) not in (5, 6):
        raise InputError(f"{what} must be VIEW,x0,y0,x1,y1 or VIEW,x0,y0,x1,y1,neg ({len(fields)} values given)")
    positive = True
    if len(fields) == 6:
        if fields[5].lower() not in ("neg", "pos"):
            raise InputError(f"{what}: the sixth value must be 'neg' (not this) or 'pos', got {fields[5]!r}")
        positive = fields[5].lower() == "pos"
    try:
        view = int(fields[0])
    except ValueError:
        raise InputError(f"{what}: VIEW must be a whole number >= 0, got {fields[0]!r}") from None
    if view < 0:
        raise InputError(f"{what}: VIEW must be a whole number >= 0, got {view}")
    try:
        box = [float(v) for v in fields[1:5]]
    except ValueError:
        raise InputError(f"{what}: x0,y0,x1,y1 must be numbers (pixels)") from None
    if not all(math.isfinite(v) for v in box):
        raise InputError(f"{what}: x0,y0,x1,y1 must be finite numbers (pixels)")
    if not (box[0] < box[2] and box[1] < box[3]):
        raise InputError(f"{what}: the box must have x0 < x1 and y0 < y1")
    return view, box, positive



def check_exemplars(prompts: Sequence[ConceptPrompt], width: int, height: int, views: int | None,
                    name: str = "--exemplar") -> None:
    """Every exemplar lies on a view of the input (``views``: how many are used; None when a video does not say)
    and inside its ``width`` x ``height`` pixels; :class:`InputError` naming the exemplar (``name`` and its
    values) otherwise."""
    from vision.concept.predictor import check_exemplar

    for prompt in prompts:
        for view, box, positive in prompt.exemplars:
            text = ",".join(f"{v:g}" for v in (view, *box)) + ("" if positive else ",neg")
            check_exemplar(view, box, width, height, views, f"{name} {text!r}")


def check_concept_count(predictor: "ConceptPredictor", prompts: Sequence[ConceptPrompt], how: str = "") -> None:
    """At most the checkpoint's ``max_phrases`` concepts in one pass; one :class:`InputError` line otherwise
    (``how``: how the user gave them, for the message)."""
    limit = predictor.config.max_phrases
    if len(prompts) > limit:
        given = f"{len(prompts)} concepts given" + (f" {how}" if how else "")
        raise InputError(f"{given}; this checkpoint takes at most {limit} in one pass (max_phrases)")
