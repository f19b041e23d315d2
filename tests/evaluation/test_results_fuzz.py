"""Property-based malformed results files of every registered task (detection's bbox and segm results, tracking,
forensics, geometry, concept) and splits: evaluation either returns metrics or raises DataError / InputError in one
line, never another exception, and never hangs; what a task's results validator refuses is never scored."""

from __future__ import annotations

import copy
import json
import math
from datetime import timedelta
from typing import Any, Callable

import hypothesis.strategies as st
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

from tests.data.test_schema import json_value, mutated_splits
from tests.evaluation.test_results import CASES, case_options, no_hang  # noqa: F401  (no_hang: the autouse watchdog)
from vision.data.masks import encode_mask
from vision.evaluation.evaluate import validate_scored_parts
from vision.errors import DataError, InputError
from vision.evaluation.evaluate import evaluate
from vision.evaluation.results import encode_array, load_results
from vision.evaluation.tasks.concept import validate_concept_results
from vision.evaluation.tasks.detection import validate_detection_results
from vision.evaluation.tasks.forensics import validate_forensics_results
from vision.evaluation.tasks.geometry import validate_geometry_results
from vision.evaluation.tasks.tracking import validate_tracking_results
from vision.tasks import task_names

# Small cases evaluate in well under a second; the deadline flags a case that becomes slow, the watchdog of
# test_results ends the run on one that never returns.
FUZZ = settings(max_examples=60, deadline=timedelta(seconds=30), suppress_health_check=list(HealthCheck),
                derandomize=True)

#: The kinds of results fuzzed and the task that scores each: detection twice (boxes only, boxes and masks).
KINDS: dict[str, str] = {"bbox": "detection", "segm": "detection", "tracking": "tracking", "forensics": "forensics",
                         "geometry": "geometry", "concept": "concept"}

#: Each task's results validator and whether it decides alone (results are scored exactly when it accepts them);
#: where not, scoring refuses more (tracking: unknown tracks, duplicates; geometry: depth that cannot be scaled).
VALIDATORS: dict[str, tuple[Callable[..., Any], bool]] = {
    "detection": (validate_detection_results, False), "tracking": (validate_tracking_results, False),
    "forensics": (validate_forensics_results, True), "geometry": (validate_geometry_results, False),
    "concept": (validate_concept_results, True)}

#: The kinds whose results carry RLE masks.
MASKED = ("segm", "tracking", "concept")


def test_every_task_is_fuzzed():
    """A new task cannot be left out of the fuzzing: its results need a case here, in KINDS and VALIDATORS."""
    assert set(KINDS.values()) == set(task_names()) == set(VALIDATORS) == set(CASES)


Case = tuple[dict, list[dict], dict[str, Any]]  # (split, results, scoring options)


@pytest.fixture(scope="module")
def cases() -> dict[str, Case]:
    out = {kind: (*CASES[task](), case_options(task)) for kind, task in KINDS.items()}
    split, results, options = out["bbox"]
    out["bbox"] = (split, [{k: v for k, v in r.items() if k != "segmentation"} for r in results], options)
    return out


def _expect_metrics_or_data_error(split: Any, results: Any, kind: str, options: dict[str, Any]) -> None:
    """The split is checked first, as vision-evaluate does; then the task's validator (called by its name) and
    evaluate must agree: what the validator refuses is never scored, and where it decides alone, what it accepts is
    scored. Every refusal is one line."""
    task = KINDS[kind]
    try:
        validate_scored_parts(split, task, "split.json")
    except DataError as exc:
        assert "\n" not in str(exc)
        return
    validator, decides = VALIDATORS[task]
    accepted = True
    try:
        loaded, _ = load_results(results)
        validator(loaded, split, "results.json")
    except DataError as exc:
        assert "\n" not in str(exc)
        accepted = False
    try:
        metrics = evaluate(split, results, task, **options)
    except (DataError, InputError) as exc:
        assert "\n" not in str(exc)
        assert not (accepted and decides), f"{validator.__name__} accepted what evaluate refused: {exc}"
        return
    assert accepted, f"{validator.__name__} refused results that evaluate scored"
    assert isinstance(metrics, dict)


