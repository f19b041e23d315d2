"""Validation of splits: targeted error kinds and property-based malformed input."""

from __future__ import annotations

import copy
import json
import math
import re
from pathlib import Path
from typing import Any, Callable

import hypothesis.strategies as st
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

from vision.data.coco import load_split
from vision.data.masks import encode_mask
from vision.data.rle import rle_counts_from_string
from vision.data.schema import validate_split
from vision.evaluation.evaluate import validate_scored_parts
from vision.errors import DataError, InputError
from vision.tasks import task_names


def _ann(d: dict, i: int) -> dict:
    return d["annotations"][i]


# (name, mutation, expected field in the message, expected value text in the message)
CASES: list[tuple[str, Callable[[dict], Any], str, str]] = [
    ("missing images", lambda d: d.pop("images"), "images", "annotations"),
    ("images not a list", lambda d: d.__setitem__("images", {"a": 1}), "images", "{'a': 1}"),
    ("image not a dict", lambda d: d["images"].__setitem__(2, 7), "images[2]", "7"),
    ("missing file_name", lambda d: d["images"][1].pop("file_name"), "images[1].file_name", "'id'"),
    ("width as string", lambda d: d["images"][0].__setitem__("width", "16"), "images[0].width", "'16'"),
    ("height zero", lambda d: d["images"][0].__setitem__("height", 0), "images[0].height", "0"),
    ("width bool", lambda d: d["images"][0].__setitem__("width", True), "images[0].width", "True"),
    ("duplicate image id", lambda d: d["images"][4].__setitem__("id", 3), "images[4].id", "3"),
    ("duplicate annotation id", lambda d: _ann(d, 2).__setitem__("id", 1), "annotations[2].id", "1"),
    ("duplicate category name", lambda d: d["categories"][2].__setitem__("name", "cube"), "categories[2].name",
     "'cube'"),
    ("bbox outside", lambda d: _ann(d, 0).__setitem__("bbox", [10.0, 2.0, 8.0, 8.0]), "annotations[0].bbox",
     "[10.0, 2.0, 8.0, 8.0]"),
    ("bbox negative size", lambda d: _ann(d, 0).__setitem__("bbox", [2.0, 2.0, -1.0, 3.0]), "annotations[0].bbox",
     "-1.0"),
    ("bbox short", lambda d: _ann(d, 0).__setitem__("bbox", [1, 2, 3]), "annotations[0].bbox", "[1, 2, 3]"),
    ("bbox nan", lambda d: _ann(d, 0).__setitem__("bbox", [1.0, math.nan, 3.0, 3.0]), "annotations[0].bbox[1]",
     "nan"),
    ("missing image", lambda d: _ann(d, 1).__setitem__("image_id", 999), "annotations[1].image_id", "999"),
    ("missing category", lambda d: _ann(d, 1).__setitem__("category_id", 42), "annotations[1].category_id", "42"),
    ("missing track", lambda d: _ann(d, 0).__setitem__("track_id", 77), "annotations[0].track_id", "77"),
    ("missing video", lambda d: d["images"][0].__setitem__("video_id", 9), "images[0].video_id", "9"),
    ("frame without video", lambda d: d["images"][0].pop("video_id"), "images[0].video_id", "frame_index"),
    ("duplicate frame", lambda d: d["images"][1].__setitem__("frame_index", 2), "images[1].frame_index", "2"),
    ("rle size", lambda d: _ann(d, 0).__setitem__("segmentation", encode_mask(np.ones((5, 5), bool))),
     "annotations[0].segmentation.size", "[5, 5]"),
    ("rle counts garbage", lambda d: _ann(d, 0)["segmentation"].__setitem__("counts", "\x7f\x7f"),
     "annotations[0].segmentation.counts", "x7f"),
    ("rle counts short", lambda d: _ann(d, 0)["segmentation"].__setitem__("counts", [3, 4]),
     "annotations[0].segmentation.counts", "[3, 4]"),
    ("polygon odd", lambda d: d["annotations"][-2].__setitem__("segmentation", [[1, 2, 3, 4, 5]]),
     "segmentation[0]", "[1, 2, 3, 4, 5]"),
    ("polygon off image", lambda d: d["annotations"][-2].__setitem__("segmentation", [[1, 2, 3, 4, 1e6, 5]]),
     "segmentation[0][4]", "1000000.0"),
    ("polygon huge", lambda d: d["annotations"][-2].__setitem__("segmentation", [[1, 2, 3, -1e300, 5, 6]]),
     "segmentation[0][3]", "-1e+300"),
    ("camera K shape", lambda d: d["images"][0]["camera"].__setitem__("K", [[1, 0], [0, 1]]), "images[0].camera.K",
     "[[1, 0], [0, 1]]"),
    ("camera extrinsics inf", lambda d: d["images"][0]["camera"]["extrinsics"][1].__setitem__(3, math.inf),
     "images[0].camera.extrinsics[1][3]", "inf"),
    ("camera missing K", lambda d: d["images"][0]["camera"].pop("K"), "images[0].camera.K", "extrinsics"),
    ("category split", lambda d: d["categories"][0].__setitem__("split", "seen"), "categories[0].split", "'seen'"),
    ("video label", lambda d: d["videos"][2].__setitem__("label", "fake"), "videos[2].label", "'fake'"),
    ("ordered not bool", lambda d: d["videos"][0].__setitem__("ordered", "yes"), "videos[0].ordered", "'yes'"),
    ("track video", lambda d: d["tracks"][0].__setitem__("video_id", 55), "tracks[0].video_id", "55"),
    ("track category mismatch", lambda d: d["tracks"][0].__setitem__("category_id", 2), "annotations[0].category_id",
     "1"),
    ("vocabulary name", lambda d: d["info"].__setitem__("vocabulary", ["cube", "dragon"]), "info.vocabulary[1]",
     "'dragon'"),
    ("concepts not a list", lambda d: d["videos"][0].__setitem__("concepts", 1), "videos[0].concepts", "1"),
    ("concept unknown", lambda d: d["videos"][0].__setitem__("concepts", [1, 9]), "videos[0].concepts[1]", "9"),
    ("concept twice", lambda d: d["videos"][1].__setitem__("concepts", [2, 3, 2]), "videos[1].concepts[2]", "2"),
    ("concept not an int", lambda d: d["videos"][0].__setitem__("concepts", ["cube"]), "videos[0].concepts[0]",
     "'cube'"),
    ("near key", lambda d: d["info"].__setitem__("near_categories", {"cup": ["mug"]}), "info.near_categories.cup",
     "'cup'"),
    ("near name", lambda d: d["info"].__setitem__("near_categories", {"mug": ["cube", "bowl"]}),
     "info.near_categories.mug[1]", "'bowl'"),
    ("near not a list", lambda d: d["info"].__setitem__("near_categories", {"mug": "cube"}),
     "info.near_categories.mug", "'cube'"),
    ("absolute path", lambda d: d["images"][0].__setitem__("file_name", "/etc/passwd"), "images[0].file_name",
     "/etc/passwd"),
    ("escaping path", lambda d: d["images"][0].__setitem__("file_name", "../../x.png"), "images[0].file_name",
     "../../x.png"),
    ("missing image file", lambda d: d["images"][0].__setitem__("file_name", "images/nope.png"),
     "images[0].file_name", "images/nope.png"),
    ("missing depth file", lambda d: d["images"][0].__setitem__("depth_file", "depth/nope.npz"),
     "images[0].depth_file", "depth/nope.npz"),
    ("depth suffix", lambda d: d["images"][0].__setitem__("depth_file", "images/0001.png.exr"),
     "images[0].depth_file", "exr"),
    ("missing video file", lambda d: d["videos"][3].__setitem__("file_name", "videos/nope.mp4"),
     "videos[3].file_name", "videos/nope.mp4"),
    ("nul byte", lambda d: d["images"][0].__setitem__("file_name", "a\x00b.png"), "images[0].file_name", "x00"),
    ("iscrowd", lambda d: _ann(d, 0).__setitem__("iscrowd", 2), "annotations[0].iscrowd", "2"),
    ("area negative", lambda d: _ann(d, 0).__setitem__("area", -3), "annotations[0].area", "-3"),
    # images[0..7] are frames of videos, images[8] a plain image (the fast path of the image checks)
    ("annotated string", lambda d: d["images"][0].__setitem__("annotated", "false"), "images[0].annotated",
     "annotated='false': expected true or false"),
    ("annotated no", lambda d: d["images"][8].__setitem__("annotated", "no"), "images[8].annotated", "'no'"),
    ("annotated zero", lambda d: d["images"][8].__setitem__("annotated", 0), "images[8].annotated",
     "annotated=0: expected true or false"),
    ("annotated null", lambda d: d["images"][5].__setitem__("annotated", None), "images[5].annotated",
     "annotated=None: expected true or false"),
    ("annotated one", lambda d: d["images"][1].__setitem__("annotated", 1), "images[1].annotated", "annotated=1"),
    ("annotated numpy", lambda d: d["images"][8].__setitem__("annotated", np.False_), "images[8].annotated",
     "NumPy bool"),
]


