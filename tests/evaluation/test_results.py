"""Results files and splits given to vision evaluate: every mask must decode to exactly H x W pixels, every
number must be finite, and every problem is one line on stderr (exit status 2) naming the file, the entry and
the field."""

from __future__ import annotations

import atexit
import copy
import faulthandler
import functools
import json
import math
import shutil
import tempfile
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pytest
from _pytest.faulthandler import fault_handler_stderr_fd_key

from tests.evaluation.conftest import label_sequence, make_detection_case
from tests.evaluation.conftest import evaluate_cli
from tests.evaluation.test_concept import small_case as concept_case
from tests.evaluation.test_tracking import _results_from_labels, _video_split_from_labels
from vision.evaluation.evaluate import validate_scored_parts
from vision.errors import DataError
from vision.evaluation.evaluate import evaluate
from vision.evaluation.results import encode_array, load_results
from vision.evaluation.tasks.forensics import validate_forensics_results
from vision.tasks import task_names



@pytest.fixture(autouse=True)
def no_hang(request):
    """A malformed mask once sent faster-coco-eval into a loop that never returned: after 5 minutes, print every
    thread's stack (to pytest's own copy of the terminal's stderr, which output capturing leaves alone) and end
    the run."""
    faulthandler.dump_traceback_later(300, exit=True, file=request.config.stash[fault_handler_stderr_fd_key])
    yield
    faulthandler.cancel_dump_traceback_later()


def detection_case() -> tuple[dict, list[dict]]:
    return make_detection_case(seed=3, num_images=4)


def tracking_case() -> tuple[dict, list[dict]]:
    maps = {1: label_sequence(np.random.default_rng(8), 4, 30, 40, 2)}
    split = _video_split_from_labels(maps)
    return split, _results_from_labels(split, maps)


def forensics_case() -> tuple[dict, list[dict]]:
    videos = [{"id": i, "name": f"v{i}", "label": "real" if i <= 3 else "generated",
               "generator": None if i <= 3 else "gen"} for i in range(1, 7)]
    split = {"images": [], "annotations": [], "categories": [], "videos": videos}
    return split, [{"video_id": i, "score": i / 10} for i in range(1, 7)]


@functools.cache
def _geometry_root() -> Path:
    """The folder of :func:`geometry_case`'s depth files (written once, removed at exit)."""
    root = Path(tempfile.mkdtemp(prefix="geometry_case_"))
    atexit.register(shutil.rmtree, root, ignore_errors=True)
    rng = np.random.default_rng(0)
    for i in (1, 2, 3):
        np.savez(root / f"depth_{i}.npz", depth=rng.uniform(1.0, 3.0, size=(8, 8)).astype(np.float16))
    return root


def geometry_case() -> tuple[dict, list[dict]]:
    """One video of 3 views of 8 x 8 pixels with cameras and depth files (in :func:`_geometry_root`: scoring needs
    :func:`case_options`), and results for its clip: the true cameras in view 0's frame, depth and points at
    random."""
    rng = np.random.default_rng(1)
    clip = [1, 2, 3]
    cameras = []
    for i in clip:
        angle = 0.1 * i
        cameras.append(np.array([[np.cos(angle), 0.0, np.sin(angle), 0.1 * i], [0.0, 1.0, 0.0, 0.0],
                                 [-np.sin(angle), 0.0, np.cos(angle), 0.0]]))
    images = [{"id": i, "file_name": f"{i}.png", "width": 8, "height": 8, "video_id": 1, "frame_index": i,
               "camera": {"K": [[8.0, 0.0, 3.5], [0.0, 8.0, 3.5], [0.0, 0.0, 1.0]], "extrinsics": e.tolist()},
               "depth_file": f"depth_{i}.npz"} for i, e in zip(clip, cameras)]
    r0, t0 = cameras[0][:, :3], cameras[0][:, 3]
    results = []
    for i, e in zip(clip, cameras):
        rotation = e[:, :3] @ r0.T  # camera i from view 0's camera
        relative = np.concatenate([rotation, (e[:, 3] - rotation @ t0)[:, None]], axis=1)
        results.append({"image_id": i, "clip": clip, "extrinsics": relative.tolist(),
                        "depth": encode_array(rng.uniform(1.0, 2.0, size=(8, 8))),
                        "world_points": encode_array(rng.normal(size=(8, 8, 3)))})
    split = {"images": images, "annotations": [], "categories": [], "videos": [{"id": 1, "name": "v"}]}
    _geometry_root()  # its depth files exist before anything scores the split
    return split, results


