"""Property-based malformed results files (bbox, segm, tracking, forensics) and splits: evaluation either returns
metrics or raises DataError / InputError, never another exception, and never hangs."""

from __future__ import annotations

import copy
import json
import math
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