@pytest.mark.parametrize("name,mutate,field,value", CASES, ids=[c[0] for c in CASES])
def test_each_error_names_file_field_and_value(split_dict, fixture_dir, name, mutate, field, value):
    mutate(split_dict)
    with pytest.raises(DataError) as info:
        validate_split(split_dict, fixture_dir, "fixture.json", check_files=True)
    err = info.value
    text = str(err)
    assert "fixture.json" in text
    assert err.field is not None and field in err.field, (name, err.field, text)
    assert value in text, (name, text)


def test_concepts_and_near_categories_are_accepted(split_dict, fixture_dir):
    """A video's queried phrases (present and absent categories) and the close cousins of a phrase."""
    split_dict["videos"][0]["concepts"] = [3, 1]
    split_dict["videos"][1]["concepts"] = []
    split_dict["info"]["near_categories"] = {"mug": ["cube"], "ball": []}
    validate_split(split_dict, fixture_dir, "fixture.json", check_files=True)


SCORED_TASKS = task_names()  # every registered task is scored


@pytest.mark.parametrize("task", SCORED_TASKS)
def test_a_valid_split_passes_the_parts_every_task_scores(split_dict, task):
    validate_scored_parts(split_dict, task, "split.json")


@pytest.mark.parametrize("task", SCORED_TASKS)
def test_scored_parts_leave_alone_what_scoring_does_not_read(split_dict, fixture_dir, task):
    """File names, cameras and category names are the split file's business, not scoring's: a split that
    validate_split refuses for them still scores, and a bad field that scoring reads is named as validate_split
    names it."""
    d = copy.deepcopy(split_dict)
    for img in d["images"]:
        img.pop("file_name")
        if "camera" in img:
            img["camera"] = {"K": img["camera"]["K"]}
    d["categories"][0].pop("name")
    with pytest.raises(DataError):
        validate_split(d, fixture_dir, "split.json", check_files=False)
    validate_scored_parts(d, task, "split.json")
    d["images"][1]["width"] = "16" if task != "forensics" else d["images"][1]["width"]
    d["videos"][0]["label"] = "fake"
    with pytest.raises(DataError) as info:
        validate_scored_parts(d, task, "split.json")
    want = "videos[0].label" if task == "forensics" else "images[1].width"
    assert info.value.field == want and str(info.value).startswith("split.json: ")
    with pytest.raises(InputError):
        validate_scored_parts(d, "segmentation", "split.json")


