"""Concept results get the validation of tracking results (issue 46): every malformed record is one DataError
naming the file, the record's field and its value (from ``vision-evaluate``: exit status 2, one ``error:`` line and
no metrics file), and ids of any size are scored (a ``track_id`` of 2**63 ended in an OverflowError)."""

from __future__ import annotations

import copy
import json
import math
from pathlib import Path
from typing import Any, Callable

import hypothesis.strategies as st
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

from tests.evaluation.test_concept import build, random_videos, small_case
from tests.evaluation.test_results import assert_one_line_error, run_cli
from vision.data.masks import encode_mask
from vision.errors import DataError
from vision.evaluation.evaluate import evaluate
from vision.evaluation.tasks.concept import validate_concept_results

# small_case(): results[0] and results[1] are track 7 (mug, category 1) of video 1 on images 100 and 101; results[2]
# is the presence of mug on image 100. Video 2 (image 200) queries mug only; categories 3 and 4 are queried nowhere.
INSTANCE, PRESENCE = 0, 2
INSTANCE_FIELDS = ("video_id", "image_id", "track_id", "category_id", "phrase", "segmentation", "bbox", "score")
PRESENCE_FIELDS = ("video_id", "image_id", "category_id")  # without "presence" a record is an instance record
INSTANCE_ONLY = ("track_id", "phrase", "segmentation", "bbox", "score", "prompt_type")

Edit = Callable[[list], None]


def _set(i: int, key: str, value: Any) -> Edit:
    def edit(results: list) -> None:
        results[i][key] = value
    return edit


def _update(i: int, **values: Any) -> Edit:
    def edit(results: list) -> None:
        results[i].update(values)
    return edit


def _drop(i: int, key: str) -> Edit:
    def edit(results: list) -> None:
        del results[i][key]
    return edit


def _replace(i: int, value: Any) -> Edit:
    def edit(results: list) -> None:
        results[i] = value
    return edit


def _duplicate(i: int) -> Edit:
    def edit(results: list) -> None:
        results.append(copy.deepcopy(results[i]))
    return edit


NOT_INTEGERS = [True, False, 7.0, 7.5, "7", None, [7], {"id": 7}]
NOT_UNIT_NUMBERS = [True, "0.5", None, [0.5], {}, 1.5, -0.1, 1e300, -1e300, 10 ** 30, 10 ** 400, math.nan, math.inf,
                    -math.inf]

