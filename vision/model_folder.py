"""Model folders: a trained model as ``config.json`` + ``model.safetensors`` + a model card ``README.md``.

The layout (what VGGT, Depth Anything 3 and timm users load with ``from_pretrained``)::

    DIR/config.json         {"format": "vision-model-folder", "version": 1, "task": "<task>",
                             "config": {<the task's TaskConfig fields>},
                             "weights": {"model": "model.safetensors"[, "backbone": "backbone.safetensors"]},
                             "hyper_parameters": {<the training module's, e.g. detection's class_names>},
                             "extras": {<plain-data checkpoint entries, e.g. forensics_backbone>},
                             "training": {<module, epoch, data splits, validation figures>}}
    DIR/model.safetensors   the model's own state dict (``build_model(config).load_state_dict`` takes it as is)
    DIR/backbone.safetensors  (forensics with a geometry backbone) the frozen backbone's state dict
    DIR/README.md           the model card, written from config.json (nothing in it is typed in)

``weights`` maps a checkpoint's ``state_dict`` prefix (``model.``, ``backbone.``) to its file, so
:meth:`ModelFolder.as_checkpoint` gives back the checkpoint layout (``hyper_parameters`` with ``config``,
``state_dict`` under the prefixes) that every task's reader already takes: loading a folder and loading the
checkpoint it came from are one code path (:func:`vision.checkpoint.read_model`). Weights are read with safetensors
only, never unpickled; every file name comes from ``config.json`` and is checked to be a plain name inside the
folder.

:func:`read_model_folder` checks a folder's task and config with the reader's config class (``config_of``: a task's
own, :func:`one_task`) before any weights are read; :func:`write_model_folder` writes a folder atomically (a
temporary folder renamed into place), its card written by the caller's ``card`` (:mod:`vision.export.model_card`).
Finding which task a checkpoint is, and turning a training checkpoint into a folder, are :mod:`vision.export`'s.
"""

from __future__ import annotations

import dataclasses
import errno
import json
import math
import os
import re
import shutil
import stat
import tempfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import torch
from safetensors import SafetensorError
from safetensors.torch import load_file, save_file

from vision.data.files import read_json, regular_file
from vision.errors import DataError, InputError
from vision.task_config import TaskConfig

__all__ = ["FOLDER_FORMAT", "FORMAT_VERSION", "CONFIG_FILE", "CARD_FILE", "ONNX_FOLDER", "ConfigOf", "ModelFolder",
           "is_model_folder", "is_plain", "one_task", "read_folder_config", "read_model_folder", "write_model_folder",
           "check_model_folder_out"]

FOLDER_FORMAT = "vision-model-folder"
FORMAT_VERSION = 1
CONFIG_FILE = "config.json"
CARD_FILE = "README.md"
#: the largest config.json read (it holds configs and hyper-parameters, never weights)
MAX_CONFIG_BYTES = 16 * 1024 * 1024
#: the deepest nesting of lists and objects config.json may hold (one written by vision-export holds a few levels)
MAX_CONFIG_DEPTH = 32
_PREFIX = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_WEIGHTS_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]*\.safetensors$")

#: ``config_of(task) -> config class``: the :class:`~vision.task_config.TaskConfig` class that checks a folder's
#: ``config``, given the ``task`` the folder names; a ``LookupError`` (its message the reason) for a task the reader
#: does not take
ConfigOf = Callable[[Any], "type[TaskConfig]"]


def one_task(config_cls: type[TaskConfig]) -> ConfigOf:
    """The :data:`ConfigOf` of a reader of one task's models: ``config_cls`` for its task (``config_cls.task``),
    a refusal naming any other."""
    def config_of(task: Any) -> type[TaskConfig]:
        if task != config_cls.task:
            raise LookupError(f"holds a {task} model, not a {config_cls.task} model; give a {config_cls.task} "
                              "checkpoint or model folder")
        return config_cls
    return config_of


