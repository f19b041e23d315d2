"""The batch RLE decoder and the fast paths of split validation agree with the one-by-one checks.

``rle_counts_from_string`` (pure Python) is the reference decoder; ``rle_counts_batch`` must give the same runs for
every string it says it decoded, and refuse (leave to the reference) every malformed one. ``validate_split``'s fast
paths must give the same verdict, and the same first error, as the one-by-one checks.
"""

from __future__ import annotations

import copy
import math
from typing import Any

import hypothesis.strategies as st
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from pycocotools import mask as mask_utils

from vision.data import schema, schema_columns
from vision.data.masks import encode_mask
from vision.data.rle import (FAST_RLE_RUN_CHARS, MAX_IMAGE_PIXELS, MAX_RLE_RUN_CHARS, rle_counts_batch,
                             rle_counts_from_string, rle_runs_summary)
from vision.data.schema import validate_split
from vision.errors import DataError


def encode_counts(runs: list[int], spell: dict[int, int] | None = None) -> str:
    """Compressed COCO RLE counts of ``runs`` (pycocotools' format: from run 3 on, the difference to the run two
    places earlier; 5 bits per character, continuation bit 0x20, sign bit 0x10 on the last character).
    ``spell[j] = n`` writes run ``j`` with exactly ``n`` characters (a valid, non-minimal spelling)."""
    spell = spell or {}
    out = []
    for j, run in enumerate(runs):
        x = run - runs[j - 2] if j > 2 else run
        if j in spell:
            n = spell[j]
            assert -(1 << (5 * n - 1)) <= x < (1 << (5 * n - 1)), "value does not fit the spelling"
            for k in range(n):
                c = (x >> (5 * k)) & 0x1F
                out.append(chr(48 + (c | (0x20 if k < n - 1 else 0))))
            continue
        while True:
            c = x & 0x1F
            x >>= 5
            done = (x == 0 and not c & 0x10) or (x == -1 and c & 0x10)
            out.append(chr(48 + (c if done else c | 0x20)))
            if done:
                break
    return "".join(out)


def batch_runs(strings: list[str]) -> list[list[int] | None]:
    """Per string: the batch decoder's runs, or None where it did not decode the string."""
    runs, offsets, decoded = rle_counts_batch(strings)
    return [runs[offsets[i]:offsets[i + 1]].tolist() if decoded[i] else None for i in range(len(strings))]


def agrees(got: list[int], expected: list[int]) -> bool:
    """The batch decoder's promise: the reference's runs where those are all in 0..MAX_IMAGE_PIXELS, else some run
    out of that range as well (runs are computed modulo 2**32)."""
    def in_range(runs: list[int]) -> bool:
        return all(0 <= r <= MAX_IMAGE_PIXELS for r in runs)

    return got == expected if in_range(expected) else not in_range(got)


def reference(s: str) -> list[int] | None:
    try:
        return rle_counts_from_string(s)
    except ValueError:
        return None


def _mask_cases() -> list[np.ndarray]:
    rng = np.random.default_rng(7)
    cases = [np.zeros((1, 1), bool), np.ones((1, 1), bool), np.zeros((12, 16), bool), np.ones((12, 16), bool),
             np.ones((1, 17), bool), np.zeros((17, 1), bool), rng.random((7, 13)) < 0.5,
             rng.random((33, 1)) < 0.5, rng.random((1, 33)) < 0.5]
    for y, x in [(0, 0), (6, 12), (0, 12), (6, 0), (3, 5)]:  # single pixels, corners included
        m = np.zeros((7, 13), bool)
        m[y, x] = True
        cases.append(m)
    checker = (np.indices((9, 11)).sum(0) % 2).astype(bool)  # a run per pixel
    big = np.zeros((300, 500), bool)
    big[40:260, 100:450] = True  # runs of thousands of pixels: multi-character values, negative deltas
    cases += [checker, ~checker, big, ~big]
    return cases


@pytest.mark.parametrize("mask", _mask_cases(), ids=lambda m: f"{m.shape[0]}x{m.shape[1]}-{int(m.sum())}px")
def test_batch_decoder_matches_reference_on_masks(mask):
    counts = encode_mask(mask)["counts"]
    assert batch_runs([counts]) == [rle_counts_from_string(counts)]
    assert sum(rle_counts_from_string(counts)) == mask.size


