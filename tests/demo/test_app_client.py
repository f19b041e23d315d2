"""Each tab end to end through ``gradio_client`` against the app launched by the test on tiny checkpoints: the
outputs are real files with the expected content, and bad input comes back as a one-line message."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import numpy as np
import pytest

from vision.data.video import probe_video, read_video

pytestmark = pytest.mark.slow  # the demo served on three freshly trained checkpoints


@pytest.fixture(scope="module")
def client(demo_url: str):
    from gradio_client import Client

    return Client(demo_url, verbose=False)


def test_the_app_binds_localhost_and_names_its_endpoints(client, demo_url):
    assert demo_url.startswith("http://127.0.0.1:")
    assert set(client.view_api(print_info=False, return_format="dict")["named_endpoints"]) == {
        "/track", "/track_concept", "/detect", "/forensics"}


def test_track_tab(client, demo_examples):
    import open3d as o3d
    from gradio_client import handle_file

    prompts = demo_examples.synthetic_prompts
    assert prompts.count("\n") == 2  # a point, a box and a text prompt
    video, scene, downloads, summary = client.predict([handle_file(str(demo_examples.synthetic_video))], prompts,
                                                      api_name="/track")
    frames = read_video(video)
    assert frames.shape == (8, 128, 128, 3) and probe_video(video).codec == "h264"
    assert Path(scene).suffix == ".glb" and len(o3d.io.read_triangle_mesh(scene).vertices) > 0
    names = {Path(p).name: Path(p) for p in downloads}
    assert {"results.json", "masks.zip", "scene.ply"} <= set(names)
    results = json.loads(names["results.json"].read_text())
    assert {r["track_id"] for r in results} == {1, 2, 3} and {r["image_id"] for r in results} == set(range(1, 9))
    with zipfile.ZipFile(names["masks.zip"]) as zf:
        assert len(zf.namelist()) == 3 * 8 and "object_1/frame_00000.png" in zf.namelist()
    plys = [p for n, p in names.items() if n.startswith("object_")]
    assert plys, summary
    for ply in plys:
        assert len(o3d.io.read_point_cloud(str(ply)).points) > 0
    assert "8 frames, 3 object(s)" in summary


def test_track_tab_on_a_set_of_images_and_bad_prompts(client, demo_examples, tmp_path):
    import cv2
    from gradio_client import handle_file
    from gradio_client.exceptions import AppError

    frames = read_video(demo_examples.synthetic_video, max_frames=3)
    images = []
    for i, frame in enumerate(frames):
        images.append(tmp_path / f"view_{i}.png")
        cv2.imwrite(str(images[-1]), cv2.cvtColor(frame, cv2.COLOR_RGB2BGR))
    video, _, downloads, summary = client.predict([handle_file(str(p)) for p in images],
                                                  "object 1 frame 2 positive 60,60", api_name="/track")
    assert read_video(video).shape[0] == 3 and "3 frames, 1 object(s)" in summary
    with pytest.raises(AppError, match="prompt line 1 .*2 comma-separated numbers"):
        client.predict([handle_file(str(images[0]))], "object 1 frame 0 positive 5", api_name="/track")
    with pytest.raises(AppError, match="prompted on frame 4, but the input has 3 frames"):
        client.predict([handle_file(str(p)) for p in images], "object 1 frame 4 positive 5,5", api_name="/track")
    with pytest.raises(AppError, match="Invalid file type"):  # gradio refuses suffixes outside file_types
        notes = tmp_path / "notes.txt"
        notes.write_text("not a video")
        client.predict([handle_file(str(notes))], "object 1 frame 0 positive 5,5", api_name="/track")


def test_detect_tab(client, demo_examples):
    from gradio_client import handle_file

    video, preview, table, results, summary = client.predict(handle_file(str(demo_examples.synthetic_video)),
                                                             demo_examples.synthetic_vocabulary, 0.05,
                                                             api_name="/detect")
    assert read_video(video).shape == (8, 128, 128, 3)
    import cv2

    assert cv2.imread(preview).shape == (128, 128, 3)
    coco = json.loads(Path(results).read_text())
    assert {r["image_id"] for r in coco} <= set(range(1, 9)) and all(len(r["bbox"]) == 4 for r in coco)
    names = [n.strip() for n in demo_examples.synthetic_vocabulary.split(",")] + ["unknown"]
    assert all(row[0] in names and row[1] > 0 for row in table["data"])
    assert summary.startswith("synthetic.mp4: 8 frame(s)")
    # an image works too; an empty vocabulary is a message, not a crash
    _, preview, _, _, summary = client.predict(handle_file(str(demo_examples.synthetic_image)), "cube, mug", 0.3,
                                               api_name="/detect")
    assert "1 frame(s)" in summary
    from gradio_client.exceptions import AppError

    with pytest.raises(AppError, match="name 1 of 2 is empty"):
        client.predict(handle_file(str(demo_examples.synthetic_image)), " , ", 0.3, api_name="/detect")


def test_forensics_tab(client, demo_examples):
    from gradio_client import handle_file

    video = demo_examples.street_video or demo_examples.synthetic_video
    verdict, probability, reasons, graph, downloads, report = client.predict(handle_file(str(video)),
                                                                             api_name="/forensics")
    assert verdict in ("generated", "real", "insufficient evidence") and reasons.startswith("- ")
    if probability is not None:
        confidences = {c["label"]: c["confidence"] for c in probability["confidences"]}
        assert set(confidences) == {"generated", "real"} and np.isclose(sum(confidences.values()), 1.0)
    import cv2

    assert cv2.imread(graph).shape == (480, 720, 3)
    paths = {Path(p).name: Path(p) for p in downloads}
    data = json.loads(paths["report.json"].read_text())
    assert data["verdict"]["verdict"] == verdict
    assert paths["report.html"].read_text().lower().startswith("<!doctype html")
    assert report.startswith("<iframe") and "srcdoc=" in report