@dataclasses.dataclass
class ModelFolder:
    """A model folder's contents.

    Args:
        task: the task's name (its config class's ``task``).
        config: the task config's fields (``TaskConfig.to_dict()``).
        weights: state dicts by checkpoint prefix (``"model"``: the model's; ``"backbone"``: forensics' frozen
            backbone), tensors on any device.
        hyper_parameters: the training module's hyper-parameters other than ``config`` (plain data).
        extras: other plain-data checkpoint entries that loaders read (e.g. ``forensics_backbone``).
        training: what the model card reports: ``module``, ``epoch``, ``global_step``, ``data`` (the datamodule's
            hyper-parameters: splits, sizes), ``validation`` (``monitor``, ``score``, ``metrics``, ``source``),
            ``checkpoint`` (the file it was exported from).
    """

    task: str
    config: dict[str, Any]
    weights: dict[str, dict[str, torch.Tensor]]
    hyper_parameters: dict[str, Any] = dataclasses.field(default_factory=dict)
    extras: dict[str, Any] = dataclasses.field(default_factory=dict)
    training: dict[str, Any] = dataclasses.field(default_factory=dict)

    def as_checkpoint(self) -> dict[str, Any]:
        """The checkpoint layout the tasks' readers take: ``hyper_parameters`` (with ``config``), ``state_dict``
        (``<prefix>.<key>``), the extras, and ``task`` (which :func:`vision.checkpoint.task_checkpoint_parts`
        checks against the task that reads it)."""
        state = {f"{prefix}.{key}": value for prefix, tensors in self.weights.items() for key, value in tensors.items()}
        return {**self.extras, "task": self.task, "training": self.training, "state_dict": state,
                "hyper_parameters": {**self.hyper_parameters, "config": dict(self.config)}}


def is_model_folder(path: str | Path) -> bool:
    """Whether ``path`` is a folder with a ``config.json`` (not yet whether that file is valid)."""
    path = Path(path)
    return path.is_dir() and (path / CONFIG_FILE).is_file()


# ---------------------------------------------------------------------------------------------------- reading
def read_folder_config(path: str | Path) -> dict[str, Any]:
    """A model folder's ``config.json``, checked as far as the file goes (read within :data:`MAX_CONFIG_BYTES`,
    nested at most :data:`MAX_CONFIG_DEPTH` levels, this format and a version this code reads), without reading
    any weights: what a reader looks at to tell which model a folder holds.

    Raises:
        DataError: as :func:`read_model_folder` for these checks.
    """
    path = Path(path)
    if not path.is_dir():
        raise DataError("model folder not found", file=path)
    config_path = path / CONFIG_FILE
    if not config_path.exists() and not config_path.is_symlink():
        raise DataError(f"not a model folder (no {CONFIG_FILE}); a model folder holds {CONFIG_FILE}, "
                        "model.safetensors and README.md, as vision-export writes it", file=path)
    content = read_json(config_path, what="model folder config", max_bytes=MAX_CONFIG_BYTES)
    deep = _nested_too_deeply(content)
    if deep is not None:
        raise DataError(f"nested more than {MAX_CONFIG_DEPTH} levels deep", file=config_path, field=deep)
    if not isinstance(content, dict) or content.get("format") != FOLDER_FORMAT:
        found = content.get("format") if isinstance(content, dict) else type(content).__name__
        raise DataError(f"not a vision model folder's {CONFIG_FILE} (expected format {FOLDER_FORMAT!r}; export one "
                        "with vision-export)", file=config_path, field="format", value=found)
    version = content.get("version")
    if isinstance(version, bool) or not isinstance(version, int) or not 1 <= version <= FORMAT_VERSION:
        raise DataError(f"unsupported model folder version (this code reads 1..{FORMAT_VERSION})", file=config_path,
                        field="version", value=version)
    return content