def test_own_encoder_agrees_with_pycocotools():
    runs = [5, 100, 3, 1, 200, 2, 0, 7, 31, 16, 15, 17, 1 << 20]
    h, w = 7, sum(runs) // 7 + 1
    runs[-1] += h * w - sum(runs)
    rle = mask_utils.frPyObjects({"size": [h, w], "counts": runs}, h, w)
    assert rle["counts"].decode("ascii") == encode_counts(runs)


@pytest.mark.parametrize("runs", [
    [0, 1 << 28],  # a full 16384 x 16384 mask: a 7-character run
    [(1 << 28) - 1, 1],  # one pixel at the end
    [1 << 27, 1, (1 << 27) - 1],
    [3, 1 << 20, 1 << 21, 5, 2, 1 << 22, 0, 1],  # large negative and positive deltas
    [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1],  # odd / even chains going up and down
    [15, 16, 31, 32, 33, 511, 512, 513, 16383, 16384, 16385],  # around the 5-bit chunk boundaries
])
def test_long_runs_and_deltas(runs):
    counts = encode_counts(runs)
    assert rle_counts_from_string(counts) == runs
    assert batch_runs([counts]) == [runs]


def test_negative_runs_decode_identically():
    """Malformed (negative) runs still decode alike; refusing them is the validator's job."""
    runs = [4, -3, 10, 2, -7, 0, -(1 << 28)]
    counts = encode_counts(runs)
    assert rle_counts_from_string(counts) == runs
    assert batch_runs([counts]) == [runs]
    plausible, _ = rle_runs_summary([counts])
    assert not plausible[0]


