"""The claim a comparison is run for, said in one plain line per split: does a method beat its control by a target
margin of one figure? ``make train-tracking`` ends with G2TAM against its memory-bank control this way, so that a
change which erases G2TAM's lead shows in the run that made it.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping

__all__ = ["TRACKING_MARGINS", "Verdict", "margin_verdicts"]

#: G2TAM's lead over the control in point J&F that each validation split of ``benchmarks/bench_tracking.py`` is
#: held to: where a 3D memory keeps identity and a 2D one cannot (unordered views, long occlusions) the target
#: margin; on video G2TAM must at least beat it (docs/tracking.md gives the figures).
TRACKING_MARGINS: dict[str, float] = {"val_unordered": 0.10, "val_long_occlusion": 0.10, "val_video": 0.0}


@dataclasses.dataclass(frozen=True)
class Verdict:
    """One split's verdict: ``lead`` = method - control (NaN when either is missing), met when ``lead > margin``
    (strictly: equal is not beating)."""

    split: str
    lead: float
    margin: float

    @property
    def met(self) -> bool:
        return bool(self.lead > self.margin)

    def line(self, method: str, control: str, figure: str) -> str:
        """The plain line: ``G2TAM beats the control by +0.126 point J&F on val_unordered (target > +0.100)`` or
        ``... does NOT beat the control by the target: ...``."""
        lead = "n/a" if math.isnan(self.lead) else f"{self.lead:+.3f}"
        target = f"target > {self.margin:+.3f}"
        if self.met:
            return f"{method} beats {control} by {lead} {figure} on {self.split} ({target})"
        return f"{method} does NOT beat {control} by the target on {self.split}: {lead} {figure} ({target})"


def margin_verdicts(method: Mapping[str, float], control: Mapping[str, float],
                    margins: Mapping[str, float]) -> list[Verdict]:
    """One :class:`Verdict` per split of ``margins`` (in its order) present in ``method`` or ``control``: each maps
    a split to the figure (higher is better); a split one of them lacks, or a NaN figure, is not met."""
    verdicts = []
    for split, margin in margins.items():
        if split not in method and split not in control:
            continue
        lead = float(method.get(split, math.nan)) - float(control.get(split, math.nan))
        verdicts.append(Verdict(split, lead, float(margin)))
    return verdicts