def read_model_folder(path: str | Path, map_location: Any = "cpu", config_of: ConfigOf | None = None
                      ) -> ModelFolder:
    """Read and check a model folder; the weights go to ``map_location`` (a device or its name).

    ``config_of`` (:data:`ConfigOf`) gives the config class that checks the folder's ``config`` before any weights
    are read: a task's own (:func:`one_task`), or any registered task's
    (:func:`vision.export.task_detection.registered_config`); None: the folder must name a task, and its config is
    checked by whoever builds a model from it.

    Raises:
        DataError: ``path`` is not a folder, has no ``config.json`` (not a model folder), the file is not valid
            JSON (:func:`vision.data.files.read_json`: an integer too long for a float is read as infinite) or
            nested more than :data:`MAX_CONFIG_DEPTH` levels, is not this format, names no task or a task
            ``config_of`` refuses, a config its task's :class:`~vision.task_config.TaskConfig` refuses
            (``config.<field>``), or an unsafe / missing weights file, or a weights file is not a readable
            safetensors file (naming the file and the field).
    """
    path = Path(path)
    content = read_folder_config(path)
    config_path = path / CONFIG_FILE
    task = content.get("task")
    config_cls = None
    if config_of is not None:
        try:
            config_cls = config_of(task)
        except LookupError as exc:
            raise DataError(str(exc.args[0]), file=config_path, field="task", value=task) from None
    elif not isinstance(task, str) or not task:
        raise DataError("must name the model's task", file=config_path, field="task", value=task)
    for field in ("config", "weights", "hyper_parameters", "extras", "training"):
        if not isinstance(content.get(field, {}), dict):
            raise DataError("must be a JSON object", file=config_path, field=field, value=content.get(field))
    if not isinstance(content.get("config"), dict):
        raise DataError("missing: the task's model config", file=config_path, field="config")
    if config_cls is not None:  # the config's fields are checked (types, ranges) before any weights are read
        config_cls = config_cls.variant(content.get("hyper_parameters") or {})
        config_cls.from_value(content["config"], file=config_path, field="config")
    _check_training(content.get("training") or {}, config_path)
    files = content.get("weights") or {}
    if "model" not in files:
        raise DataError("must name the model's weights file (\"model\": \"model.safetensors\")", file=config_path,
                        field="weights.model")
    device = torch.device(map_location) if isinstance(map_location, (str, torch.device)) else torch.device("cpu")
    weights = {}
    for prefix, name in files.items():
        field = f"weights.{prefix}"
        if not isinstance(prefix, str) or not _PREFIX.match(prefix):
            raise DataError("not a plain weights name", file=config_path, field="weights", value=prefix)
        if not isinstance(name, str) or not _WEIGHTS_NAME.match(name):
            raise DataError("must be a plain *.safetensors file name inside the folder", file=config_path,
                            field=field, value=name)
        weights[prefix] = _read_safetensors(path / name, device)
    return ModelFolder(task=task, config=content["config"], weights=weights,
                       hyper_parameters=content.get("hyper_parameters") or {}, extras=content.get("extras") or {},
                       training=content.get("training") or {})


def _check_training(training: dict[str, Any], file: Path) -> None:
    """Refuse (a :class:`DataError` naming ``file`` and the field) a ``training`` record that the model card cannot
    read: ``data`` and ``light_points`` objects, ``validation`` an object whose ``score`` (with its ``monitor``) is a
    number and whose ``metrics`` map names to numbers."""
    def number(value: Any) -> bool:
        return isinstance(value, (int, float)) and not isinstance(value, bool)

    for name in ("data", "light_points", "validation"):
        if not isinstance(training.get(name) or {}, dict):
            raise DataError("must be a JSON object", file=file, field=f"training.{name}")
    validation = training.get("validation") or {}
    if "score" in validation and not (number(validation["score"]) and isinstance(validation.get("monitor"), str)):
        raise DataError("must be a number, with the monitored figure's name in training.validation.monitor",
                        file=file, field="training.validation.score", value=validation["score"])
    metrics = validation.get("metrics") or {}
    if not isinstance(metrics, dict):
        raise DataError("must be a JSON object of figures", file=file, field="training.validation.metrics")
    for name, value in metrics.items():
        if not number(value):
            raise DataError("must be a number", file=file, field=f"training.validation.metrics.{name}", value=value)


