"""vision.prepare.oov_coco (vision-prepare-oov-coco): open-set splits from a COCO file by category lists."""

import copy
import json

import cv2
import numpy as np
import pytest

from tests.datasets.staging import add_user_file, assert_left_as_it_was, fail_late, snapshot
from vision.errors import DataError
from vision.prepare import oov_coco as prep


@pytest.fixture()
def coco():
    cats = [{"id": 1, "name": "person", "supercategory": "x"}, {"id": 5, "name": "airplane"},
            {"id": 22, "name": "elephant"}, {"id": 23, "name": "bear"}, {"id": 90, "name": "toothbrush"}]
    images = [{"id": i, "file_name": f"{i:012d}.jpg", "width": 20, "height": 20} for i in (1, 2, 3)]
    anns = [{"id": 1, "image_id": 1, "category_id": 1, "bbox": [0, 0, 5, 5], "area": 25, "iscrowd": 0},
            {"id": 2, "image_id": 1, "category_id": 22, "bbox": [5, 5, 5, 5], "area": 25, "iscrowd": 0},
            {"id": 3, "image_id": 2, "category_id": 5, "bbox": [1, 1, 4, 4], "area": 16, "iscrowd": 0},
            {"id": 4, "image_id": 2, "category_id": 23, "bbox": [2, 2, 4, 4], "area": 16, "iscrowd": 0},
            {"id": 5, "image_id": 3, "category_id": 90, "bbox": [2, 2, 4, 4], "area": 16, "iscrowd": 0}]
    return {"info": {"year": 2017}, "images": images, "annotations": anns, "categories": cats}


def test_voc_as_iv_rest_oov_test_mode(coco):
    out = prep.prepare_oov_split(coco, "voc", mode="test", image_prefix="../coco/val2017")
    splits = {c["name"]: c["split"] for c in out["categories"]}
    assert splits == {"person": "iv", "airplane": "iv", "elephant": "oov", "bear": "oov", "toothbrush": "oov"}
    assert len(out["annotations"]) == 5
    assert out["info"]["vocabulary"] == ["person", "airplane"]
    assert out["images"][0]["file_name"] == "../coco/val2017/000000000001.jpg"
    assert coco["images"][0]["file_name"] == "000000000001.jpg"  # source untouched
    assert len(prep.VOC_CLASSES) == 20


def test_train_mode_drops_non_iv_annotations_and_novel_images(coco, tmp_path):
    out = prep.prepare_oov_split(coco, ["person", "airplane"], novel="bear", oov=["elephant"], mode="train")
    assert [a["id"] for a in out["annotations"]] == [1]  # image 2 holds a novel bear: dropped
    assert [img["id"] for img in out["images"]] == [1, 3]
    assert {c["name"] for c in out["categories"]} == {"person", "airplane", "bear", "elephant"}  # toothbrush unlisted
    assert out["info"]["vocabulary"] == ["person", "airplane"]
    test = prep.prepare_oov_split(coco, ["person", "airplane"], novel="bear", oov=["elephant"], mode="test")
    assert test["info"]["vocabulary"] == ["person", "airplane", "bear"]
    # the CLI writes a valid split
    src = tmp_path / "instances.json"
    src.write_text(json.dumps(coco))
    assert prep.main(["--annotations", str(src), "--iv", "person,airplane", "--novel", "bear", "--mode", "train",
                      "--out", str(tmp_path / "out")]) == 0
    assert json.loads((tmp_path / "out" / "train.json").read_text())["info"]["open_set_mode"] == "train"


def test_errors(coco):
    with pytest.raises(DataError, match="zebra"):
        prep.prepare_oov_split(coco, ["person", "zebra"])
    with pytest.raises(DataError, match="both"):
        prep.prepare_oov_split(coco, ["person"], novel=["person"])
    with pytest.raises(DataError, match="mode"):
        prep.prepare_oov_split(coco, ["person"], mode="val")
    with pytest.raises(DataError, match="no IV"):
        prep.prepare_oov_split(coco, [])