@st.composite
def mutated_masks(draw, results: list[dict]) -> list[dict]:
    """One result's RLE counts cut, patched, padded or replaced by run lengths (the masks fuzzing of splits
    rarely reaches)."""
    results = copy.deepcopy(results)
    rle = draw(st.sampled_from([r["segmentation"] for r in results if isinstance(r.get("segmentation"), dict)]))
    counts = rle["counts"]
    kind = draw(st.sampled_from(["cut", "patch", "append", "runs", "text"]))
    if kind == "cut":
        rle["counts"] = counts[: draw(st.integers(0, len(counts)))]
    elif kind == "patch":
        at = draw(st.integers(0, len(counts) - 1))
        rle["counts"] = counts[:at] + draw(st.text(min_size=1, max_size=3)) + counts[at + 1:]
    elif kind == "append":
        rle["counts"] = counts + draw(st.text(alphabet=[chr(c) for c in range(48, 112)], min_size=1, max_size=3))
    elif kind == "runs":
        rle["counts"] = draw(st.lists(st.integers(-5, 3000) | st.sampled_from([0.5, True, None, "1", 10 ** 30]),
                                      max_size=8))
    else:
        rle["counts"] = draw(st.text(max_size=12))
    return results


#: Values a writer of results gets wrong: integers beyond int64 and a double, numbers out of [0, 1], non-finite
#: floats, bools standing for numbers, wrong types.
HOSTILE: list[Any] = [2 ** 63, -(2 ** 63) - 1, 2 ** 64, 10 ** 30, 10 ** 400, -1, 0, 1, 1.0, 1.5, -0.1, 1e300,
                      math.nan, math.inf, -math.inf, True, False, None, "1", "", [], {}, [1, 2], [1, 2, 3, 4]]
#: Fields of some results format, set on any record: a record of one kind may get a field of another.
FIELDS = ("video_id", "image_id", "track_id", "category_id", "phrase", "segmentation", "bbox", "score", "presence",
          "prompt_type", "clip", "extrinsics", "depth", "world_points")


@st.composite
def mutated_records(draw, results: list[dict], split: dict) -> list[dict]:
    """One to three edits of the records: a field set to a hostile value or deleted, a record duplicated, moved to
    another image of the split, or given a mask (or a dense map) of another size."""
    results = copy.deepcopy(results)
    for _ in range(draw(st.integers(1, 3))):
        if not results:
            break
        record = draw(st.sampled_from(results))
        edit = draw(st.sampled_from(["set", "delete", "duplicate", "move", "size"]))
        if edit == "set":
            record[draw(st.sampled_from(sorted(set(record) | set(FIELDS))))] = copy.deepcopy(
                draw(st.sampled_from(HOSTILE) | json_value))
        elif edit == "delete" and record:
            del record[draw(st.sampled_from(sorted(record)))]
        elif edit == "duplicate":
            results.insert(draw(st.integers(0, len(results))), copy.deepcopy(record))
        elif edit == "move" and split.get("images"):
            record["image_id"] = draw(st.sampled_from(split["images"]))["id"]
        elif edit == "size":
            h, w = draw(st.integers(1, 9)), draw(st.integers(1, 9))
            key = draw(st.sampled_from(["segmentation", "depth", "world_points"]))
            record[key] = (encode_mask(np.ones((h, w), bool)) if key == "segmentation" else
                           encode_array(np.ones((h, w) if key == "depth" else (h, w, 3))))
    return results


@pytest.mark.parametrize("kind", KINDS)
@FUZZ
@given(data=st.data())
def test_structural_mutations_of_results(tmp_path_factory, cases, kind, data):
    split, results, options = cases[kind]
    mutated = data.draw(mutated_splits(results))
    path = tmp_path_factory.getbasetemp() / f"mutated_{kind}.json"
    path.write_text(json.dumps(mutated))
    _expect_metrics_or_data_error(split, path, kind, options)


@pytest.mark.parametrize("kind", KINDS)
@FUZZ
@given(data=st.data())
def test_mutated_records(cases, kind, data):
    """Hostile values in the fields of the format (Python objects, as an API caller passes them)."""
    split, results, options = cases[kind]
    _expect_metrics_or_data_error(split, data.draw(mutated_records(results, split)), kind, options)


