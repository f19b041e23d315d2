"""Detection results that name their categories (``category_name``, what ``vision-predict --task detection``
writes) are scored under the split's ids of those names, whatever ids the user's vocabulary gave them; a name the
split lacks is one error line, never a figure against the wrong classes; results without names score as before."""

from __future__ import annotations

import copy
import json

import pytest

from tests.evaluation.conftest import make_detection_case, pycocotools_stats
from vision.cli import evaluate as evaluate_cli
from vision.errors import DataError
from vision.evaluation.evaluate import evaluate
from vision.evaluation.tasks.detection import UNKNOWN_NAME, named_category_ids, validate_detection_results

#: a user's vocabulary in another order than the split's ids (mug=1, box=2, cone=3): its positions 1..3 are the
#: ids the predictor writes, and position 1 is cone, 2 mug, 3 box
VOCABULARY = ["cone", "mug", "box"]


@pytest.fixture(scope="module")
def case() -> tuple[dict, list[dict], list[dict]]:
    """``(split whose ids 1..3 mean mug, box, cone, results under the split's ids, the same results as the
    predictor writes them: the vocabulary's positions as ids and the names)``."""
    split, results = make_detection_case(seed=3, num_images=10)
    ids = {1: 1, 2: 2, 5: 3}  # the fixture's cone (5) as 3: ids 1..K, as the vocabulary's positions
    for category in split["categories"]:
        category["id"] = ids[category["id"]]
    for entry in (*split["annotations"], *results):
        entry["category_id"] = ids[entry["category_id"]]
    names = {c["id"]: c["name"] for c in split["categories"]}
    named = [{**r, "category_id": VOCABULARY.index(names[r["category_id"]]) + 1,
              "category_name": names[r["category_id"]]} for r in results]
    assert any(r["category_id"] != n["category_id"] for r, n in zip(results, named))
    return split, results, named


def _write(tmp_path, split: dict, results: list[dict]) -> tuple[str, str]:
    (tmp_path / "split.json").write_text(json.dumps(split))
    (tmp_path / "results.json").write_text(json.dumps(results))
    return str(tmp_path / "split.json"), str(tmp_path / "results.json")


def test_named_results_score_under_the_split_ids_of_their_names(case, tmp_path):
    split, results, named = case
    expected = evaluate(split, results, "detection")
    assert evaluate(split, named, "detection") == expected
    assert evaluate(*_write(tmp_path, split, named), "detection") == expected
    # the same ids without the names are scored against the wrong classes: the figure the names prevent
    positions = [{k: v for k, v in r.items() if k != "category_name"} for r in named]
    assert evaluate(split, positions, "detection")["AP"] < expected["AP"] - 0.1


def test_the_cli_scores_named_results_as_the_split_ids(case, tmp_path, capsys):
    split, results, named = case
    split_file, results_file = _write(tmp_path, split, results)
    assert evaluate_cli.main(["--split", split_file, "--results", results_file, "--task", "detection"]) == 0
    expected = capsys.readouterr().out
    _, named_file = _write(tmp_path, split, named)
    assert evaluate_cli.main(["--split", split_file, "--results", named_file, "--task", "detection"]) == 0
    assert capsys.readouterr().out == expected


def test_names_are_compared_ignoring_case_and_spacing(case):
    split, results, named = case
    shouted = [{**r, "category_name": "  " + r["category_name"].upper()} for r in named]
    assert evaluate(split, shouted, "detection") == evaluate(split, results, "detection")


def test_a_name_the_split_lacks_is_one_error_line(case, tmp_path, capsys):
    split, _, named = case
    bad = copy.deepcopy(named)
    bad[4]["category_name"] = "zebra"
    split_file, results_file = _write(tmp_path, split, bad)
    with pytest.raises(DataError) as info:
        evaluate(split_file, results_file, "detection")
    message = str(info.value)
    assert message.startswith(f"{results_file}: results[4].category_name='zebra': category_name names none of "
                              "the split's categories ('mug', 'box', 'cone')")
    assert "\n" not in message
    assert evaluate_cli.main(["--split", split_file, "--results", results_file, "--task", "detection"]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err == f"error: {message}\n"


def test_the_names_decide_not_the_ids(case):
    """An id of the split under another category's name is scored under the name's id; the split's own name for
    that id does not matter."""
    split, results, _ = case
    swapped = [{**r, "category_id": 1, "category_name": {1: "mug", 2: "box", 3: "cone"}[r["category_id"]]}
               for r in results]
    assert evaluate(split, swapped, "detection") == evaluate(split, results, "detection")


def test_some_named_and_some_not_is_refused(case):
    split, _, named = case
    mixed = copy.deepcopy(named)
    del mixed[2]["category_name"]
    with pytest.raises(DataError, match=r"^results\[2\]=.*has no category_name while results\[0\] names its "
                                        r"category: either every result names its category or none does$"):
        evaluate(split, mixed, "detection")


def test_a_name_that_is_not_a_string_is_refused(case):
    split, _, named = case
    bad = copy.deepcopy(named)
    bad[1]["category_name"] = 2
    with pytest.raises(DataError, match=r"^results\[1\]\.category_name=2: expected a string, got int$"):
        evaluate(split, bad, "detection")


def test_a_name_two_split_categories_share_is_refused(case):
    split, _, named = case
    twice = copy.deepcopy(split)
    twice["categories"].append({"id": 9, "name": "Mug"})
    first = next(i for i, r in enumerate(named) if r["category_name"] == "mug")
    with pytest.raises(DataError, match=rf"^results\[{first}\]\.category_name='mug': category_name names 2 of the "
                                        r"split's categories \(ids \[1, 9\]\)$"):
        evaluate(twice, named, "detection")


def test_rejected_objects_keep_the_unknown_id(case):
    """A rejected object (``unknown`` under the id 1000) keeps its id: the open-set figures are those of the same
    results under the split's ids; without ``unknown_category_id`` its id is refused, as for unnamed results."""
    split, results, named = case
    unknown = [{**r, "category_id": 1000} for r in results[::4]]
    options = dict(unknown_category_id=1000, category_ids=[1, 2, 3])
    expected = evaluate(split, results + unknown, "detection", **options)
    named_unknown = [{**r, "category_name": UNKNOWN_NAME} for r in unknown]
    assert evaluate(split, named + named_unknown, "detection", **options) == expected
    with pytest.raises(DataError, match=r"category_id=1000: category_id is not in the split's categories$"):
        evaluate(split, named + named_unknown, "detection")


def test_results_without_names_are_scored_as_before(case):
    split, results, _ = case
    assert named_category_ids(results, split) is results
    metrics = evaluate(split, results, "detection")
    reference = pycocotools_stats(split, results, "bbox")
    for key, value in reference.items():
        assert metrics[key] == pytest.approx(value, abs=1e-4), key


def test_the_results_check_reads_the_names(case):
    """The registry's results check (``check_results``) accepts what the scorer scores: named results whose ids
    are not the split's."""
    split, _, named = case
    renumbered = copy.deepcopy(split)
    for category in renumbered["categories"]:
        category["id"] += 10
    for annotation in renumbered["annotations"]:
        annotation["category_id"] += 10
    assert validate_detection_results(named, renumbered, "results.json") is True
    with pytest.raises(DataError, match="category_id is not in the split's categories"):
        validate_detection_results([{k: v for k, v in r.items() if k != "category_name"} for r in named],
                                   renumbered, "results.json")