def test_the_cli_reports_bad_input_in_one_line(coco, tmp_path, capsys):
    """An unknown category or a missing annotations file: exit status 2, one ``error:`` line naming it."""
    src = tmp_path / "instances.json"
    src.write_text(json.dumps(coco))
    assert prep.main(["--annotations", str(src), "--iv", "person,zebra", "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error:") and "zebra" in err[0]
    missing = tmp_path / "nope.json"
    assert prep.main(["--annotations", str(missing), "--iv", "voc", "--out", str(tmp_path / "o")]) == 2
    assert "nope.json" in capsys.readouterr().err


def test_out_is_a_folder_and_an_existing_file_is_refused(coco, tmp_path, capsys):
    """``--out`` is the output folder, as for every converter: the split is ``OUT/<split>.json``; a file given as
    ``--out`` is one ``error:`` line naming it, and nothing is written."""
    src = tmp_path / "instances.json"
    src.write_text(json.dumps(coco))
    assert prep.main(["--annotations", str(src), "--iv", "voc", "--out", str(tmp_path / "data"), "--split",
                      "oov_voc_test"]) == 0
    assert json.loads((tmp_path / "data" / "oov_voc_test.json").read_text())["info"]["open_set_mode"] == "test"
    capsys.readouterr()
    existing = tmp_path / "split.json"
    existing.write_text("[]")
    assert prep.main(["--annotations", str(src), "--iv", "voc", "--out", str(existing)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: --out is a folder") and str(existing) in err[0]
    assert existing.read_text() == "[]"
    assert prep.main(["--annotations", str(src), "--iv", "voc", "--out", str(tmp_path), "--split", "../x"]) == 2
    assert "plain file stem" in capsys.readouterr().err


# ---- LVIS v1 -> open-set splits by category frequency ----

UNKNOWN_ID = 9999


@pytest.fixture()
def lvis():
    """A tiny LVIS v1-layout file: no ``file_name`` (``coco_url``), no ``iscrowd``, polygon masks, ``frequency``,
    per-image ``neg_category_ids`` / ``not_exhaustive_category_ids``."""
    cats = [{"id": 1, "name": "aerosol_can", "frequency": "c", "synset": "aerosol.n.02", "image_count": 64},
            {"id": 2, "name": "banana", "frequency": "f", "image_count": 900},
            {"id": 3, "name": "bolo_tie", "frequency": "r", "image_count": 2},
            {"id": 4, "name": "apple", "frequency": "f", "image_count": 1200}]
    images = [
        {"id": 10, "coco_url": "http://images.cocodataset.org/val2017/000000000010.jpg", "width": 40, "height": 30,
         "neg_category_ids": [3], "not_exhaustive_category_ids": [2]},
        {"id": 11, "coco_url": "http://images.cocodataset.org/train2017/000000000011.jpg", "width": 40,
         "height": 30, "neg_category_ids": [], "not_exhaustive_category_ids": []},
        {"id": 12, "coco_url": "http://images.cocodataset.org/val2017/000000000012.jpg", "width": 40, "height": 30,
         "neg_category_ids": [1, 2], "not_exhaustive_category_ids": []}]

    def ann(i, image, cat, x, y, w, h):
        return {"id": i, "image_id": image, "category_id": cat, "bbox": [x, y, w, h], "area": w * h,
                "segmentation": [[x, y, x + w, y, x + w, y + h, x, y + h]]}

    anns = [ann(1, 10, 2, 2, 2, 10, 10), ann(2, 10, 4, 20, 5, 10, 12),
            ann(3, 11, 1, 5, 5, 8, 8), ann(4, 11, 3, 20, 10, 12, 12),
            ann(5, 12, 4, 1, 1, 15, 15)]
    return {"info": {"description": "LVIS v1 fixture"}, "images": images, "annotations": anns, "categories": cats}


def test_lvis_frequency_partition_vocabulary_and_not_exhaustive_regions(lvis):
    assert prep.lvis_frequency_groups(lvis) == {"iv": ["banana", "apple"], "novel": ["aerosol_can"],
                                                "oov": ["bolo_tie"]}
    out = prep.prepare_lvis_oov_split(lvis, mode="test", image_prefix="../coco")
    assert {c["name"]: c["split"] for c in out["categories"]} == {
        "aerosol_can": "novel", "banana": "iv", "bolo_tie": "oov", "apple": "iv"}
    assert out["info"]["vocabulary"] == ["aerosol_can", "banana", "apple"]  # IV + novel, by category id
    assert out["info"]["lvis_partition"] == {"f": "iv", "c": "novel", "r": "oov"}
    assert [img["file_name"] for img in out["images"]] == [
        "../coco/val2017/000000000010.jpg", "../coco/train2017/000000000011.jpg", "../coco/val2017/000000000012.jpg"]
    real = [a for a in out["annotations"] if not a["iscrowd"]]
    assert [a["id"] for a in real] == [1, 2, 3, 4, 5]
    # image 10's banana is not exhaustively annotated: one whole-image ignore region of banana
    regions = [a for a in out["annotations"] if a["iscrowd"]]
    assert len(regions) == 1 and out["info"]["not_exhaustive_ignore_regions"] == 1
    region = regions[0]
    assert (region["image_id"], region["category_id"], region["bbox"], region["area"]) == (10, 2, [0, 0, 40, 30],
                                                                                          1200)
    assert region["ignore"] == "not_exhaustive" and isinstance(region["segmentation"]["counts"], str)
    assert region["id"] == 6
    assert "iscrowd" not in lvis["annotations"][0] and "file_name" not in lvis["images"][0]  # source untouched

    # train: IV annotations only, images with a novel (common) object dropped, no ignore regions
    train = prep.prepare_lvis_oov_split(lvis, mode="train")
    assert [img["id"] for img in train["images"]] == [10, 12]
    assert [a["id"] for a in train["annotations"]] == [1, 2, 5]
    assert train["info"]["vocabulary"] == ["banana", "apple"]
    # a configurable partition: rare dropped (with its annotations and from neg_category_ids), common -> oov
    custom = prep.prepare_lvis_oov_split(lvis, "f=iv,c=oov,r=drop")
    assert {c["name"]: c["split"] for c in custom["categories"]} == {"aerosol_can": "oov", "banana": "iv",
                                                                     "apple": "iv"}
    assert 4 not in [a["id"] for a in custom["annotations"]]
    assert custom["images"][0]["neg_category_ids"] == []  # bolo_tie (3) dropped
    assert custom["info"]["vocabulary"] == ["banana", "apple"]


def test_lvis_split_is_accepted_by_the_evaluator_which_honours_not_exhaustive(lvis, tmp_path):
    from vision.data.coco import load_split
    from vision.evaluation.evaluate import evaluate

    src = tmp_path / "lvis_v1_val.json"
    src.write_text(json.dumps(lvis))
    path = tmp_path / "oov_lvis_test.json"
    assert prep.main(["--annotations", str(src), "--by-frequency", "--mode", "test", "--image-prefix", "coco",
                      "--out", str(tmp_path), "--split", "oov_lvis_test"]) == 0
    assert load_split(path, check_files=False).dataset["info"]["open_set_mode"] == "test"

    def det(image, cat, bbox, score):
        return {"image_id": image, "category_id": cat, "bbox": bbox, "score": score}

    exact = [det(a["image_id"], a["category_id"], a["bbox"], 0.9) for a in lvis["annotations"] if a["category_id"] != 3]
    unknown = [det(11, UNKNOWN_ID, [20, 10, 12, 12], 0.8)]  # the rare bolo_tie found as "unknown"
    stray_banana = det(10, 2, [25, 20, 8, 8], 0.95)  # overlaps nothing annotated
    ms = evaluate(str(path), exact + unknown + [stray_banana], "detection", unknown_category_id=UNKNOWN_ID)
    assert ms["IV_AP"] == pytest.approx(1.0) and ms["U-Recall"] == pytest.approx(1.0)
    assert ms["novel_AP50"] == pytest.approx(1.0) and ms["num_unknown_gt"] == 1
    # image 10's banana is not exhaustive: the stray banana there is ignored, as LVIS does; on image 12 (where
    # banana is verified absent, neg_category_ids) the same stray detection is a false positive
    ms12 = evaluate(str(path), exact + unknown + [dict(stray_banana, image_id=12)], "detection",
                    unknown_category_id=UNKNOWN_ID)
    assert ms12["IV_AP"] < 0.9


def test_lvis_bad_input(lvis, tmp_path, capsys):
    bad = copy.deepcopy(lvis)
    del bad["categories"][2]["frequency"]
    with pytest.raises(DataError, match=r"categories\[2\]\.frequency"):
        prep.prepare_lvis_oov_split(bad)
    with pytest.raises(DataError, match="exactly once"):
        prep.prepare_lvis_oov_split(lvis, "f=iv,c=novel")
    with pytest.raises(DataError, match="partition.r"):
        prep.prepare_lvis_oov_split(lvis, {"f": "iv", "c": "novel", "r": "unknown"})
    with pytest.raises(DataError, match="no frequency is mapped to iv"):
        prep.prepare_lvis_oov_split(lvis, "f=oov,c=novel,r=drop")
    nourl = copy.deepcopy(lvis)
    nourl["images"][1]["coco_url"] = "http://images.cocodataset.org/"
    with pytest.raises(DataError, match=r"images\[1\]\.coco_url"):
        prep.prepare_lvis_oov_split(nourl)
    src = tmp_path / "lvis.json"
    src.write_text(json.dumps(lvis))
    assert prep.main(["--annotations", str(src), "--by-frequency", "--iv", "banana", "--out",
                      str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--by-frequency" in err[0]


def test_a_late_failure_leaves_the_old_output_whole(coco, tmp_path, capsys, monkeypatch):
    """The split is checked against the images in --out (``--check-files``) and written beside it; a failure as
    it is written leaves the old split."""
    src = tmp_path / "instances.json"
    src.write_text(json.dumps(coco))
    out = tmp_path / "data"
    add_user_file(out)
    (out / "coco").mkdir()
    for image in coco["images"]:
        assert cv2.imwrite(str(out / "coco" / image["file_name"]), np.zeros((20, 20, 3), np.uint8))
    argv = ["--annotations", str(src), "--iv", "voc", "--image-prefix", "coco", "--check-files", "--out", str(out)]
    assert prep.main(argv) == 0
    before = snapshot(out)
    written = fail_late(monkeypatch, prep, "write_split")
    capsys.readouterr()
    assert prep.main([*argv, "--mode", "train", "--split", "test"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert written and len(err) == 1 and "injected late failure" in err[0]
    assert_left_as_it_was(out, before, {"instances.json", "data"})