def _nested_too_deeply(content: Any) -> str | None:
    """The path (``training.data.splits[0]``) of the first value of ``content`` nested more than
    :data:`MAX_CONFIG_DEPTH` levels deep, or None. Walked without recursion: what is read from the file is later
    copied and written by recursive code (``json.dumps``, the card), which must not meet Python's recursion limit."""
    stack: list[tuple[Any, str, int]] = [(content, "", 0)]
    while stack:
        value, where, depth = stack.pop()
        if isinstance(value, dict):
            children = [(v, f"{where}.{k}" if where else str(k)) for k, v in value.items()]
        elif isinstance(value, list):
            children = [(v, f"{where}[{i}]") for i, v in enumerate(value)]
        else:
            continue
        if depth >= MAX_CONFIG_DEPTH:
            return where or "(top level)"
        stack.extend((child, path, depth + 1) for child, path in children)
    return None


def _read_safetensors(file: Path, device: torch.device) -> dict[str, torch.Tensor]:
    regular_file(file, what="weights file of the model folder")  # not a FIFO, a device or a link loop
    try:
        tensors = load_file(str(file), device="cpu")
    except (SafetensorError, OSError, ValueError, RuntimeError) as exc:
        raise DataError(f"not a readable safetensors file ({' '.join(str(exc).split())})", file=file) from None
    return tensors if device.type == "cpu" else {k: v.to(device) for k, v in tensors.items()}


# ---------------------------------------------------------------------------------------------------- writing
#: the ONNX graphs' folder inside a model folder (``vision-export --onnx``): ``onnx/<graph>.onnx``
ONNX_FOLDER = "onnx"


def _folder_entry_is_own(folder: Path, name: str) -> bool:
    """Whether the entry ``name`` of the model folder ``folder`` is one a model folder is made of (config.json,
    the card, weights files, the ``onnx`` folder of ``*.onnx`` graphs): what ``--overwrite`` may delete."""
    entry = folder / name
    if entry.is_symlink():
        return False
    if name in (CONFIG_FILE, CARD_FILE) or _WEIGHTS_NAME.match(name):
        return entry.is_file()
    if name == ONNX_FOLDER and entry.is_dir():
        return all(not graph.is_symlink() and graph.is_file() and graph.suffix == ".onnx"
                   for graph in entry.iterdir())
    return False


