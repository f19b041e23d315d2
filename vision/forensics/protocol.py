"""Which footage a benchmark clip comes from, for protocols that hold footage out (leave-one-source-out).

A clip's *footage* is the real camera video or photograph its pixels come from: a real clip's ``source``; for a
generated clip the source it was made from (a still cut from a real video, named ``<stem>_frame<t>`` by
:func:`vision.prepare.aigv.frame_stills` and recorded as ``footage`` by newer preparations, belongs to that
video); a splice also carries its ``donor``'s footage. Holding footage ``S`` out means no clip whose footage
includes ``S`` trains, calibrates or thresholds anything.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

__all__ = ["footage_of", "footages_of", "real_footages"]

_FRAME_STILL = re.compile(r"^(?P<stem>.+)_frame\d+$")


def footage_of(source: str | None) -> str | None:
    """The footage of a ``source`` name: ``"bikes_frame0018"`` -> ``"bikes"``; other names unchanged."""
    if not source:
        return None
    match = _FRAME_STILL.match(source)
    return match.group("stem") if match else source


def footages_of(video: dict) -> set[str]:
    """Every footage a video entry (``{source, donor, footage}``, any may be absent) draws pixels from."""
    out = {footage_of(video.get("footage")) or footage_of(video.get("source"))}
    out.add(footage_of(video.get("donor")))
    return {f for f in out if f}


def real_footages(videos: Iterable[dict]) -> list[str]:
    """The footage a leave-one-source-out protocol holds out in turn: every footage of a real video entry (``label``
    ``"real"``, or ``family`` ``"real"`` in feature rows that carry no label), sorted, each once, whichever sides
    its clips lie on."""
    real = (v for v in videos if (v["label"] if "label" in v else v.get("family")) == "real")
    return sorted({f for v in real for f in footages_of(v)})
