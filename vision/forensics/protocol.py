"""Which footage a benchmark clip comes from, for protocols that hold footage out (leave-one-source-out).

A clip's *footage* is the real camera video or photograph its pixels come from: a real clip's ``source``; for a
generated clip the source it was made from (a still cut from a real video, named ``<stem>_frame<t>`` by
:func:`vision.prepare.aigv.frame_stills` and recorded as ``footage`` by newer preparations, belongs to that
video); a splice also carries its ``donor``'s footage. Holding footage ``S`` out means no clip whose footage
includes ``S`` trains, calibrates or thresholds anything.
"""

from __future__ import annotations

import re

__all__ = ["footage_of", "footages_of"]

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
