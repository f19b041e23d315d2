"""Prompt lines (demo prompt box, ``vision predict --prompt``): parsing, merging per object, clear errors."""

import numpy as np
import pytest

from vision.errors import InputError
from vision.tracking.prompt_text import format_prompt_line, parse_prompt_lines


def test_lines_merge_per_object_and_become_add_prompt_arguments():
    specs = parse_prompt_lines("""
        # a comment
        object 2 frame 3 box 10,20,60,90
        obj 1 frame 0 positive 120,80
        object 1 frame 0 - 140.5, 90
        object 1 frame 0 point 1,2
        object 3 text the red  mug
    """)
    assert [s.obj_id for s in specs] == [1, 2, 3]
    one, two, three = specs
    assert one.frame == 0 and one.points == [[120, 80], [140.5, 90], [1, 2]] and one.labels == [1, 0, 1]
    assert two.frame == 3 and two.box == [10, 20, 60, 90] and two.points == []
    assert three.frame is None and three.text == "the red  mug"
    args = one.arrays()
    assert args["view"] == 0 and args["points"].shape == (3, 2) and args["labels"].dtype == np.int64
    assert args["box"] is None and args["text"] is None
    assert two.arrays()["points"] is None and two.arrays()["box"].tolist() == [10, 20, 60, 90]


def test_format_round_trips():
    lines = [format_prompt_line(4, "negative", 2, [3.4, 5.6]), format_prompt_line(4, "box", 2, [1, 2, 30.2, 40]),
             format_prompt_line(5, "text", text="a blue cube")]
    assert lines == ["object 4 frame 2 negative 3,6", "object 4 frame 2 box 1,2,30,40", "object 5 text a blue cube"]
    spec = parse_prompt_lines("\n".join(lines))[0]
    assert spec.points == [[3, 6]] and spec.labels == [0] and spec.box == [1, 2, 30, 40]


@pytest.mark.parametrize("text, message", [
    ("", "no prompt given"),
    ("object 1 frame 0 jump 1,2", "prompt line 1"),
    ("object 1 frame 0 positive 1", "2 comma-separated numbers"),
    ("object 1 frame 0 positive a,b", "2 comma-separated numbers"),
    ("object 1 positive 1,2", "needs 'frame N'"),
    ("object x frame 0 positive 1,2", "object id must be a whole number"),
    ("object 1 frame -1 positive 1,2", "frame must be >= 0"),
    ("object 1 frame 0 box 5,5,1,9", "x0 < x1"),
    ("object 1 frame 0 box 1,2,3,4\nobject 1 frame 0 box 1,2,3,4", "already has a box"),
    ("object 1 frame 0 positive 1,2\nobject 1 frame 1 positive 1,2", "already prompted on frame 0"),
    ("object 1 text", "needs words"),
    ("object 1 text a\nobject 1 text b", "already has a text prompt"),
])
def test_malformed_lines_are_refused_with_their_line_number(text, message):
    with pytest.raises(InputError, match=message):
        parse_prompt_lines(text)


def test_mask_lines_name_a_file_and_are_taken_only_where_allowed(tmp_path):
    import cv2

    from vision.tracking.prompt_text import parse_prompt_lines, prompt_masks, read_mask

    mask = np.zeros((30, 40), np.uint8)
    mask[5:9, 10:30] = 255
    cv2.imwrite(str(tmp_path / "m.png"), mask)
    line = f"object 2 frame 3 mask {tmp_path / 'm.png'}"
    (spec,) = parse_prompt_lines(line, allow_masks=True)
    assert spec.obj_id == 2 and spec.frame == 3 and spec.mask == str(tmp_path / "m.png")
    read = prompt_masks([spec], (40, 30))[2]
    assert read.dtype == bool and read.sum() == 4 * 20 and read[5:9, 10:30].all()
    with pytest.raises(InputError, match="given on the command line"):
        parse_prompt_lines(line)  # the demo's reading: no file of the server is opened for a remote user
    with pytest.raises(InputError, match="needs 'frame N'"):
        parse_prompt_lines(f"object 2 mask {tmp_path / 'm.png'}", allow_masks=True)
    with pytest.raises(InputError, match="is 40x30, the input 64x48"):
        read_mask(tmp_path / "m.png", (64, 48))
    cv2.imwrite(str(tmp_path / "empty.png"), np.zeros((30, 40), np.uint8))
    with pytest.raises(InputError, match="no non-zero pixel"):
        read_mask(tmp_path / "empty.png", (40, 30))
    with pytest.raises(InputError, match="is not a file"):
        read_mask(tmp_path / "absent.png", (40, 30))