@pytest.mark.parametrize("kind", MASKED)
@FUZZ
@given(data=st.data())
def test_mutated_masks(cases, kind, data):
    split, results, options = cases[kind]
    _expect_metrics_or_data_error(split, data.draw(mutated_masks(results)), kind, options)


@pytest.mark.parametrize("kind", KINDS)
@settings(FUZZ, max_examples=40)
@given(data=st.data())
def test_byte_mutations_of_results(tmp_path_factory, cases, kind, data):
    split, results, options = cases[kind]
    raw = json.dumps(results).encode()
    at = data.draw(st.integers(0, len(raw) - 1))
    edit = data.draw(st.sampled_from(["truncate", "overwrite", "insert"]))
    if edit == "truncate":
        raw = raw[:at]
    elif edit == "overwrite":
        patch = data.draw(st.binary(min_size=1, max_size=4) | st.sampled_from([b"NaN", b"-Infinity", b"9" * 401]))
        raw = raw[:at] + patch + raw[at + len(patch):]
    else:
        raw = raw[:at] + data.draw(st.sampled_from([b"[", b"{", b"]", b",", b'"', b"1e999", b"9" * 5000])) + raw[at:]
    path = tmp_path_factory.getbasetemp() / f"bytes_{kind}.json"
    path.write_bytes(raw)
    _expect_metrics_or_data_error(split, path, kind, options)


@pytest.mark.parametrize("kind", KINDS)
@settings(FUZZ, max_examples=40)
@given(value=json_value)
def test_arbitrary_json_documents_as_results(cases, kind, value):
    split, _, options = cases[kind]
    _expect_metrics_or_data_error(split, value if isinstance(value, list) else [value], kind, options)


@pytest.mark.parametrize("kind", KINDS)
@settings(FUZZ, max_examples=40)
@given(data=st.data())
def test_structural_mutations_of_splits(cases, kind, data):
    split, results, options = cases[kind]
    _expect_metrics_or_data_error(data.draw(mutated_splits(split)), results, kind, options)


finite = st.floats(allow_nan=False, allow_infinity=False) | st.sampled_from([0.0, 1.0, 1e-300, 1e300, -1e300])
unit = st.floats(0.0, 1.0) | st.sampled_from([0.0, 1.0, 0.5, 5e-324])
any_id = st.integers(-(2 ** 70), 2 ** 70) | st.sampled_from([0, -1, 2 ** 63 - 1, 2 ** 63, -(2 ** 63) - 1, 2 ** 64])


def _random_rotation(draw) -> np.ndarray:
    """A rotation matrix from a random unit quaternion (or the identity)."""
    q = np.array([draw(st.floats(-1.0, 1.0)) for _ in range(4)])
    if np.linalg.norm(q) < 1e-3:
        return np.eye(3)
    w, x, y, z = q / np.linalg.norm(q)
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
                     [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
                     [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]])


