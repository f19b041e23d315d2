"""vision.prepare.oov_coco (vision-prepare-oov-coco): open-set splits from a COCO file by category lists."""

import json

import pytest

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
    path = tmp_path / "oov_train.json"
    assert prep.main(["--annotations", str(src), "--iv", "person,airplane", "--novel", "bear", "--mode", "train",
                      "--out", str(path)]) == 0
    assert json.loads(path.read_text())["info"]["open_set_mode"] == "train"


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
    assert prep.main(["--annotations", str(src), "--iv", "person,zebra", "--out", str(tmp_path / "o.json")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error:") and "zebra" in err[0]
    missing = tmp_path / "nope.json"
    assert prep.main(["--annotations", str(missing), "--iv", "voc", "--out", str(tmp_path / "o.json")]) == 2
    assert "nope.json" in capsys.readouterr().err
