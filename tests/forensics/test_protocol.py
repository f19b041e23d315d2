"""Which footage a benchmark clip draws on (leave-one-source-out)."""

from __future__ import annotations

from vision.forensics.protocol import footage_of, footages_of


def test_a_still_cut_from_a_video_belongs_to_that_video():
    assert footage_of("bikes_frame0018") == "bikes"
    assert footage_of("carphone_pristine_frame0102") == "carphone_pristine"
    assert footage_of("chelsea") == "chelsea"
    assert footage_of(None) is None


def test_footages_include_the_splice_donor_and_prefer_the_recorded_footage():
    assert footages_of({"source": "bikes", "donor": "carphone_pristine"}) == {"bikes", "carphone_pristine"}
    assert footages_of({"source": "animate_x", "footage": "bikes"}) == {"bikes"}
    assert footages_of({"source": "synthetic", "donor": None}) == {"synthetic"}