@st.composite
def odd_but_valid_results(draw, split: dict, results: list[dict], kind: str) -> list[dict]:
    """Well-formed results with extreme but finite numbers, random masks and repeated or missing entries; concept
    records with ids of any size."""
    if kind == "forensics":
        videos = [v["id"] for v in split["videos"]]
        return [{"video_id": v, "score": draw(finite)} for v in draw(st.permutations(videos))]
    rng = np.random.default_rng(draw(st.integers(0, 2 ** 32 - 1)))
    if kind == "geometry":  # the case's clip, each view with a random camera, positive depth and points
        out = []
        for r in results:
            scale = draw(st.sampled_from([1e-30, 1e-3, 1.0, 1e3, 1e30]))
            camera = np.concatenate([_random_rotation(draw), rng.normal(size=(3, 1)) * draw(
                st.sampled_from([0.0, 1e-9, 1.0, 1e6, 1e99]))], axis=1)
            out.append({**r, "extrinsics": camera.tolist(),
                        "depth": encode_array(rng.uniform(0.1, 10.0, (8, 8)) * scale),
                        "world_points": encode_array(rng.normal(size=(8, 8, 3)) * scale)})
        return out
    images = split["images"]
    out = []
    seen: set[tuple] = set()
    tracks: dict[tuple[int, int], int] = {}  # concept: (video, track) -> its one category
    for _ in range(draw(st.integers(0, 8))):
        img = draw(st.sampled_from(images))
        mask = rng.random((img["height"], img["width"])) < draw(st.sampled_from([0.0, 0.01, 0.5, 1.0]))
        score = draw(finite)
        if kind == "tracking":
            track = draw(st.sampled_from(split["tracks"]))
            out.append({"video_id": img["video_id"], "track_id": track["id"], "image_id": img["id"],
                        "segmentation": encode_mask(mask), "score": score})
            continue
        if kind == "concept":
            video = next(v for v in split["videos"] if v["id"] == img["video_id"])
            category = draw(st.sampled_from(video["concepts"]))
            if draw(st.booleans()):
                if ("presence", img["id"], category) not in seen:
                    seen.add(("presence", img["id"], category))
                    out.append({"video_id": video["id"], "image_id": img["id"], "category_id": category,
                                "presence": draw(unit)})
                continue
            track = draw(any_id)
            category = tracks.setdefault((video["id"], track), category)
            if ("instance", video["id"], track, img["id"]) not in seen:
                seen.add(("instance", video["id"], track, img["id"]))
                name = next(c["name"] for c in split["categories"] if c["id"] == category)
                out.append({"video_id": video["id"], "image_id": img["id"], "track_id": track,
                            "category_id": category, "phrase": name, "segmentation": encode_mask(mask),
                            "bbox": [draw(finite), draw(finite), abs(draw(finite)), abs(draw(finite))],
                            "score": draw(unit)})
            continue
        x, y = draw(finite), draw(finite)
        w, h = (abs(draw(finite)) for _ in range(2))
        result = {"image_id": img["id"], "category_id": draw(st.sampled_from(split["categories"]))["id"],
                  "bbox": [x, y, w, h], "score": score}
        if kind == "segm":
            result["segmentation"] = encode_mask(mask)
        out.append(result)
    return out


@pytest.mark.parametrize("kind", KINDS)
@settings(FUZZ, max_examples=30)
@given(data=st.data())
def test_odd_but_valid_results_are_scored(cases, kind, data):
    split, results, options = cases[kind]
    odd = data.draw(odd_but_valid_results(split, results, kind))
    try:
        metrics = evaluate(split, odd, KINDS[kind], **options)
    except DataError as exc:  # tracking: two results for one track and image
        assert kind == "tracking" and "duplicate" in str(exc)
        return
    assert all(not isinstance(v, float) or math.isnan(v) or math.isfinite(v) for v in metrics.values())


#: Per kind, the place of a number in its case's results: NaN and infinities put there must be refused by name.
NUMBER_PLACES: dict[str, tuple] = {"bbox": (0, "score"), "segm": (0, "score"), "tracking": (0, "score"),
                                   "forensics": (0, "score"), "geometry": (0, "extrinsics", 0, 3),
                                   "concept": (0, "score")}


def test_non_finite_numbers_never_reach_the_metrics(cases):
    assert set(NUMBER_PLACES) == set(KINDS)
    for kind, (split, results, options) in cases.items():
        *where, last = NUMBER_PLACES[kind]
        field = "results" + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in NUMBER_PLACES[kind])
        for value in (math.nan, math.inf, -math.inf):
            bad = copy.deepcopy(results)
            container = bad
            for key in where:
                container = container[key]
            container[last] = value
            with pytest.raises(DataError) as info:
                evaluate(split, bad, KINDS[kind], **options)
            assert info.value.field == field, (kind, str(info.value))


def _integer_places(node: Any, path: tuple = ()) -> list[tuple]:
    """The paths (keys and indexes) of every integer in a JSON tree."""
    if isinstance(node, dict):
        return [p for k, v in node.items() for p in _integer_places(v, path + (k,))]
    if isinstance(node, list):
        return [p for i, v in enumerate(node) for p in _integer_places(v, path + (i,))]
    return [path] if isinstance(node, int) and not isinstance(node, bool) else []


