"""``vision-predict`` over many inputs, and its device and stream options.

- :func:`expand_inputs`: the command line's inputs (files, folders of images, glob patterns such as
  ``"clips/*.mp4"``, expanded in name order) -> one input per file or folder; a pattern that matches nothing or a
  path that does not exist is a failure of that item, reported with the others at the end.
- :func:`output_folders`: one input writes into ``--out`` itself; several write into ``--out/<name>`` each (the
  file's name without its suffix; ``_2``, ``_3`` ... where two would clash).
- :func:`run_inputs`: runs a task's runner on every input, one after another, with a progress bar over the inputs;
  a bad input (any :class:`~vision.errors.VisionError`) leaves no output of its own and does not stop the others;
  every failure is printed again at the end and the exit status is 2 when there was one.
- :func:`loaded`: a predictor loaded once per call and reused for every input.
- :func:`device_options`: ``--device`` / ``--precision`` checked before any model is loaded.
"""

from __future__ import annotations

import argparse
import glob
import sys
from pathlib import Path
from typing import Any, Callable, Sequence

from vision.errors import VisionError

__all__ = ["Failure", "device_options", "expand_inputs", "loaded", "output_folders", "run_inputs"]

#: an input the run could not use, and why (one line)
Failure = tuple[str, str]

_GLOB_CHARACTERS = set("*?[")


def expand_inputs(items: Sequence[str | Path]) -> tuple[list[Path], list[Failure]]:
    """``(inputs, failures)`` of the command line's ``items``: an existing path is one input; a pattern with
    ``*``, ``?`` or ``[`` (``**`` for sub-folders) is every path it matches, in name order; anything else is a
    failure naming it. An input given twice is used once."""
    inputs: list[Path] = []
    failures: list[Failure] = []
    for item in items:
        text = str(item)
        path = Path(text)
        if path.exists():
            found = [path]
        elif _GLOB_CHARACTERS & set(text):
            found = [Path(p) for p in sorted(glob.glob(text, recursive=True))]
            if not found:
                failures.append((text, f"no file matches the pattern {text!r}"))
        else:
            failures.append((text, f"input not found: {text}"))
            found = []
        inputs += [p for p in found if p not in inputs]
    return inputs, failures


def output_folders(inputs: Sequence[Path], out: str | Path) -> list[Path]:
    """The output folder of each input (see the module docstring)."""
    out = Path(out)
    if len(inputs) == 1:
        return [out]
    folders: list[Path] = []
    taken: set[str] = set()
    for path in inputs:
        stem = path.name if path.is_dir() else path.stem
        stem = stem or "input"
        name, k = stem, 1
        while name in taken:
            k += 1
            name = f"{stem}_{k}"
        taken.add(name)
        folders.append(out / name)
    return folders


def loaded(args: argparse.Namespace, key: str, build: Callable[[], Any]) -> Any:
    """``build()`` the first time ``key`` is asked for in this run of the command, the same object afterwards (a
    model is loaded once for every input)."""
    cache = vars(args).setdefault("_loaded", {})
    if key not in cache:
        cache[key] = build()
    return cache[key]


def device_options(args: argparse.Namespace) -> None:
    """Resolve ``args.device`` into a ``torch.device`` and check ``args.precision`` on it (in place), then say
    which device runs. Raises :class:`InputError` (one line) for a device or precision this machine lacks."""
    from vision.device import check_precision, describe_device, parse_precision, resolve_device

    args.device = resolve_device(args.device)
    check_precision(args.device, parse_precision(args.precision))
    print(describe_device(args.device) + f", precision {args.precision}")


def run_inputs(args: argparse.Namespace, runner: Callable[[argparse.Namespace, Path], None],
               inputs: Sequence[Path], failures: Sequence[Failure] = (),
               open_output: Callable[[Path, Path], Any] | None = None) -> int:
    """Run ``runner(args, out)`` with ``args.input`` set to each input and ``out`` its folder
    (:func:`output_folders`; ``open_output(out, input)`` is the context that checks and creates it and removes
    what a failed run wrote, :func:`vision.data.files.output_folder` by default). Returns 0 when every input
    succeeded, else 2 after printing each failure (``error: INPUT: reason``)."""
    from tqdm import tqdm

    from vision.device import device_error

    if open_output is None:
        from vision.data.files import output_folder

        def open_output(out: Path, path: Path) -> Any:
            return output_folder(out, inputs=[path, args.ckpt])

    failed = list(failures)
    several = len(inputs) + len(failed) > 1
    for item, reason in failed:
        print(f"error: {item}: {reason}" if several else f"error: {reason}", file=sys.stderr)
    folders = output_folders(inputs, args.out)
    with tqdm(total=len(inputs), desc="inputs", unit="input", disable=None if len(inputs) > 1 else True) as bar:
        for path, out in zip(inputs, folders):
            args.input = path
            try:
                try:
                    with open_output(out, path) as folder:
                        runner(args, folder)
                except (NotImplementedError, RuntimeError) as exc:  # an operator the device's backend lacks
                    error = device_error(exc)
                    if error is None:
                        raise
                    raise error from None
            except VisionError as exc:
                failed.append((str(path), str(exc)))
                print(f"error: {path}: {exc}" if several else f"error: {exc}", file=sys.stderr)
            bar.update(1)
    if failed and several:
        print(f"error: {len(failed)} of {len(inputs) + len(failures)} inputs failed:", file=sys.stderr)
        for item, reason in failed:
            print(f"  {item}: {reason}", file=sys.stderr)
    return 2 if failed else 0