def test_top_level_must_be_an_object(fixture_dir):
    with pytest.raises(DataError, match="expected an object"):
        validate_split([1, 2], fixture_dir, "f.json")


def test_check_files_false_skips_existence_but_not_paths(split_dict, fixture_dir):
    split_dict["images"][0]["file_name"] = "images/nope.png"
    validate_split(split_dict, fixture_dir, "f.json", check_files=False)
    split_dict["images"][0]["file_name"] = "../outside.png"
    with pytest.raises(DataError, match="escapes"):
        validate_split(split_dict, fixture_dir, "f.json", check_files=False)


def test_box_tolerance_is_one_pixel(split_dict, fixture_dir):
    ann = split_dict["annotations"][0]
    ann.pop("segmentation")
    ann["bbox"] = [-1.0, -1.0, 17.0, 13.0]  # touches 1 px beyond each border: accepted
    validate_split(split_dict, fixture_dir, "f.json")
    ann["bbox"] = [-1.5, 0.0, 4.0, 4.0]
    with pytest.raises(DataError, match="outside"):
        validate_split(split_dict, fixture_dir, "f.json")


def test_invalid_json_reports_line_and_column(tmp_path):
    path = tmp_path / "bad.json"
    path.write_text('{\n  "images": [1, 2,,]\n}')
    with pytest.raises(DataError) as info:
        load_split(path)
    assert "line 2 column" in str(info.value) and "bad.json" in str(info.value)


