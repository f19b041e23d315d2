"""Learning-curve tables shared by the ablation benches: one row per (variant, evaluation step)."""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["format_curves"]


def format_curves(curves: dict[str, list[dict]], columns: Sequence[str], width: int = 12) -> str:
    """A fixed-width table of ``{variant: [{"step", "seconds", column: value, ...}, ...]}``: columns ``variant``,
    ``step``, ``train s`` and then ``columns`` (values with 3 decimals, ``width`` characters each, or the column's
    name + 2 when that is longer)."""
    name_width = max([len("variant")] + [len(name) for name in curves]) + 2
    widths = [max(width, len(c) + 2) for c in columns]
    lines = [f"{'variant':{name_width}s}{'step':>6s}{'train s':>9s}"
             + "".join(f"{c:>{cw}s}" for c, cw in zip(columns, widths))]
    for name, rows in curves.items():
        for row in rows:
            lines.append(f"{name:{name_width}s}{row['step']:>6d}{row['seconds']:>9.0f}"
                         + "".join(f"{row[c]:>{cw}.3f}" for c, cw in zip(columns, widths)))
    return "\n".join(lines)