#: A small valid (split, results) of each registered task; :func:`test_every_task_has_a_case` keeps it complete.
CASES = {"detection": detection_case, "tracking": tracking_case, "forensics": forensics_case,
         "geometry": geometry_case, "concept": concept_case}


def case_options(task: str) -> dict[str, Any]:
    """The options scoring a case of ``task`` needs: geometry reads the depth files of its split dict's folder."""
    return {"split_root": str(_geometry_root())} if task == "geometry" else {}

# A value that stands for raw JSON text: json.dumps writes the marker and the text replaces it (NaN, Infinity and
# numbers of hundreds of digits cannot be written through Python objects the way a foreign tool writes them).
MARK = "@@raw@@"


def write_json(path: Path, document: Any, raw: str | None = None) -> Path:
    text = json.dumps(document)
    if raw is not None:
        assert text.count(json.dumps(MARK)) == 1
        text = text.replace(json.dumps(MARK), raw)
    path.write_text(text)
    return path


def run_cli(capsys, split: Path, results: Path, task: str, *extra: str) -> tuple[int, list[str]]:
    code = evaluate_cli.main(["--split", str(split), "--results", str(results), "--task", task, *extra])
    captured = capsys.readouterr()
    return code, captured.err.strip().splitlines()


def assert_one_line_error(code: int, err: list[str], file: Path, field: str | None) -> None:
    assert code == 2, err
    assert len(err) == 1, err
    assert err[0].startswith("error: ") and "Traceback" not in err[0]
    assert str(file) in err[0], err[0]
    if field is not None:
        assert field in err[0], err[0]


# ---------------------------------------------------------------- masks


def _cut_inside_a_run(counts: str) -> str:
    """``counts`` cut right after a character that announces a continuation: a truncated run length."""
    for i, ch in enumerate(counts):
        if (ord(ch) - 48) & 0x20:
            return counts[: i + 1]
    raise AssertionError("no multi-character run in this mask")


# (name, new segmentation from (old RLE, height, width), the field the error must name)
MASK_VARIANTS: list[tuple[str, Callable[[dict, int, int], Any], str]] = [
    ("truncated string", lambda rle, h, w: {**rle, "counts": _cut_inside_a_run(rle["counts"])}, "counts"),
    ("string cut at a run boundary", lambda rle, h, w: {**rle, "counts": rle["counts"][:2]}, "counts"),
    ("zeros 0000", lambda rle, h, w: {**rle, "counts": "0000"}, "counts"),
    ("empty string", lambda rle, h, w: {**rle, "counts": ""}, "counts"),
    ("characters outside the alphabet", lambda rle, h, w: {**rle, "counts": "~~~~"}, "counts"),
    ("a space", lambda rle, h, w: {**rle, "counts": rle["counts"][:3] + " " + rle["counts"][3:]}, "counts"),
    ("negative run in a string", lambda rle, h, w: {**rle, "counts": "O" + rle["counts"]}, "counts"),
    ("endless run length", lambda rle, h, w: {**rle, "counts": "o" * 40 + "0"}, "counts"),
    ("string with extra pixels", lambda rle, h, w: {**rle, "counts": rle["counts"] + "5"}, "counts"),
    ("list with a negative count", lambda rle, h, w: {**rle, "counts": [-5, h * w + 5]}, "counts"),
    ("list summing short", lambda rle, h, w: {**rle, "counts": [3, 4]}, "counts"),
    ("list summing long", lambda rle, h, w: {**rle, "counts": [h * w, 1]}, "counts"),
    ("list of floats", lambda rle, h, w: {**rle, "counts": [float(h * w)]}, "counts[0]"),
    ("list with true", lambda rle, h, w: {**rle, "counts": [True, h * w - 1]}, "counts[0]"),
    ("counts a number", lambda rle, h, w: {**rle, "counts": 7}, "counts"),
    ("counts missing", lambda rle, h, w: {"size": rle["size"]}, "counts"),
    ("size of another image", lambda rle, h, w: {**rle, "size": [h + 1, w]}, "size"),
    ("size as strings", lambda rle, h, w: {**rle, "size": [str(h), str(w)]}, "size"),
    ("size of three", lambda rle, h, w: {**rle, "size": [h, w, 1]}, "size"),
    ("a polygon", lambda rle, h, w: [[1, 1, 5, 1, 5, 5]], "segmentation"),
    ("a string", lambda rle, h, w: rle["counts"], "segmentation"),
]