def test_missing_and_binary_files(tmp_path):
    with pytest.raises(DataError, match="split not found"):
        load_split(tmp_path / "absent.json")
    (tmp_path / "bin.json").write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(DataError, match="UTF-8"):
        load_split(tmp_path / "bin.json")


def test_rle_string_decoder_matches_pycocotools():
    from pycocotools import mask as mask_utils

    rng = np.random.default_rng(3)
    for _ in range(20):
        mask = rng.random((9, 13)) < rng.random()
        rle = encode_mask(mask)
        runs = rle_counts_from_string(rle["counts"])
        assert sum(runs) == 9 * 13
        # uncompressed runs decode to the same mask
        back = mask_utils.decode(mask_utils.frPyObjects({"size": [9, 13], "counts": runs}, 9, 13)).astype(bool)
        assert np.array_equal(back, mask)


# ---------------------------------------------------------------- property-based: malformed input never crashes

json_leaf = (st.none() | st.booleans() | st.integers(-10**20, 10**20) | st.integers(-3, 40)
             | st.floats(allow_nan=True, allow_infinity=True) | st.text(max_size=8)
             | st.sampled_from(["", ".", "..", "/abs", "../x", "images/0001.png", "depth/0006.png", "iv", "real"]))
json_value = st.recursive(json_leaf, lambda ch: st.lists(ch, max_size=4) | st.dictionaries(
    st.sampled_from(["id", "size", "counts", "K", "name", "x", "file_name"]) | st.text(max_size=4), ch,
    max_size=4), max_leaves=8)


def _locations(node: Any, out: list) -> list:
    """All (container, key) pairs of a JSON tree."""
    if isinstance(node, dict):
        for k in list(node):
            out.append((node, k))
            _locations(node[k], out)
    elif isinstance(node, list):
        for i in range(len(node)):
            out.append((node, i))
            _locations(node[i], out)
    return out


@st.composite
def mutated_splits(draw, base: dict) -> Any:
    data = copy.deepcopy(base)
    for _ in range(draw(st.integers(1, 3))):
        locations = _locations(data, [])
        if not locations:
            break
        container, key = draw(st.sampled_from(locations))
        kind = draw(st.sampled_from(["delete", "replace", "duplicate", "numeric", "swap_type"]))
        if kind == "delete":
            del container[key]
        elif kind == "replace":
            container[key] = draw(json_value)
        elif kind == "duplicate" and isinstance(container, list):
            container.insert(draw(st.integers(0, len(container))), copy.deepcopy(container[key]))
        elif kind == "numeric":
            container[key] = draw(st.sampled_from([0, -1, 1, 10**6, -0.5, 0.5, 1e300, math.nan, math.inf]))
        else:
            value = container[key]
            container[key] = [value] if not isinstance(value, list) else {"v": value}
    return data


def _expect_only_data_error(path: Path, check_files: bool = True) -> None:
    """load_split either succeeds or raises DataError; an accepted split's masks must decode safely."""
    try:
        split = load_split(path, check_files=check_files)
    except DataError:
        return
    for ann in split.dataset["annotations"]:
        img = split.images[ann["image_id"]]
        if img["width"] * img["height"] <= 10**5:
            assert split.annotation_mask(ann).shape == (img["height"], img["width"])