@pytest.mark.parametrize("kind", KINDS)
@settings(FUZZ, max_examples=20)
@given(data=st.data(), digits=st.integers(401, 12_000), in_split=st.booleans())
def test_integer_literals_beyond_python_int_are_data_errors(tmp_path_factory, cases, kind, data, digits, in_split):
    """An integer literal of more than 4300 digits made int() raise a ValueError naming no place when it stood in
    a split (the results reader already guarded it): both files now read it as infinite, and scoring either
    refuses it by field or, where scoring does not read that field, scores as without it (never a ValueError)."""
    split, results, options = cases[kind]
    document = copy.deepcopy(split if in_split else results)
    places = _integer_places(document)
    if not places:
        return
    place = data.draw(st.sampled_from(places))
    container = document
    for key in place[:-1]:
        container = container[key]
    container[place[-1]] = "__BIG__"
    text = json.dumps(document).replace('"__BIG__"', data.draw(st.sampled_from(["", "-"])) + "3" * digits)
    folder = tmp_path_factory.getbasetemp()
    split_path, results_path = folder / f"big_split_{kind}.json", folder / f"big_results_{kind}.json"
    split_path.write_text(text if in_split else json.dumps(split))
    results_path.write_text(json.dumps(results) if in_split else text)
    try:
        evaluate(split_path, results_path, KINDS[kind], **options)
    except (DataError, InputError) as exc:
        assert "\n" not in str(exc) and str(split_path if in_split else results_path) in str(exc)
        return
    assert in_split, "a results file with an infinite number was scored"


finite_entry = st.floats(-1e6, 1e6, allow_nan=False, allow_infinity=False)
cameras = st.one_of(
    st.just(np.zeros((3, 4)).tolist()),
    st.lists(st.lists(finite_entry, min_size=4, max_size=4), min_size=3, max_size=3),
    st.builds(lambda s, t: (s * np.eye(3, 4) + np.array([[0, 0, 0, t]] * 3)).tolist(),
              st.sampled_from([1.0, -1.0, 0.999, 1.5, 1e-9]), finite_entry),
    st.builds(lambda t: (np.eye(3, 4) + np.array([[0, 0, 0, t]] * 3)).tolist(),
              st.sampled_from([1e100, -1e100, 1.0000001e100, 1e154, 1e160, -1e300, 1e308])))


@settings(FUZZ, max_examples=40)
@given(matrix=cameras, which=st.integers(0, 2))
def test_any_camera_matrix_gives_metrics_or_a_data_error(cases, matrix, which):
    """All-zero or otherwise non-rotation extrinsics made scipy raise ValueError, and translations of 1e160 made
    the pose errors overflow: a camera is a rotation with entries of at most 1e100, or a DataError naming
    results[i].extrinsics."""
    split, results, options = cases["geometry"]
    broken = copy.deepcopy(results)
    broken[which]["extrinsics"] = matrix
    try:
        with np.errstate(over="raise"):  # an overflow in scoring is an error here, not a warning
            metrics = evaluate(split, broken, "geometry", **options)
    except DataError as exc:
        assert "\n" not in str(exc) and f"results[{which}].extrinsics" in str(exc)
        return
    assert 0.0 <= metrics["AUC@30"] <= 1.0


@pytest.mark.parametrize("translation, scored", [(1e100, True), (-1e100, True), (2e100, False), (1e160, False),
                                                 (1e308, False)])
def test_camera_translations_are_scored_up_to_1e100(cases, translation, scored):
    """Beyond about 1e154 the squares in the pose errors overflowed (a RuntimeWarning and a translation angle of
    90 degrees whatever the direction): entries beyond 1e100 are refused, by field."""
    split, results, options = cases["geometry"]
    broken = copy.deepcopy(results)
    broken[1]["extrinsics"][0][3] = translation
    if scored:
        with np.errstate(over="raise"):
            assert 0.0 <= evaluate(split, broken, "geometry", **options)["AUC@30"] <= 1.0
        return
    with pytest.raises(DataError, match=r"results\[1\]\.extrinsics=.*at most 1e\+100") as info:
        evaluate(split, broken, "geometry", **options)
    assert info.value.field == "results[1].extrinsics"