def _image_size(split: dict, image_id: int) -> tuple[int, int]:
    image = next(img for img in split["images"] if img["id"] == image_id)
    return image["height"], image["width"]


@pytest.mark.parametrize("task", ["detection", "tracking"])
@pytest.mark.parametrize("name,variant,field", MASK_VARIANTS, ids=[v[0] for v in MASK_VARIANTS])
def test_malformed_masks_are_refused_naming_file_entry_and_field(tmp_path, capsys, task, name, variant, field):
    split, results = CASES[task]()
    results[1]["segmentation"] = variant(results[1]["segmentation"], *_image_size(split, results[1]["image_id"]))
    split_path = write_json(tmp_path / "split.json", split)
    results_path = write_json(tmp_path / "results.json", results)
    code, err = run_cli(capsys, split_path, results_path, task)
    expected = "results[1].segmentation" + ("" if field == "segmentation" else f".{field}")
    assert_one_line_error(code, err, results_path, expected + "=")
    with pytest.raises(DataError) as info:
        evaluate(split, results_path, task)
    assert info.value.field == expected


def test_uncompressed_masks_of_the_right_size_are_scored_like_compressed_ones():
    from vision.data.masks import decode_rle

    split, results = tracking_case()
    uncompressed = copy.deepcopy(results)
    for r in uncompressed:
        values = decode_rle(r["segmentation"]).ravel(order="F")  # COCO runs go down the columns
        change = np.flatnonzero(values[1:] != values[:-1]) + 1
        runs = np.diff(np.concatenate([[0], change, [values.size]])).tolist()
        r["segmentation"] = {"size": r["segmentation"]["size"], "counts": [0] + runs if values[0] else runs}
    assert evaluate(split, uncompressed, "tracking")["J"] == evaluate(split, results, "tracking")["J"] == 1.0


# ---------------------------------------------------------------- numbers and nesting

# (task, where the raw text goes (index, key[, position]), raw JSON text, the field the error must name)
NUMBER_CASES: list[tuple[str, tuple, str, str]] = [
    ("detection", (0, "score"), "9" * 401, "results[0].score"),
    ("detection", (0, "score"), "NaN", "results[0].score"),
    ("detection", (0, "score"), "Infinity", "results[0].score"),
    ("detection", (0, "score"), "-" + "9" * 5000, "results[0].score"),
    ("detection", (0, "bbox", 2), "-Infinity", "results[0].bbox[2]"),
    ("detection", (0, "bbox", 0), "1e999", "results[0].bbox[0]"),
    ("detection", (0, "image_id"), "9" * 5000, "results[0].image_id"),
    ("detection", (0, "note"), "NaN", "results[0].note"),
    ("detection", (0, "segmentation", "size", 0), "Infinity", "results[0].segmentation.size[0]"),
    ("tracking", (0, "track_id"), "Infinity", "results[0].track_id"),
    ("tracking", (0, "score"), "9" * 401, "results[0].score"),
    ("tracking", (0, "video_id"), "9" * 5000, "results[0].video_id"),
    ("tracking", (0, "segmentation", "counts"), "[" + "9" * 401 + "]", "results[0].segmentation.counts"),
    ("forensics", (0, "score"), "9" * 401, "results[0].score"),
    ("forensics", (0, "score"), "NaN", "results[0].score"),
    ("forensics", (0, "video_id"), "Infinity", "results[0].video_id"),
    ("forensics", (0, "score"), "9" * 5000, "results[0].score"),
    ("forensics", (2, "extra"), "[1, -Infinity]", "results[2].extra[1]"),
]


def _put(document: Any, where: tuple, value: Any) -> None:
    for key in where[:-1]:
        document = document[key]
    document[where[-1]] = value


@pytest.mark.parametrize("task,where,raw,field", NUMBER_CASES,
                         ids=[f"{c[0]}-{'.'.join(map(str, c[1]))}-{c[2][:12]}" for c in NUMBER_CASES])
def test_numbers_must_be_finite_and_fit_a_double(tmp_path, capsys, task, where, raw, field):
    split, results = CASES[task]()
    _put(results, where, MARK)
    split_path = write_json(tmp_path / "split.json", split)
    results_path = write_json(tmp_path / "results.json", results, raw)
    code, err = run_cli(capsys, split_path, results_path, task)
    assert_one_line_error(code, err, results_path, field)