@pytest.mark.slow
@settings(max_examples=250, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
@given(data=st.data())
def test_structural_mutations_only_raise_data_error(fixture_dir, split_path, data):
    base = json.loads(split_path.read_text())
    mutated = data.draw(mutated_splits(base))
    path = fixture_dir / "mutated_structure.json"
    path.write_text(json.dumps(mutated))
    _expect_only_data_error(path)
    _expect_only_data_error(path, check_files=False)


@settings(max_examples=120, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
@given(data=st.data())
def test_byte_mutations_only_raise_data_error(fixture_dir, split_path, data):
    raw = split_path.read_bytes()
    kind = data.draw(st.sampled_from(["truncate", "overwrite", "insert", "random"]))
    if kind == "truncate":
        raw = raw[: data.draw(st.integers(0, len(raw)))]
    elif kind == "overwrite":
        at = data.draw(st.integers(0, len(raw) - 1))
        patch = data.draw(st.binary(min_size=1, max_size=6))
        raw = raw[:at] + patch + raw[at + len(patch):]
    elif kind == "insert":
        at = data.draw(st.integers(0, len(raw)))
        raw = raw[:at] + data.draw(st.binary(max_size=6) | st.sampled_from([b"[", b"{", b"}", b"]", b",", b'"'])) \
            + raw[at:]
    else:
        raw = data.draw(st.binary(max_size=200))
    path = fixture_dir / "mutated_bytes.json"
    path.write_bytes(raw)
    _expect_only_data_error(path)


@settings(max_examples=60, deadline=None, derandomize=True)
@given(value=json_value)
def test_arbitrary_json_documents_only_raise_data_error(value):
    try:
        validate_split(value, Path("/nonexistent-root"), "doc.json", check_files=True)
    except DataError:
        pass


def test_huge_image_sizes_are_refused_before_any_mask_is_decoded(tmp_path):
    """A malformed width/height must fail validation, not exhaust memory when masks are decoded later."""
    from vision.data.coco import Split
    from vision.data.schema import MAX_IMAGE_SIDE

    dataset = {"images": [{"id": 1, "file_name": "a.png", "width": 10**9, "height": 4}], "annotations": [],
               "categories": [{"id": 1, "name": "thing"}]}
    with pytest.raises(DataError, match=r"images\[0\]\.width"):
        Split.from_dict(dataset, tmp_path, check_files=False)
    dataset["images"][0].update(width=MAX_IMAGE_SIDE, height=MAX_IMAGE_SIDE)
    with pytest.raises(DataError, match="exceeds the limit"):
        Split.from_dict(dataset, tmp_path, check_files=False)


# ---------------------------------------------------------------------------------------------------------------
# an image's annotated flag: true or false, nothing else (the scorers of frames leave out exactly the False ones)

#: the tasks whose scorers read ``annotated`` (the others' split checks leave it alone)
READS_ANNOTATED = {"tracking", "concept"}


@settings(max_examples=80, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
@given(value=json_value | st.sampled_from([np.True_, np.False_, np.int64(0)]), index=st.integers(0, 8))
def test_annotated_is_true_or_false_in_the_split_and_in_every_scored_part_that_reads_it(split_dict, fixture_dir,
                                                                                       value, index):
    dataset = copy.deepcopy(split_dict)  # the fixture is shared by every example
    dataset["images"][index]["annotated"] = value
    field = f"images[{index}].annotated"
    checks = [lambda: validate_split(dataset, fixture_dir, "split.json", check_files=True)]
    checks += [lambda task=task: validate_scored_parts(dataset, task, "split.json") for task in READS_ANNOTATED]
    for check in checks:
        if type(value) is bool:
            check()
            continue
        with pytest.raises(DataError) as info:
            check()
        assert info.value.field == field and str(info.value).startswith(f"split.json: {field}=")
        assert "expected true or false" in str(info.value) and "\n" not in str(info.value)
    for task in set(SCORED_TASKS) - READS_ANNOTATED:
        validate_scored_parts(dataset, task, "split.json")


@pytest.mark.parametrize("literal", ['"false"', '"no"', "0", "null", "1", "0.0", "[]"])
def test_the_training_loader_refuses_an_annotated_flag_that_is_not_true_or_false(fixture_dir, split_path, literal):
    """load_split (what the data modules read splits with) names the split, the field and the value."""
    dataset = json.loads(split_path.read_text())
    dataset["images"][2]["annotated"] = "__FLAG__"
    path = fixture_dir / "annotated_flag.json"
    path.write_text(json.dumps(dataset).replace('"__FLAG__"', literal))
    with pytest.raises(DataError) as info:
        load_split(path)
    value = json.loads(literal)
    assert str(info.value) == (f"{path}: images[2].annotated={value!r}: expected true or false, got "
                               f"{type(value).__name__}")
    for flag in ("true", "false"):
        path.write_text(json.dumps(dataset).replace('"__FLAG__"', flag))
        assert load_split(path).images[dataset["images"][2]["id"]]["annotated"] is (flag == "true")


# ---------------------------------------------------------------------------------------------------------------
# hostile file names and number literals: one DataError naming the split and the field, never a hang or a traceback


@pytest.fixture(scope="module")
def hostile_split(tmp_path_factory) -> tuple[Path, dict]:
    """A copy of the fixture split with, in its folder, a FIFO, a link loop, a folder, a dangling link and /dev
    links under ``hostile/`` (each name used in place of a file the split names)."""
    import os

    from tests.data.conftest import build_split

    root = tmp_path_factory.mktemp("hostile")
    dataset = build_split(root)
    (root / "hostile").mkdir()
    os.mkfifo(root / "hostile" / "fifo.npz")
    os.symlink(root / "hostile" / "loop.npz", root / "hostile" / "loop.npz")
    (root / "hostile" / "folder.npz").mkdir()
    os.symlink(root / "hostile" / "nowhere", root / "hostile" / "dangling.npz")
    os.symlink("/dev/zero", root / "hostile" / "device.npz")
    return root, dataset


#: what the error says for each kind (a link to a device resolves outside the split's folder; a dangling link
#: resolves to its target's name, which is then checked)
HOSTILE_NAMES = {"fifo": "FIFO", "loop": "symbolic-link loop", "folder": "a folder",
                 "dangling": "not found|depth_file must be", "device": "escapes the split's folder"}
#: split fields that name a file: (collection, index of the entry, key)
FILE_FIELDS = [("images", 0, "file_name"), ("images", 0, "depth_file"), ("images", 5, "depth_file"),
               ("videos", 2, "file_name"), ("videos", 3, "file_name")]


@settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
@given(kind=st.sampled_from(sorted(HOSTILE_NAMES)), where=st.sampled_from(FILE_FIELDS),
       check_files=st.booleans())
def test_a_hostile_file_name_is_one_data_error_naming_split_and_field(hostile_split, kind, where, check_files):
    """A FIFO, a link loop, a folder, a dangling link or a device where a split names an image, a depth map or a
    video: load_split refuses it (or, without the file check, the reader does), naming the split and the field."""
    from vision.data.coco import Split

    root, base = hostile_split
    dataset = copy.deepcopy(base)
    collection, index, key = where
    dataset[collection][index][key] = f"hostile/{kind}.npz"
    path = root / f"hostile_{kind}.json"
    path.write_text(json.dumps(dataset))
    field = f"{collection}[{index}].{key}"
    try:
        split = load_split(path, check_files=check_files)
    except DataError as exc:
        assert "\n" not in str(exc) and str(path) in str(exc) and field in str(exc)
        assert re.search(HOSTILE_NAMES[kind], str(exc)), str(exc)
        return
    assert not check_files, "the file check let a hostile name through"
    img = dataset[collection][index]
    if key == "depth_file":
        with pytest.raises(DataError, match=HOSTILE_NAMES[kind]) as info:
            split.depth(split.images[img["id"]])
        assert str(path) in str(info.value)
    elif collection == "images":
        with pytest.raises(DataError, match=HOSTILE_NAMES[kind]):
            split.load_image(split.images[img["id"]])
    else:
        assert isinstance(split, Split)  # video files are opened by the video reader (tests/data/test_video.py)


def _integer_locations(node: Any, out: list) -> list:
    """(container, key) of every integer in a JSON tree (ids, sizes, frame indexes, RLE sizes ...)."""
    for container, key in _locations(node, []):
        value = container[key]
        if isinstance(value, int) and not isinstance(value, bool):
            out.append((container, key))
    return out


@settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
@given(data=st.data(), digits=st.integers(401, 12_000))
def test_an_integer_literal_too_long_for_python_is_a_data_error_naming_its_field(fixture_dir, split_path, data,
                                                                                 digits):
    """Python's int() refuses more than 4300 digits with a ValueError naming no place; the split reader reads
    such a literal (anywhere an integer stands) as infinite, and the schema refuses it by field."""
    dataset = json.loads(split_path.read_text())
    container, key = data.draw(st.sampled_from(_integer_locations(dataset, [])))
    container[key] = "__BIG__"
    literal = data.draw(st.sampled_from(["", "-"])) + "7" * digits
    path = fixture_dir / "big_int.json"
    path.write_text(json.dumps(dataset).replace('"__BIG__"', literal))
    with pytest.raises(DataError) as info:
        load_split(path)
    assert "\n" not in str(info.value) and str(path) in str(info.value) and "inf" in str(info.value)
