"""Property-based malformed results files (bbox, segm, tracking, forensics) and splits: evaluation either returns
metrics or raises DataError / InputError, never another exception, and never hangs."""

from __future__ import annotations

import copy
import json
import math
from pathlib import Path
from datetime import timedelta
from typing import Any

import hypothesis.strategies as st
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

from tests.data.test_schema import json_value, mutated_splits
from tests.evaluation.test_results import CASES, no_hang  # noqa: F401  (no_hang: the autouse watchdog)
from vision.data.masks import encode_mask
from vision.data.schema import validate_scored_parts
from vision.errors import DataError, InputError
from vision.evaluation.evaluate import evaluate
from vision.evaluation.results import load_results, validate_forensics_results

# Small cases evaluate in well under a second; the deadline flags a case that becomes slow, the watchdog of
# test_results ends the run on one that never returns.
FUZZ = settings(max_examples=60, deadline=timedelta(seconds=30), suppress_health_check=list(HealthCheck),
                derandomize=True)

TASKS = {"bbox": "detection", "segm": "detection", "tracking": "tracking", "forensics": "forensics"}


@pytest.fixture(scope="module")
def cases() -> dict[str, tuple[dict, list[dict]]]:
    out = {kind: CASES[task]() for kind, task in TASKS.items()}
    split, results = out["bbox"]
    out["bbox"] = (split, [{k: v for k, v in r.items() if k != "segmentation"} for r in results])
    return out


def _expect_metrics_or_data_error(split: Any, results: Any, task: str) -> None:
    """The split is checked first, as tools/evaluate.py does; forensics results must pass
    validate_forensics_results exactly when evaluate_forensics accepts them."""
    try:
        validate_scored_parts(split, task, "split.json")
    except DataError as exc:
        assert "\n" not in str(exc)
        return
    accepted = True
    if task == "forensics":
        try:
            loaded, _ = load_results(results)
            validate_forensics_results(loaded, split, "results.json")
        except DataError:
            accepted = False
    try:
        metrics = evaluate(split, results, task)
    except (DataError, InputError) as exc:
        assert "\n" not in str(exc)
        assert not accepted or task != "forensics", f"validate_forensics_results accepted what evaluate refused: {exc}"
        return
    assert accepted, "validate_forensics_results refused results that evaluate scored"
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


@pytest.mark.parametrize("kind", sorted(TASKS))
@FUZZ
@given(data=st.data())
def test_structural_mutations_of_results(tmp_path_factory, cases, kind, data):
    split, results = cases[kind]
    mutated = data.draw(mutated_splits(results))
    path = tmp_path_factory.getbasetemp() / f"mutated_{kind}.json"
    path.write_text(json.dumps(mutated))
    _expect_metrics_or_data_error(split, path, TASKS[kind])


@pytest.mark.parametrize("kind", ["segm", "tracking"])
@FUZZ
@given(data=st.data())
def test_mutated_masks(cases, kind, data):
    split, results = cases[kind]
    _expect_metrics_or_data_error(split, data.draw(mutated_masks(results)), TASKS[kind])


@pytest.mark.parametrize("kind", sorted(TASKS))
@settings(FUZZ, max_examples=40)
@given(data=st.data())
def test_byte_mutations_of_results(tmp_path_factory, cases, kind, data):
    split, results = cases[kind]
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
    _expect_metrics_or_data_error(split, path, TASKS[kind])


@pytest.mark.parametrize("kind", sorted(TASKS))
@settings(FUZZ, max_examples=40)
@given(value=json_value)
def test_arbitrary_json_documents_as_results(cases, kind, value):
    split, _ = cases[kind]
    _expect_metrics_or_data_error(split, value if isinstance(value, list) else [value], TASKS[kind])


@pytest.mark.parametrize("kind", sorted(TASKS))
@settings(FUZZ, max_examples=40)
@given(data=st.data())
def test_structural_mutations_of_splits(cases, kind, data):
    split, results = cases[kind]
    _expect_metrics_or_data_error(data.draw(mutated_splits(split)), results, TASKS[kind])


finite = st.floats(allow_nan=False, allow_infinity=False) | st.sampled_from([0.0, 1.0, 1e-300, 1e300, -1e300])


@st.composite
def odd_but_valid_results(draw, split: dict, kind: str) -> list[dict]:
    """Well-formed results with extreme but finite numbers, random masks and repeated or missing entries."""
    if kind == "forensics":
        videos = [v["id"] for v in split["videos"]]
        return [{"video_id": v, "score": draw(finite)} for v in draw(st.permutations(videos))]
    images = split["images"]
    rng = np.random.default_rng(draw(st.integers(0, 2 ** 32 - 1)))
    out = []
    for _ in range(draw(st.integers(0, 8))):
        img = draw(st.sampled_from(images))
        mask = rng.random((img["height"], img["width"])) < draw(st.sampled_from([0.0, 0.01, 0.5, 1.0]))
        score = draw(finite)
        if kind == "tracking":
            track = draw(st.sampled_from(split["tracks"]))
            out.append({"video_id": img["video_id"], "track_id": track["id"], "image_id": img["id"],
                        "segmentation": encode_mask(mask), "score": score})
            continue
        x, y = draw(finite), draw(finite)
        w, h = (abs(draw(finite)) for _ in range(2))
        result = {"image_id": img["id"], "category_id": draw(st.sampled_from(split["categories"]))["id"],
                  "bbox": [x, y, w, h], "score": score}
        if kind == "segm":
            result["segmentation"] = encode_mask(mask)
        out.append(result)
    return out