def test_runs_past_int32_are_still_out_of_range():
    """Runs growing by 2**28 per step pass 2**31 (the decoder's int32 wraps): still seen as out of range."""
    runs = [0] + [((j + 1) // 2) << 28 if j % 2 else 0 for j in range(1, 24)]
    counts = encode_counts(runs)
    got = batch_runs([counts])[0]
    assert rle_counts_from_string(counts) == runs and got is not None and got != runs
    assert agrees(got, runs)
    assert not rle_runs_summary([counts])[0][0]
    plausible, _ = rle_runs_summary([counts, encode_counts(runs[:3])])
    assert plausible.tolist() == [False, True]


@pytest.mark.parametrize("n", range(1, MAX_RLE_RUN_CHARS + 2))
def test_spellings_of_every_length(n):
    runs = [9, 4, 1, 6]
    counts = encode_counts(runs, spell={1: n, 3: n})
    expected = reference(counts)
    got = batch_runs([counts])[0]
    if n <= FAST_RLE_RUN_CHARS:
        assert got == expected == runs
    elif n <= MAX_RLE_RUN_CHARS:  # valid, left to the reference decoder
        assert got is None and expected == runs
    else:
        assert got is None and expected is None


@pytest.mark.parametrize("counts", [
    " ", "/", "p", "\x7f", "\x00", "é", "ab\udcff", "0 1", "1" + chr(48 + 0x20),  # bad characters / truncated
    chr(48 + 0x20), "ooo", "P" * (MAX_RLE_RUN_CHARS + 1) + "0", "12\n3",
])
def test_malformed_strings_are_left_to_the_reference(counts):
    assert reference(counts) is None
    assert batch_runs([counts]) == [None]


def test_neighbours_do_not_affect_each_other():
    strings = [encode_counts([3, 4, 5]), "1" + chr(48 + 0x20), encode_counts([0, 12]), "x~", "",
               encode_counts([100, 1, 1, 98]), "P" * 9 + "0", encode_counts([2, 2, 2, 2, 2, 2])]
    together = batch_runs(strings)
    assert together == [batch_runs([s])[0] for s in strings]
    assert together[4] == [] and together[1] is None and together[3] is None and together[6] is None
    assert all(r is None or agrees(r, reference(s)) for s, r in zip(strings, together))


def test_random_strings_agree_with_reference():
    rng = np.random.default_rng(11)
    alphabet = [chr(c) for c in range(48, 112)] + ["/", "p", " ", "é"]
    strings = ["".join(rng.choice(alphabet[:64] if rng.random() < 0.8 else alphabet, int(rng.integers(0, 25))))
               for _ in range(3000)]
    strings += [encode_mask(rng.random((int(rng.integers(1, 30)), int(rng.integers(1, 30)))) < rng.random())["counts"]
                for _ in range(300)]
    runs, offsets, decoded = rle_counts_batch(strings)
    for i, s in enumerate(strings):
        expected = reference(s)
        if decoded[i]:
            assert agrees(runs[offsets[i]:offsets[i + 1]].tolist(), expected), s
        elif expected is not None:  # valid but not decoded: only for a run spelled with more characters
            lengths, k = [], 0
            for ch in s:
                k += 1
                if not (ord(ch) - 48) & 0x20:
                    lengths.append(k)
                    k = 0
            assert max(lengths) > FAST_RLE_RUN_CHARS, s
    assert decoded.sum() > 1000


def test_summary_sums_and_ranges():
    strings = [encode_counts([3, 4, 5]), "", encode_counts([1, -1, 12]), encode_counts([0, (1 << 28) + 1]), "p"]
    plausible, sums = rle_runs_summary(strings)
    assert plausible.tolist() == [True, True, False, False, False]
    assert sums[0] == 12 and sums[1] == 0


def test_empty_batch():
    runs, offsets, decoded = rle_counts_batch([])
    assert runs.size == 0 and offsets.tolist() == [0] and decoded.size == 0
    runs, offsets, decoded = rle_counts_batch(["", ""])
    assert offsets.tolist() == [0, 0, 0] and decoded.tolist() == [True, True]
    strings = ["", encode_counts([1, 2, 3, 4]), "", encode_counts([5]), "", ""]
    assert batch_runs(strings) == [[], [1, 2, 3, 4], [], [5], [], []]


# ---------------------------------------------------------------- split validation refuses malformed RLE


MALFORMED = [
    ("negative run", encode_counts([10, -2, 184]), "negative run length"),
    ("sum too small", encode_counts([10, 20, 30]), "sum to 60"),
    ("sum too large", encode_counts([10, 20, 200]), "sum to 230"),
    ("empty", "", "sum to 0"),
    ("bad character", "1 1", "not in the RLE alphabet"),
    ("non-ASCII", "1é1", "not in the RLE alphabet"),
    ("truncated", encode_counts([10, 20, 162]) + chr(48 + 0x20), "truncated"),
    ("run too long", "P" * (MAX_RLE_RUN_CHARS + 1) + "0", "more than 13 characters"),
]


@pytest.mark.parametrize("name,counts,message", MALFORMED, ids=[m[0] for m in MALFORMED])
def test_malformed_rle_in_a_split_names_the_field(split_dict, fixture_dir, name, counts, message):
    split_dict["annotations"][0]["segmentation"]["counts"] = counts
    with pytest.raises(DataError, match=message) as info:
        validate_split(split_dict, fixture_dir, "fixture.json")
    assert info.value.field == "annotations[0].segmentation.counts"
    assert "fixture.json" in str(info.value)


def test_long_valid_spelling_is_accepted(split_dict, fixture_dir):
    """A run spelled with 8..13 characters is valid (pycocotools reads it): the reference decoder accepts it."""
    seg = split_dict["annotations"][0]["segmentation"]
    runs = rle_counts_from_string(seg["counts"])
    seg["counts"] = encode_counts(runs, spell={0: 12})
    validate_split(split_dict, fixture_dir, "fixture.json")


def test_first_error_in_file_order_wins(split_dict, fixture_dir):
    stand_alone = [i for i, a in enumerate(split_dict["annotations"]) if "track_id" not in a]
    rle_at = next(i for i in stand_alone if isinstance(split_dict["annotations"][i].get("segmentation"), dict))
    d = copy.deepcopy(split_dict)
    d["annotations"][0]["segmentation"]["counts"] = "1 1"  # deferred: checked in a batch
    d["annotations"][-1]["bbox"] = [1.0, 1.0, -4.0, 4.0]  # found one by one, later in the file
    with pytest.raises(DataError) as info:
        validate_split(d, fixture_dir, "f.json")
    assert info.value.field == "annotations[0].segmentation.counts"
    d = copy.deepcopy(split_dict)
    d["annotations"][0]["bbox"] = [1.0, 1.0, -4.0, 4.0]
    d["annotations"][rle_at]["segmentation"]["counts"] = "1 1"
    with pytest.raises(DataError) as info:
        validate_split(d, fixture_dir, "f.json")
    assert info.value.field == "annotations[0].bbox"


def _big_split(n: int) -> dict:
    mask = np.zeros((6, 8), bool)
    mask[1:4, 2:7] = True
    images = [{"id": 1, "file_name": "a.png", "width": 8, "height": 6}]
    annotations = [{"id": i + 1, "image_id": 1, "category_id": 1, "bbox": [2.0, 1.0, 5.0, 3.0],
                    "segmentation": encode_mask(mask), "area": 15.0, "iscrowd": 0} for i in range(n)]
    return {"images": images, "annotations": annotations, "categories": [{"id": 1, "name": "thing"}]}


@pytest.mark.parametrize("bad_at", [0, 1, 2, 6, 7, 8, 22])
def test_errors_across_batches_name_the_right_annotation(tmp_path, monkeypatch, bad_at):
    monkeypatch.setattr(schema_columns.DeferredRle, "MAX_STRINGS", 3)
    dataset = _big_split(23)
    validate_split(dataset, tmp_path, "big.json", check_files=False)
    dataset["annotations"][bad_at]["segmentation"]["counts"] = encode_counts([1, -1, 48])
    if bad_at + 4 < 23:
        dataset["annotations"][bad_at + 4]["iscrowd"] = 3
    with pytest.raises(DataError, match="negative run length") as info:
        validate_split(dataset, tmp_path, "big.json", check_files=False)
    assert info.value.field == f"annotations[{bad_at}].segmentation.counts"


# ---------------------------------------------------------------- fast paths == one-by-one checks


def _one_by_one(c, dataset, images, categories, tracks) -> None:
    first: dict = {}
    track_frames: dict = {}
    for i, ann in enumerate(c.list_(dataset["annotations"], "annotations")):
        schema._check_annotation(c, i, ann, first, track_frames, images, categories, tracks)


def _verdict(dataset: Any, root, check_files: bool = True) -> tuple | None:
    try:
        validate_split(dataset, root, "f.json", check_files=check_files)
    except DataError as exc:
        return exc.field, str(exc)
    return None


def _reference_verdict(dataset: Any, root, check_files: bool = True) -> tuple | None:
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(schema, "_check_annotations", _one_by_one)
        mp.setattr(schema_columns.Listings, "plain_file", lambda self, relative: False)
        return _verdict(dataset, root, check_files)


tricky_number = st.sampled_from([0, 1, -1, 0.0, -0.0, -1.0, -1.0000001, 2.5, 11, 12, 13, 13.0000001, 16, 17, 17.5,
                                 True, False, None, "3", math.nan, math.inf, -math.inf, 10**400, -10**400, 1e308,
                                 [1], {"a": 1}])
tricky_value = tricky_number | st.sampled_from(["", "1 1", "0", "P" * 9 + "0", "?", "1" + chr(48 + 0x20)]) | st.lists(tricky_number, max_size=10) | st.lists(
    st.lists(tricky_number, min_size=5, max_size=9), max_size=2)
fields = st.sampled_from(["id", "image_id", "category_id", "bbox", "area", "iscrowd", "segmentation", "score",
                          "bbox[i]", "polygon[i]", "size", "counts", "counts[i]", "file_name", "width", "height",
                          "annotated"])


@pytest.mark.slow
@settings(max_examples=400, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
@given(data=st.data())
def test_fast_paths_agree_with_one_by_one_checks(split_dict, fixture_dir, data):
    dataset = copy.deepcopy(split_dict)
    anns = dataset["annotations"]
    if data.draw(st.booleans()):  # annotations without tracks take the fast path
        for ann in anns:
            ann.pop("track_id", None)
    for _ in range(data.draw(st.integers(1, 3))):
        field = data.draw(fields)
        value = data.draw(tricky_value)
        if field in ("file_name", "width", "height", "annotated"):
            img = data.draw(st.sampled_from(dataset["images"]))
            img[field] = data.draw(st.sampled_from(["images/0100.png", "images/../images/0100.png", "./images/0100.png",
                                                    "images//0100.png", "images/0001.png", "images/nope.png",
                                                    "/images/0100.png", "images", "videos/real.mp4", ""]))\
                if field == "file_name" else value
            continue
        ann = data.draw(st.sampled_from(anns))
        if field in ("bbox[i]", "polygon[i]"):
            target = ann.get("bbox") if field == "bbox[i]" else ann.get("segmentation")
            if field == "polygon[i]" and isinstance(target, list) and target and isinstance(target[0], list):
                target = target[0]
            if isinstance(target, list) and target:
                target[data.draw(st.integers(0, len(target) - 1))] = value
        elif field in ("size", "counts", "counts[i]"):
            seg = ann.get("segmentation")
            if isinstance(seg, dict):
                if field == "counts[i]":
                    seg["counts"] = rle_counts_from_string(seg["counts"]) if isinstance(seg["counts"], str) \
                        else seg["counts"]
                    if isinstance(seg["counts"], list) and seg["counts"]:
                        seg["counts"][data.draw(st.integers(0, len(seg["counts"]) - 1))] = value
                else:
                    seg[field] = value
        elif data.draw(st.booleans()):
            ann[field] = value
        else:
            ann.pop(field, None)
    for check_files in (True, False):
        assert _verdict(dataset, fixture_dir, check_files) == _reference_verdict(dataset, fixture_dir, check_files)


# the fixture's images are 16 x 12: values at and around the borders (1 px tolerance), wrong types, non-finite
TRICKY = [0, 1, 2, -1, 0.0, -0.0, -1.0, -1.0000001, -1.5, 2.5, 11, 12, 12.0, 13, 13.0, 13.0000001, 13.5, 16, 16.0,
          17, 17.0, 17.0000001, 18, True, False, None, "3", "", math.nan, math.inf, -math.inf, 10**400, -10**400,
          1e308, [1], {"a": 1}, (), [], [[1, 2, 3, 4, 5, 6]], [1, 2, 3, 4, 5], [1.0, 1.0, 2.0, 2.0],
          [1, 2, 3, 4, 5, 6, 7]]


def _places(dataset: dict, indexes: list[int]) -> list[tuple[str, Any, Any]]:
    """(name, container, key) of every value the annotation fast path looks at, in ``annotations[indexes]``."""
    places = []
    for i in indexes:
        ann = dataset["annotations"][i]
        for key in ("id", "image_id", "category_id", "bbox", "area", "iscrowd", "segmentation", "score"):
            places.append((f"annotations[{i}].{key}", ann, key))
        places += [(f"annotations[{i}].bbox[{j}]", ann["bbox"], j) for j in range(4)]
        seg = ann.get("segmentation")
        if isinstance(seg, list):
            places += [(f"annotations[{i}].polygon[{k}]", seg[0], k) for k in range(len(seg[0]))]
            places.append((f"annotations[{i}].polygon", seg, 0))
        elif isinstance(seg, dict):
            places += [(f"annotations[{i}].segmentation.{k}", seg, k) for k in ("size", "counts")]
            places += [(f"annotations[{i}].size[{j}]", seg["size"], j) for j in range(2)]
            if isinstance(seg["counts"], list):
                places += [(f"annotations[{i}].counts[{j}]", seg["counts"], j) for j in range(len(seg["counts"]))]
    return places


@pytest.mark.slow
@pytest.mark.parametrize("by_column", [True, False], ids=["by column", "per annotation"])
def test_every_single_mutation_gets_the_one_by_one_verdict(split_dict, fixture_dir, monkeypatch, by_column):
    """Each value the fast paths read, set to each tricky value (or deleted): the same error, or none, as the
    one-by-one checks (annotations without tracks, so that all of them take a fast path: the check of all
    annotations a key at a time, or with that one off, the per-annotation fast path)."""
    if not by_column:
        monkeypatch.setattr(schema, "annotations_pass_by_column", lambda *args: False)
    base = copy.deepcopy(split_dict)
    for ann in base["annotations"]:
        ann.pop("track_id", None)
    anns = base["annotations"]
    polygon_at = next(i for i, a in enumerate(anns) if isinstance(a.get("segmentation"), list))
    rle_at = [i for i, a in enumerate(anns) if isinstance(a.get("segmentation"), dict)]
    seg = anns[rle_at[-1]]["segmentation"]
    if not by_column:  # uncompressed counts too (the check by column leaves them to the per-annotation one)
        seg["counts"] = rle_counts_from_string(seg["counts"])
    indexes = [rle_at[0], polygon_at, rle_at[-1]]
    assert _verdict(base, fixture_dir) is None
    checked = 0
    for n in range(len(_places(base, indexes))):
        for value in TRICKY + ["<delete>"]:
            dataset = copy.deepcopy(base)
            name, container, key = _places(dataset, indexes)[n]
            if value == "<delete>":
                if not isinstance(container, dict):
                    continue
                container.pop(key, None)
            else:
                container[key] = copy.deepcopy(value)
            assert _verdict(dataset, fixture_dir) == _reference_verdict(dataset, fixture_dir), (name, value)
            checked += 1
    assert checked > 1000
    # a negative run in uncompressed counts that still sum to height * width
    seg["counts"] = [12 * 16 + 1, -1]
    assert _verdict(base, fixture_dir) == _reference_verdict(base, fixture_dir) != None  # noqa: E711
    # ... and in compressed counts
    seg["counts"] = encode_counts([12 * 16 + 1, -1])
    assert _verdict(base, fixture_dir) == _reference_verdict(base, fixture_dir) != None  # noqa: E711


def test_image_paths_through_links_and_dots(tmp_path):
    """Names the listing cannot vouch for take the exact path: links out of the folder are still refused."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "x.png").touch()
    root = tmp_path / "root"
    (root / "images").mkdir(parents=True)
    (root / "images" / "a.png").touch()
    (root / "linked").symlink_to(outside)
    (root / "images" / "link.png").symlink_to(outside / "x.png")
    (root / "images" / "inside.png").symlink_to(root / "images" / "a.png")

    def split(name: str) -> dict:
        return {"images": [{"id": 1, "file_name": name, "width": 4, "height": 4}], "annotations": [],
                "categories": [{"id": 1, "name": "thing"}]}

    accepted = ["images/a.png", "./images/a.png", "images/./a.png", "images//a.png", "images/inside.png",
                "images/a.png/"]
    refused = ["linked/x.png", "images/link.png", "images/../../outside/x.png", "/images/a.png", "images/b.png",
               "images", "", "images/" + "d/" * 3000 + "a.png"]
    for name in accepted + refused:
        got = _verdict(split(name), root)
        assert got == _reference_verdict(split(name), root), name
        assert (got is None) == (name in accepted), (name, got)


@pytest.mark.parametrize("bad_at", [0, 1, 4, 6])
def test_polygon_errors_across_blocks_name_the_right_annotation(tmp_path, monkeypatch, bad_at):
    monkeypatch.setattr(schema_columns, "_POLYGON_BLOCK", 2)
    dataset = _big_split(7)
    for ann in dataset["annotations"]:
        ann["segmentation"] = [[2.0, 1.0, 7.0, 1.0, 7.0, 4.0], [2.0, 1.0, 3.0, 3.0, 2.5, 4.0]]
    validate_split(dataset, tmp_path, "big.json", check_files=False)
    dataset["annotations"][bad_at]["segmentation"][1][5] = 7.5  # y beyond the 6-pixel image's tolerance
    with pytest.raises(DataError, match="outside its 8x6 image") as info:
        validate_split(dataset, tmp_path, "big.json", check_files=False)
    assert info.value.field == f"annotations[{bad_at}].segmentation[1][5]"
