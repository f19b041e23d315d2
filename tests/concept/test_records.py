"""The concept results records: instance records (RLE at the image's size, the mask's box, score, phrase),
presence records, the phrases queried on a video, and the errors on bad input."""

from __future__ import annotations

import numpy as np
import pytest

from vision.concept.records import PROMPT_TYPE, instance_record, presence_record, queried_phrases, view_records
from vision.data.coco import Split
from vision.data.masks import decode_rle
from vision.errors import DataError, InputError


def _mask(h: int = 6, w: int = 9) -> np.ndarray:
    mask = np.zeros((h, w), bool)
    mask[2:5, 3:7] = True
    return mask


def test_instance_record_has_the_contract_fields():
    mask = _mask()
    record = instance_record(3, 11, 2, 7, "mug", mask, np.float32(0.75))
    assert set(record) == {"video_id", "image_id", "track_id", "category_id", "phrase", "segmentation", "bbox",
                           "score", "prompt_type"}
    assert (record["video_id"], record["image_id"], record["track_id"], record["category_id"]) == (3, 11, 2, 7)
    assert record["phrase"] == "mug" and record["prompt_type"] == PROMPT_TYPE == "concept"
    assert record["segmentation"]["size"] == [6, 9] and isinstance(record["segmentation"]["counts"], str)
    assert np.array_equal(decode_rle(record["segmentation"]), mask)
    assert record["bbox"] == [3.0, 2.0, 4.0, 3.0]
    assert type(record["score"]) is float and record["score"] == 0.75
    assert all(type(record[k]) is int for k in ("video_id", "image_id", "track_id", "category_id"))


@pytest.mark.parametrize("score", [-0.01, 1.01, float("nan"), "high"])
def test_a_score_outside_0_1_is_refused(score):
    with pytest.raises(InputError, match="score of track 2 on image 11"):
        instance_record(3, 11, 2, 7, "mug", _mask(), score)


def test_bad_masks_and_phrases_are_refused():
    with pytest.raises(InputError, match="is empty"):
        instance_record(3, 11, 2, 7, "mug", np.zeros((4, 4), bool), 0.5)
    with pytest.raises(InputError, match=r"2-D mask \[H, W\]"):
        instance_record(3, 11, 2, 7, "mug", np.ones((1, 4, 4), bool), 0.5)
    with pytest.raises(InputError, match="phrase ' ' is nothing visible"):
        instance_record(3, 11, 2, 7, " ", _mask(), 0.5)


def test_view_records_skip_empty_masks():
    masks = np.stack([_mask(), np.zeros((6, 9), bool), _mask()[::-1]])
    records = view_records(1, 5, [1, 2, 3], [7, 7, 8], ["mug", "mug", "bowl"], masks, [0.9, 0.8, 0.4])
    assert [r["track_id"] for r in records] == [1, 3]
    assert [r["phrase"] for r in records] == ["mug", "bowl"]
    assert np.array_equal(decode_rle(records[1]["segmentation"]), masks[2])
    assert view_records(1, 5, [], [], [], np.zeros((0, 6, 9), bool), []) == []
    with pytest.raises(InputError, match="masks \\[N, H, W\\] and N track ids"):
        view_records(1, 5, [1, 2], [7, 7], ["mug", "mug"], masks, [0.9, 0.8])


def test_presence_record():
    assert presence_record(1, 5, 7, np.float32(0.25)) == {"video_id": 1, "image_id": 5, "category_id": 7,
                                                          "presence": 0.25}
    assert presence_record(1, 5, 7, 0)["presence"] == 0.0
    with pytest.raises(InputError, match="presence of category 7 on image 5"):
        presence_record(1, 5, 7, 1.5)


def _split(videos: list[dict]) -> Split:
    dataset = {"images": [], "annotations": [], "videos": videos,
               "categories": [{"id": 1, "name": "mug"}, {"id": 2, "name": "bowl"}, {"id": 5, "name": "chair"}],
               "tracks": [{"id": 1, "video_id": 1, "category_id": 5}, {"id": 2, "video_id": 1, "category_id": 1},
                          {"id": 3, "video_id": 1, "category_id": 5}, {"id": 4, "video_id": 2, "category_id": 2}]}
    return Split(dataset, ".", file="split.json")


def test_queried_phrases_are_the_concepts_else_the_track_categories():
    split = _split([{"id": 1}, {"id": 2, "concepts": [5, 2]}, {"id": 3}])
    assert queried_phrases(split, 1) == {1: "mug", 5: "chair"}
    assert list(queried_phrases(split, 2).items()) == [(2, "bowl"), (5, "chair")]  # an absent phrase is queried
    assert queried_phrases(split, 3) == {}
    with pytest.raises(InputError, match="video 9 is not in split split.json"):
        queried_phrases(split, 9)
    with pytest.raises(DataError, match=r"split.json: videos\[id=1\].concepts=4"):
        queried_phrases(_split([{"id": 1, "concepts": [1, 4]}]), 1)
