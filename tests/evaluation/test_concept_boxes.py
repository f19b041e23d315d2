"""Box answers of a concept prompt against reference boxes (vision/evaluation/concept_boxes.py): frame and instance
recall, false positives per frame, and the ids along the chains of reference boxes, on small hand-made clips."""

from __future__ import annotations

import numpy as np
import pytest

from vision.evaluation.concept_boxes import box_iou_xyxy, chain_boxes, match_boxes, score_clip

A = [0.0, 0.0, 10.0, 10.0]
B = [50.0, 50.0, 70.0, 70.0]


def test_iou_and_the_matching_that_makes_the_most_pairs():
    assert box_iou_xyxy([A], [A])[0, 0] == 1 and box_iou_xyxy([A], [B])[0, 0] == 0
    assert box_iou_xyxy([A], [[5.0, 0, 15, 10]])[0, 0] == pytest.approx(1 / 3)
    # IoU [[0.6, 0.491], [0.22, 0.058]]: the highest total IoU (0-1, 1-0) makes no pair at 0.5, the most pairs
    # at 0.5 is one, 0-0
    a = [A, [7.0, 0, 11, 10]]
    b = [[0.0, 0, 10, 6], [-3.0, 0, 8, 13]]
    assert match_boxes([A], [], 0.5) == [] and match_boxes(a, b, 0.5) == [(0, 0)]


def test_chains_follow_the_reference_boxes_from_frame_to_frame():
    moved = [[1.0, 0, 11, 10], [52.0, 50, 72, 70]]
    assert chain_boxes([[A, B], moved, [], [A]], 0.3) == [[(0, 0), (1, 0)], [(0, 1), (1, 1)], [(3, 0)]]


def test_recall_false_positives_and_id_switches():
    reference = [[A, B], [A, B], [A, B], [A], []]
    answers = [([1, 2], [A, B]),          # both found
               ([1, 3], [A, B]),          # B's id changes: one switch
               ([1, 9], [A, [80.0, 80, 90, 90]]),  # B missed, a box on nothing
               ([], np.zeros((0, 4))),    # A missed
               ([4], [[30.0, 30, 40, 40]])]       # a frame without the class: a false positive
    figures = score_clip(reference, answers)
    assert figures["frames"] == 5 and figures["frames_with_class"] == 4
    assert figures["frame_recall"] == 3 / 4
    assert figures["reference_boxes"] == 7 and figures["instance_recall"] == 5 / 7
    assert figures["false_positives_per_frame"] == 2 / 5
    assert figures["chains"] == 2 and figures["id_switches"] == 1
    assert figures["ids_per_chain"] == 1.5 and figures["max_ids_per_chain"] == 2
    assert figures["answer_ids"] == 5


def test_a_class_the_reference_never_has_gives_no_recall():
    figures = score_clip([[], []], [([1], [A]), ([], [])])
    assert figures["frame_recall"] is None and figures["instance_recall"] is None
    assert figures["ids_per_chain"] is None and figures["false_positives_per_frame"] == 0.5
    with pytest.raises(ValueError, match="2 frames of reference boxes but 1 answers"):
        score_clip([[], []], [([], [])])