def test_deep_nesting_is_refused_naming_the_file(tmp_path, capsys):
    split, results = detection_case()
    split_path = write_json(tmp_path / "split.json", split)
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    code, err = run_cli(capsys, split_path, deep, "detection")
    assert_one_line_error(code, err, deep, None)
    assert "nested" in err[0]
    _put(results, (0, "score"), MARK)
    inner = write_json(tmp_path / "inner.json", results, "[" * 900 + "]" * 900)
    code, err = run_cli(capsys, split_path, inner, "detection")
    assert_one_line_error(code, err, inner, "results[0].score")
    code, err = run_cli(capsys, deep, inner, "detection")
    assert_one_line_error(code, err, deep, None)


def test_load_results_refuses_non_finite_python_numbers():
    with pytest.raises(DataError, match=r"results\[0\]\.score"):
        load_results([{"video_id": 1, "score": math.inf}])
    with pytest.raises(DataError, match=r"results\[0\]\.x\[1\]"):
        load_results([{"video_id": 1, "score": 0.5, "x": [1, 10 ** 400]}])


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "NaN", "infinity"])
def test_threshold_must_be_finite(tmp_path, capsys, value):
    split, results = forensics_case()
    split_path = write_json(tmp_path / "split.json", split)
    results_path = write_json(tmp_path / "results.json", results)
    with pytest.raises(SystemExit) as info:
        run_cli(capsys, split_path, results_path, "forensics", f"--threshold={value}")
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert "--threshold" in err and "finite" in err and "Traceback" not in err
    code, err = run_cli(capsys, split_path, results_path, "forensics", "--threshold", "0.35")
    assert code == 0 and not err


# ---------------------------------------------------------------- splits


def _first_with(items: list[dict], key: str) -> dict:
    return next(item for item in items if key in item)


# (task, mutation of the split, the field the error must name)
SPLIT_CASES: list[tuple[str, Callable[[dict], Any], str]] = [
    ("detection", lambda s: s["images"][0].pop("id"), "images[0].id"),
    ("detection", lambda s: s["images"][1].__setitem__("width", "wide"), "images[1].width"),
    ("detection", lambda s: s["images"][1].__setitem__("height", 10 ** 9), "images[1].height"),
    ("detection", lambda s: s["categories"][1].pop("id"), "categories[1].id"),
    ("detection", lambda s: s["annotations"][0].pop("image_id"), "annotations[0].image_id"),
    ("detection", lambda s: s["annotations"][0].__setitem__("image_id", 555), "annotations[0].image_id"),
    ("detection", lambda s: s["annotations"][0].__setitem__("bbox", [1, 2, "3", 4]), "annotations[0].bbox"),
    ("detection", lambda s: s["annotations"][0].__setitem__("iscrowd", "no"), "annotations[0].iscrowd"),
    ("detection", lambda s: s["annotations"][0].__setitem__("area", math.nan), "annotations[0].area"),
    ("detection", lambda s: s["annotations"][0]["segmentation"].__setitem__("counts", "0000"),
     "annotations[0].segmentation.counts"),
    ("detection", lambda s: s["annotations"][0].__setitem__("category_id", 1.5), "annotations[0].category_id"),
    ("detection", lambda s: s.__setitem__("images", {"id": 1}), "images"),
    ("tracking", lambda s: s["images"][0].pop("id"), "images[0].id"),
    ("tracking", lambda s: s["images"][2].__setitem__("frame_index", "third"), "images[2].frame_index"),
    ("tracking", lambda s: s["tracks"][0].pop("video_id"), "tracks[0].video_id"),
    ("tracking", lambda s: s["tracks"][1].__setitem__("id", math.inf), "tracks[1].id"),
    ("tracking", lambda s: s["annotations"][1].__setitem__("track_id", math.inf), "annotations[1].track_id"),
    ("tracking", lambda s: s["annotations"][1]["segmentation"].__setitem__("counts", "1"),
     "annotations[1].segmentation.counts"),
    ("tracking", lambda s: s["videos"][0].pop("id"), "videos[0].id"),
    ("tracking", lambda s: s["annotations"].__setitem__(0, "ann"), "annotations[0]"),
    ("forensics", lambda s: s["videos"][0].pop("id"), "videos[0].id"),
    ("forensics", lambda s: s["videos"][0].__setitem__("id", "one"), "videos[0].id"),
    ("forensics", lambda s: s["videos"][1].__setitem__("label", "fake"), "videos[1].label"),
    ("forensics", lambda s: s["videos"][4].__setitem__("generator", ["a"]), "videos[4].generator"),
    ("forensics", lambda s: s.__setitem__("videos", None), "videos"),
]