@pytest.mark.parametrize("kind", sorted(TASKS))
@settings(FUZZ, max_examples=30)
@given(data=st.data())
def test_odd_but_valid_results_are_scored(cases, kind, data):
    split, _ = cases[kind]
    results = data.draw(odd_but_valid_results(split, kind))
    try:
        metrics = evaluate(split, results, TASKS[kind])
    except DataError as exc:  # tracking: two results for one track and image
        assert kind == "tracking" and "duplicate" in str(exc)
        return
    assert all(not isinstance(v, float) or math.isnan(v) or math.isfinite(v) for v in metrics.values())


def test_non_finite_numbers_never_reach_the_metrics(cases):
    for kind, (split, results) in cases.items():
        for value in (math.nan, math.inf, -math.inf):
            bad = copy.deepcopy(results)
            bad[0]["score"] = value
            with pytest.raises(DataError, match=r"results\[0\]\.score"):
                evaluate(split, bad, TASKS[kind])


def _integer_places(node: Any, path: tuple = ()) -> list[tuple]:
    """The paths (keys and indexes) of every integer in a JSON tree."""
    if isinstance(node, dict):
        return [p for k, v in node.items() for p in _integer_places(v, path + (k,))]
    if isinstance(node, list):
        return [p for i, v in enumerate(node) for p in _integer_places(v, path + (i,))]
    return [path] if isinstance(node, int) and not isinstance(node, bool) else []


@pytest.mark.parametrize("kind", sorted(TASKS))
@settings(FUZZ, max_examples=20)
@given(data=st.data(), digits=st.integers(401, 12_000), in_split=st.booleans())
def test_integer_literals_beyond_python_int_are_data_errors(tmp_path_factory, cases, kind, data, digits, in_split):
    """An integer literal of more than 4300 digits made int() raise a ValueError naming no place when it stood in
    a split (the results reader already guarded it): both files now read it as infinite, and scoring either
    refuses it by field or, where scoring does not read that field, scores as without it (never a ValueError)."""
    split, results = cases[kind]
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
        evaluate(split_path, results_path, TASKS[kind])
    except (DataError, InputError) as exc:
        assert "\n" not in str(exc) and str(split_path if in_split else results_path) in str(exc)
        return
    assert in_split, "a results file with an infinite number was scored"


@pytest.fixture(scope="module")
def geometry_case(tmp_path_factory) -> tuple[Path, list[dict]]:
    """A 2-view synthetic split and results that copy its cameras (constant depth, random points): a valid case to
    mutate the cameras of."""
    from vision.data.coco import load_split
    from vision.evaluation.results import encode_array
    from vision.synthetic.scenes import write_split

    path = write_split(tmp_path_factory.mktemp("geometry_fuzz"), "val", scenes=1, views=2, size=16,
                       mode="unordered", seed=2, threads=1)
    split = load_split(path)
    clip = sorted(split.images)
    rng = np.random.default_rng(0)
    results = [{"image_id": i, "clip": clip, "extrinsics": split.camera(split.images[i])[1].tolist(),
                "depth": encode_array(np.full((16, 16), 2.0, np.float32)),
                "world_points": encode_array(rng.normal(size=(16, 16, 3)).astype(np.float32))} for i in clip]
    return path, results


finite = st.floats(-1e6, 1e6, allow_nan=False, allow_infinity=False)
cameras = st.one_of(
    st.just(np.zeros((3, 4)).tolist()),
    st.lists(st.lists(finite, min_size=4, max_size=4), min_size=3, max_size=3),
    st.builds(lambda s, t: (s * np.eye(3, 4) + np.array([[0, 0, 0, t]] * 3)).tolist(),
              st.sampled_from([1.0, -1.0, 0.999, 1.5, 1e-9]), finite))


@settings(FUZZ, max_examples=40)
@given(matrix=cameras, which=st.integers(0, 1))
def test_any_camera_matrix_gives_metrics_or_a_data_error(geometry_case, matrix, which):
    """All-zero or otherwise non-rotation extrinsics made scipy raise ValueError; a camera is a rotation or a
    DataError naming results[i].extrinsics."""
    path, results = geometry_case
    broken = copy.deepcopy(results)
    broken[which]["extrinsics"] = matrix
    try:
        metrics = evaluate(path, broken, "geometry")
    except DataError as exc:
        assert "\n" not in str(exc) and f"results[{which}].extrinsics" in str(exc)
        return
    assert 0.0 <= metrics["AUC@30"] <= 1.0