def _inside(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


def check_model_folder_out(out: str | Path, overwrite: bool = False, inputs: Sequence[str | Path] = (),
                           flag: str = "--out") -> Path:
    """Check the folder a model folder is to be written to, before any work; return the folder that will be
    written (a symbolic link's target: the link stays).

    ``out`` must not exist, or be an empty folder, or (``overwrite``) a model folder holding nothing but a model
    folder's own files (config.json, README.md, ``*.safetensors``, ``onnx/*.onnx``), which is replaced; no input
    (``inputs``: the checkpoint, the metrics) may lie inside it; its parent folder must exist and be writable (a
    temporary folder is created and removed there to be sure: a read-only mount fails here).

    Raises:
        InputError: one line naming ``flag``, the path and the reason.
    """
    given = Path(out)
    if not str(out).strip():
        raise InputError(f"{flag} is empty; give a folder to write the model into")
    try:
        path = Path(os.path.realpath(given, strict=False)) if given.is_symlink() else Path(os.path.abspath(given))
        if given.is_symlink() and not os.path.lexists(path):
            raise InputError(f"{flag} {given} is a symbolic link to {path}, which does not exist; give a folder")
        info = os.stat(path) if os.path.lexists(path) else None
    except OSError as exc:
        reason = "a symbolic-link loop" if exc.errno == errno.ELOOP else (exc.strerror or type(exc).__name__)
        raise InputError(f"{flag} {given}: unusable path ({reason})") from None
    except ValueError as exc:  # a NUL byte
        raise InputError(f"{flag} {given!r}: unusable path ({exc})") from None
    for item in inputs:
        try:
            source = Path(os.path.realpath(item))
        except (OSError, ValueError):
            continue
        if source == path:
            what = "the model folder" if source.is_dir() else "the file"
            raise InputError(f"{flag} {given} is {what} being read; give another folder")
        if info is not None and _inside(source, path):
            raise InputError(f"{flag} {given} holds the input {item}, which replacing the folder would delete; give "
                             "another folder")
    if info is not None:
        if not stat.S_ISDIR(info.st_mode):
            raise InputError(f"{flag} {given} is a file, not a folder; give a folder to write the model into"
                             if stat.S_ISREG(info.st_mode) else
                             f"{flag} {given} is not a folder (a FIFO, a device or a socket); give a folder")
        try:
            names = sorted(os.listdir(path))
        except OSError as exc:
            raise InputError(f"{flag} {given}: cannot list the folder ({exc.strerror or exc})") from None
        if names:
            if not is_model_folder(path):
                raise InputError(f"{flag} {given} is a folder that is not empty and not a model folder; give a new "
                                 "or empty folder")
            if not overwrite:
                raise InputError(f"{flag} {given} already holds a model folder; pass --overwrite to replace it")
            foreign = [name for name in names if not _folder_entry_is_own(path, name)]
            if foreign:
                raise InputError(f"{flag} {given} holds {foreign[0]!r}, which is not part of a model folder; "
                                 "--overwrite replaces a model folder and nothing else: move it away or give "
                                 "another folder")
    parent = path.parent
    shown = parent if given.is_symlink() else given.parent  # the user's spelling where it names the same folder
    if not parent.is_dir():
        if parent.exists():
            raise InputError(f"{flag} {given}: {shown} (its parent) is not a folder")
        raise InputError(f"the folder {shown} (the parent of {flag}) does not exist")
    try:
        os.rmdir(tempfile.mkdtemp(prefix=f".{path.name}.write-check.", dir=parent))
    except OSError as exc:
        raise InputError(f"{flag} {given}: cannot write in {shown} ({exc.strerror or type(exc).__name__})") \
            from None
    return path


def _write_error(exc: BaseException, out: Path, staging: Path | None, current: Path | None,
                 flag: str) -> InputError:
    """One line for a failure while writing the model folder ``out`` (a full disk, a read-only mount), naming the
    file being written (``current`` when the error does not say) by its place in ``out``, not the temporary folder
    it was written in."""
    if isinstance(exc, OSError):
        reason = exc.strerror or type(exc).__name__
        name = current if exc.filename is None else Path(os.fsdecode(exc.filename))
    else:  # safetensors words its I/O errors as "Error while serializing: I/O error: <reason> (os error N) ..."
        text = " ".join(str(exc).split())
        found = re.search(r"I/O error: (.*?)(?: \(os error \d+\))?(?: at path .*)?$", text)
        reason, name = (found.group(1) if found else text), current
    if name is not None and staging is not None and _inside(name, staging) and name != staging:
        name = out / name.relative_to(staging)
    what = f"{name} in " if name is not None and name != out else ""
    return InputError(f"cannot write {what}{flag} {out}: {reason}; nothing was written")


def write_model_folder(folder: ModelFolder, out: str | Path, overwrite: bool = False, *,
                       card: Callable[[ModelFolder], str], inputs: Sequence[str | Path] = (),
                       add: Callable[[Path], Any] | None = None, flag: str = "--out") -> Path:
    """Write ``folder`` to the directory ``out`` (created; its parent must exist): the weights files, config.json
    and the model card, ``card(folder)`` (:func:`vision.export.model_card.model_card`). Written to a temporary
    sibling first and renamed into place, so a failure leaves nothing (and a replaced folder stays as it was).

    ``out`` is checked by :func:`check_model_folder_out` (``overwrite``, ``inputs``: not empty unless a model
    folder with nothing else in it, no input inside it, a writable parent). ``add(staging)`` may add files (the
    ONNX graphs) to the folder before it is renamed into place; what it raises leaves nothing written.

    Returns:
        The folder written (``out``, or the target of ``out`` when it is a symbolic link).

    Raises:
        InputError: ``out`` fails its checks; a hyper-parameter is not plain data; writing failed (a full disk, a
            read-only mount: one line naming the folder, nothing left).
    """
    given = Path(out)
    written = given if not given.is_symlink() else None
    path = check_model_folder_out(out, overwrite=overwrite, inputs=inputs, flag=flag)
    content = {"format": FOLDER_FORMAT, "version": FORMAT_VERSION, "task": folder.task,
               "config": _plain(folder.config, "config"),
               "weights": {prefix: ("model.safetensors" if prefix == "model" else f"{prefix}.safetensors")
                           for prefix in folder.weights},
               "hyper_parameters": _plain(folder.hyper_parameters, "hyper_parameters"),
               "extras": _plain(folder.extras, "extras"), "training": _plain(folder.training, "training")}
    for prefix in folder.weights:
        if not _PREFIX.match(prefix):
            raise InputError(f"weights prefix {prefix!r} is not a plain name")
    umask = os.umask(0)
    os.umask(umask)
    staging: Path | None = None
    current: Path | None = None  # the file being written, for the message should writing fail
    try:
        staging = Path(tempfile.mkdtemp(prefix=f".{path.name}.", dir=path.parent))
        for prefix, tensors in folder.weights.items():
            current = staging / content["weights"][prefix]
            # safetensors refuses views that share memory (tied weights); a contiguous copy of each is exact
            save_file({k: v.detach().to("cpu").contiguous().clone() for k, v in tensors.items()}, str(current),
                      metadata={"format": "pt"})
        current = staging / CONFIG_FILE
        current.write_text(json.dumps(content, indent=2) + "\n", encoding="utf-8")
        current = staging / CARD_FILE
        current.write_text(card(folder), encoding="utf-8")
        current = None
        if add is not None:
            add(staging)
        for file in staging.iterdir():  # mkdtemp's and safetensors' owner-only modes: the user's umask instead
            file.chmod((0o777 if file.is_dir() else 0o666) & ~umask)
        staging.chmod(0o777 & ~umask)
        _move_into_place(staging, path)
    except (OSError, SafetensorError) as exc:
        raise _write_error(exc, given, staging, current, flag) from None
    finally:
        if staging is not None:
            shutil.rmtree(staging, ignore_errors=True)
    return written if written is not None else path


def _move_into_place(staging: Path, out: Path) -> None:
    """Rename ``staging`` to ``out``. An existing ``out`` is first moved aside (into a fresh temporary folder, never
    a name a user may hold), put back if the rename fails, and deleted once the new folder is in place."""
    if not os.path.lexists(out):
        os.replace(staging, out)
        return
    aside = Path(tempfile.mkdtemp(prefix=f".{out.name}.replaced.", dir=out.parent))
    old = aside / "folder"
    try:
        os.replace(out, old)
    except OSError:
        os.rmdir(aside)
        raise
    try:
        os.replace(staging, out)
    except OSError:
        os.replace(old, out)  # should this fail too, the old folder stays in ``aside``: never deleted here
        os.rmdir(aside)
        raise
    shutil.rmtree(aside, ignore_errors=True)


def _plain(value: Any, field: str) -> Any:
    """``value`` as JSON data (tuples to lists, paths to strings, one-element tensors to numbers); anything else
    is an :class:`InputError` naming the field."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, torch.Tensor) and value.numel() == 1:
        return _plain(value.item(), field)
    if isinstance(value, Mapping):
        return {str(k): _plain(v, f"{field}.{k}") for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v, f"{field}[{i}]") for i, v in enumerate(value)]
    raise InputError(f"{field} is a {type(value).__name__}, not plain data a model folder can store")


def is_plain(value: Any) -> bool:
    """Whether ``value`` is data a model folder can store (what ``write_model_folder`` writes as JSON)."""
    try:
        _plain(value, "")
    except InputError:
        return False
    return True