@pytest.mark.parametrize("task,mutate,field", SPLIT_CASES, ids=[f"{c[0]}-{c[2]}" for c in SPLIT_CASES])
def test_malformed_splits_are_refused_naming_file_entry_and_field(tmp_path, capsys, task, mutate, field):
    split, results = CASES[task]()
    mutate(split)
    split_path = write_json(tmp_path / "split.json", split)
    results_path = write_json(tmp_path / "results.json", results)
    code, err = run_cli(capsys, split_path, results_path, task)
    assert_one_line_error(code, err, split_path, field)
    with pytest.raises(DataError) as info:
        validate_scored_parts(split, task, str(split_path))
    assert info.value.field.startswith(field)


def test_every_task_has_a_case():
    assert set(CASES) == set(task_names())


@pytest.mark.parametrize("task", task_names())
def test_valid_splits_and_results_pass_validation(task):
    split, results = CASES[task]()
    validate_scored_parts(split, task, "split.json")
    metrics = evaluate(split, results, task, **case_options(task))
    assert metrics


def test_valid_files_still_evaluate_through_the_cli(tmp_path, capsys):
    split, results = detection_case()
    code, err = run_cli(capsys, write_json(tmp_path / "s.json", split), write_json(tmp_path / "r.json", results),
                        "detection")
    assert code == 0 and not err


FORENSICS_RESULTS_CASES = [
    (lambda r: r.__setitem__(0, [1]), "results[0]"),
    (lambda r: r[0].pop("video_id"), "results[0].video_id"),
    (lambda r: r[0].__setitem__("video_id", 99), "results[0].video_id"),
    (lambda r: r[0].__setitem__("video_id", "1"), "results[0].video_id"),
    (lambda r: r[1].__setitem__("video_id", 1), "results[1].video_id"),
    (lambda r: r[0].__setitem__("score", 10 ** 400), "results[0].score"),
    (lambda r: r[0].__setitem__("score", math.nan), "results[0].score"),
    (lambda r: r[0].__setitem__("score", None), "results[0].score"),
    (lambda r: r.pop(), "video_id"),
]


@pytest.mark.parametrize("mutate,field", FORENSICS_RESULTS_CASES, ids=[c[1] + str(i) for i, c in
                                                                       enumerate(FORENSICS_RESULTS_CASES)])
def test_validate_forensics_results_names_entry_and_field(mutate, field):
    split, results = forensics_case()
    validate_forensics_results(results, split, "preds.json")
    mutate(results)
    with pytest.raises(DataError) as info:
        validate_forensics_results(results, split, "preds.json", split_file="split.json")
    assert info.value.field == field and str(info.value).startswith("preds.json: ")
    with pytest.raises(DataError):  # evaluate_forensics refuses the same results
        evaluate(split, results, "forensics")
    split["videos"][0].pop("id")
    with pytest.raises(DataError, match=r"^split\.json: videos\[0\]\.id"):
        validate_forensics_results(results, split, "preds.json", split_file="split.json")


def test_the_first_bad_entry_is_named_although_compressed_masks_are_checked_in_batches():
    """Compressed RLE counts of results and of ground truth are decoded in batches after the other checks; the
    error raised is still that of the first bad entry in file order, whichever check finds it."""
    split, results = detection_case()
    assert len(results) >= 3 and len(split["annotations"]) >= 2
    results[1]["segmentation"] = {**results[1]["segmentation"], "counts": "0000"}  # found by the batch
    results[2]["category_id"] = 999  # found at once, later in the file
    with pytest.raises(DataError) as info:
        evaluate(split, results, "detection")
    assert info.value.field == "results[1].segmentation.counts"
    results[1]["segmentation"] = detection_case()[1][1]["segmentation"]
    with pytest.raises(DataError) as info:
        evaluate(split, results, "detection")
    assert info.value.field == "results[2].category_id"

    split, results = detection_case()
    first = split["annotations"][0]
    first["segmentation"] = {"size": [_image_size(split, first["image_id"])[0],
                                      _image_size(split, first["image_id"])[1]], "counts": "0000"}
    split["annotations"][1]["category_id"] = 999
    with pytest.raises(DataError) as info:
        evaluate(split, results, "detection")
    assert info.value.field == "annotations[0].segmentation.counts"