# (name, edit, the field the error names, words of its message)
REFUSED: list[tuple[str, Edit, str, str]] = [
    *[(f"instance {key}={value!r}", _set(INSTANCE, key, value), f"results[0].{key}", "")
      for key in ("video_id", "image_id", "track_id", "category_id") for value in NOT_INTEGERS],
    *[(f"presence {key}={value!r}", _set(PRESENCE, key, value), f"results[2].{key}", "")
      for key in PRESENCE_FIELDS for value in NOT_INTEGERS],
    *[(f"score={value!r}", _set(INSTANCE, "score", value), "results[0].score", "") for value in NOT_UNIT_NUMBERS],
    *[(f"presence={value!r}", _set(PRESENCE, "presence", value), "results[2].presence", "")
      for value in NOT_UNIT_NUMBERS],
    *[(f"bbox={value!r}", _set(INSTANCE, "bbox", value), "results[0].bbox", "")
      for value in ([0, 0, 2], [0, 0, 2, 2, 2], [0, 0, -1, 2], [0, 0, "2", 2], [True, 0, 2, 2], [0, 0, math.nan, 2],
                    None, "0 0 2 2", {"x": 0})],
    *[(f"phrase={value!r}", _set(INSTANCE, "phrase", value), "results[0].phrase", "")
      for value in (7, None, ["mug"], "cup", "", "Mug", "bowl")],
    *[(f"prompt_type={value!r}", _set(INSTANCE, "prompt_type", value), "results[0].prompt_type", "expected a string")
      for value in (7, None, ["concept"])],
    *[(f"segmentation {name}", _set(INSTANCE, "segmentation", value), "results[0].segmentation", "")
      for name, value in (("of 5 x 4", encode_mask(np.ones((5, 4), bool))),
                          ("of 4 x 5", encode_mask(np.ones((4, 5), bool))),
                          ("of size [4, 4] over 20 pixels", {"size": [4, 4], "counts": [0, 20]}),
                          ("counts garbage", {"size": [4, 4], "counts": "\x7f"}),
                          ("counts short", {"size": [4, 4], "counts": [3, 4]}),
                          ("polygon", [[0, 0, 2, 0, 2, 2]]), ("null", None))],
    *[(f"instance without {key}", _drop(INSTANCE, key), "results[0]", "missing required key")
      for key in INSTANCE_FIELDS],
    *[(f"presence without {key}", _drop(PRESENCE, key), "results[2]", "missing required key")
      for key in PRESENCE_FIELDS],
    ("presence without presence", _drop(PRESENCE, "presence"), "results[2].track_id", "missing required key"),
    # a record of both kinds: its instance fields were silently ignored (only track_id and segmentation were refused)
    *[(f"presence with {key}", _set(PRESENCE, key, value), f"results[2].{key}", f"presence record carries no {key}")
      for key, value in zip(INSTANCE_ONLY, (7, "mug", encode_mask(np.ones((4, 4), bool)), [0, 0, 4, 4], 0.9,
                                            "concept"))],
    ("instance twice", _duplicate(INSTANCE), "results[3]", "duplicate record for this (track_id, image_id)"),
    ("presence twice", _duplicate(PRESENCE), "results[3]", "duplicate record for this (image_id, category_id)"),
    ("track with two categories", _update(1, category_id=2, phrase="bowl"), "results[1].category_id",
     "track 7 of video 1 has category 1"),
    *[(f"record {value!r}", _replace(INSTANCE, value), "results[0]", "each result must be an object")
      for value in (7, None, "record", [], [1, 2])],
    ("unknown video", _set(INSTANCE, "video_id", 9), "results[0].video_id", "not in the split"),
    ("unknown video 2**63", _set(INSTANCE, "video_id", 2 ** 63), "results[0].video_id", "not in the split"),
    ("unknown image", _set(INSTANCE, "image_id", 999), "results[0].image_id", "not in the split"),
    ("image of another video", _set(INSTANCE, "image_id", 200), "results[0].video_id", "belongs to video 2"),
    ("unknown category", _set(INSTANCE, "category_id", 77), "results[0].category_id", "not in the split's categories"),
    ("unknown category 2**63", _set(PRESENCE, "category_id", 2 ** 63), "results[2].category_id",
     "not in the split's categories"),
    ("phrase not queried", _set(PRESENCE, "category_id", 3), "results[2].category_id", "not queried on video 1"),
]


@pytest.mark.parametrize("edit, field, words", [c[1:] for c in REFUSED], ids=[c[0] for c in REFUSED])
def test_malformed_records_are_one_data_error_naming_file_field_and_value(tmp_path, edit, field, words):
    split, results = small_case()
    edit(results)
    with pytest.raises(DataError) as info:  # as an API caller passes them
        evaluate(split, results, "concept")
    assert info.value.field.startswith(field) and words in str(info.value) and "\n" not in str(info.value)
    if field != "results[0]" or words:  # the value is shown after the field
        assert f"{info.value.field}=" in str(info.value)
    path = tmp_path / "results.json"
    path.write_text(json.dumps(results))  # as a file: NaN, Infinity and long integers as other tools write them
    with pytest.raises(DataError) as info:
        evaluate(split, path, "concept")
    assert info.value.file == str(path) and info.value.field.startswith(field) and "\n" not in str(info.value)


def test_the_command_line_refuses_in_one_line_and_writes_no_metrics(tmp_path, capsys):
    split, results = small_case()
    split_path = tmp_path / "split.json"
    split_path.write_text(json.dumps(split))
    out = tmp_path / "metrics.json"
    for edit, field in ((_set(INSTANCE, "track_id", True), "results[0].track_id"),
                        (_set(PRESENCE, "score", 0.9), "results[2].score"),
                        (_duplicate(INSTANCE), "results[3]")):
        bad = copy.deepcopy(results)
        edit(bad)
        path = tmp_path / "results.json"
        path.write_text(json.dumps(bad))
        code, err = run_cli(capsys, split_path, path, "concept", "--out", str(out))
        assert_one_line_error(code, err, path, field)
        assert not out.exists()
    path.write_text(json.dumps(results).replace('"track_id": 7', '"track_id": ' + "9" * 5000))
    code, err = run_cli(capsys, split_path, path, "concept", "--out", str(out))
    assert_one_line_error(code, err, path, "results[0].track_id")
    assert not out.exists()


def _remapped(split: dict, results: list[dict], track: Callable[[int], int], category: Callable[[int], int]) -> None:
    """Every track id and category id of ``split`` and ``results`` replaced, in place, by ``track(id)`` and
    ``category(id)``."""
    for t in split["tracks"]:
        t["id"], t["category_id"] = track(t["id"]), category(t["category_id"])
    for a in split["annotations"]:
        a["track_id"], a["category_id"] = track(a["track_id"]), category(a["category_id"])
    for c in split["categories"]:
        c["id"] = category(c["id"])
    for v in split["videos"]:
        if "concepts" in v:
            v["concepts"] = [category(c) for c in v["concepts"]]
    for r in results:
        r["category_id"] = category(r["category_id"])
        if "track_id" in r:
            r["track_id"] = track(r["track_id"])


def _increasing(ids: set[int], offset: int, gaps: list[int]) -> Callable[[int], int]:
    """A strictly increasing map of ``ids``: the first to ``offset``, each next one ``gaps[k]`` (>= 1) further."""
    image, value = {}, offset
    for k, ident in enumerate(sorted(ids)):
        value += gaps[k % len(gaps)] if k else 0
        image[ident] = value
    return image.__getitem__


@pytest.mark.parametrize("offset", [2 ** 63, -(2 ** 63) - 1, 2 ** 64, 10 ** 30, -(10 ** 300)])
def test_ids_of_any_size_are_scored_as_small_ones(offset):
    """Ids are any integers, as in tracking results: ids beyond int64 give the figures of small ids in the same
    order (the scorer ranks them)."""
    split, results = build(random_videos(np.random.default_rng(3)))
    expected = evaluate(split, results, "concept")
    track_ids = {t["id"] for t in split["tracks"]} | {r["track_id"] for r in results if "track_id" in r}
    _remapped(split, results, _increasing(track_ids, offset, [1, 2 ** 64]),
              _increasing({c["id"] for c in split["categories"]}, offset, [3]))
    assert any(abs(r.get("track_id", 0)) >= 2 ** 63 for r in results)
    validate_concept_results(results, split)
    assert evaluate(split, results, "concept") == expected


@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
@given(seed=st.integers(0, 2 ** 32 - 1),
       offset=st.sampled_from([0, 2 ** 63 - 3, 2 ** 63, -(2 ** 63) - 1, 2 ** 64]) | st.integers(-(2 ** 80), 2 ** 80),
       gaps=st.lists(st.sampled_from([1, 2 ** 63, 2 ** 64]) | st.integers(1, 2 ** 80), min_size=1, max_size=4))
def test_any_order_keeping_renumbering_of_ids_keeps_the_figures(seed, offset, gaps):
    """Track ids and category ids moved by any strictly increasing map (mostly beyond int64)."""
    split, results = build(random_videos(np.random.default_rng(seed)))
    expected = evaluate(split, results, "concept")
    track_ids = {t["id"] for t in split["tracks"]} | {r["track_id"] for r in results if "track_id" in r}
    _remapped(split, results, _increasing(track_ids, offset, gaps),
              _increasing({c["id"] for c in split["categories"]}, -offset, gaps[::-1]))
    assert evaluate(split, results, "concept") == expected


def test_what_scoring_does_not_read_is_left_alone():
    """As in tracking results: keys of neither kind are not checked (but for finite numbers). An instance record
    with an empty mask (the format has none; a writer may) is a detection of IoU 0 for cgF1 and AP, as sam3 counts
    it, but not for HOTA, which sees non-empty masks only."""
    split, results = small_case()
    expected = evaluate(split, results, "concept")
    results[INSTANCE]["note"] = {"by": "a tool", "version": [1, 2]}
    results[PRESENCE]["source"] = "presence head"
    assert evaluate(split, results, "concept") == expected
    results.append({**results[INSTANCE], "track_id": 8, "segmentation": encode_mask(np.zeros((4, 4), bool))})
    with_empty = evaluate(split, results, "concept")
    assert {k: v for k, v in with_empty.items() if "HOTA" in k} == {k: v for k, v in expected.items() if "HOTA" in k}
    assert with_empty["pmF1"] < expected["pmF1"]
    results[PRESENCE]["source"] = math.nan
    with pytest.raises(DataError, match=r"results\[2\]\.source"):
        evaluate(split, results, "concept")


def test_python_integers_beyond_the_digit_limit_are_a_data_error():
    """A results file reads such a literal as infinite (refused by field, tested above); an API caller's Python int
    of 5000 digits reaches the error message itself."""
    split, results = small_case()
    results[INSTANCE]["score"] = 10 ** 5000
    with pytest.raises(DataError, match=r"results\[0\]\.score"):
        evaluate(split, results, "concept")
