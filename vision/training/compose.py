"""Configs that stack on shared base files: a top-level ``base:`` key, resolved before LightningCLI reads the config.

A training config (``configs/<task>/<name>.yaml``) may name the files it builds on::

    base: [../_ddp.yaml, _base.yaml]   # or one path: base: _base.yaml
    trainer:
      default_root_dir: runs/detection/oovdet_oov_voc

The rule:

- ``base`` is one path or a list of paths, each relative to the folder of the file that names it (or absolute).
  A base may name its own bases; they are composed first.
- Merge order: the bases in the order listed, then the file's own keys; a later value wins.
- How values merge: two mappings merge key by key, recursively; anything else (a scalar, a list, ``null``) replaces
  the earlier value whole. Lists are never joined or merged item by item (a variant that changes one callback
  restates the ``callbacks`` list).
- After merging, a string value holding ``${a.b.c}`` gets the value at that dotted key of the composed config: a
  string that is only the reference takes the value as it is (any type); a longer string takes it as text (a string
  or a number only). The value referred to may not itself hold a reference. The shipped bases use this for the run
  folder (``save_dir: ${trainer.default_root_dir}``), so a variant names its run folder once.
- The ``base`` key itself is dropped: the result is a plain config.
- Errors are :class:`~vision.errors.DataError` naming the file: a missing or unreadable file, a file that is not a
  YAML mapping, ``base`` not a path or a list of paths, a cycle of bases (the chain is named), a reference to a key
  the composed config does not have.

Files are read with jsonargparse's YAML loader, the one LightningCLI uses, so a composed value is the value
jsonargparse would have read from the file (``1e-3`` is a float, as it is there). The training CLI
(:class:`vision.training.cli.VisionCLI`) hands a composed ``--config`` to LightningCLI as YAML text; a config with
neither a ``base`` key nor a ``${...}`` reference is handed over as the path it is.

Files whose name starts with ``_`` are bases, not configs to train with (:func:`is_base`,
:func:`shipped_configs`).
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml
from jsonargparse import get_loader

from vision.errors import DataError

__all__ = ["BASE_KEY", "compose", "compose_arguments", "is_base", "merge", "needs_composing", "shipped_configs"]

#: the top-level key that names a config's bases
BASE_KEY = "base"

#: ``${a.b.c}``: a reference to the value at a dotted key of the composed config
_REFERENCE = re.compile(r"\$\{([^${}]+)\}")

#: the options of the training CLI that take a config file
_CONFIG_OPTIONS = ("--config", "-c")


def is_base(path: str | Path) -> bool:
    """Whether ``path`` is a base file (its name starts with ``_``), not a config to train with."""
    return Path(path).name.startswith("_")


def shipped_configs(root: str | Path) -> list[Path]:
    """The configs to train with under ``root`` (e.g. the repository's ``configs/``), sorted: every ``*.yaml`` below
    it but the bases (:func:`is_base`)."""
    return sorted(path for path in Path(root).rglob("*.yaml") if not is_base(path))


def merge(earlier: Any, later: Any) -> Any:
    """``later`` over ``earlier``: two mappings merge key by key (recursively, a new dict; keys keep their first
    position); any other ``later`` replaces ``earlier`` whole. Neither argument is changed."""
    if isinstance(earlier, Mapping) and isinstance(later, Mapping):
        merged = {key: copy.deepcopy(value) for key, value in earlier.items()}
        for key, value in later.items():
            merged[key] = merge(merged[key], value) if key in merged else copy.deepcopy(value)
        return merged
    return copy.deepcopy(later)


def compose(path: str | Path) -> dict[str, Any]:
    """The config at ``path`` with its bases merged under it and its ``${...}`` references resolved (module
    docstring: the rule).

    Raises:
        DataError: a missing, unreadable or malformed file, a bad ``base`` value, a cycle of bases, or a reference to
            a key the composed config lacks (each naming the file).
    """
    merged = _compose(Path(path), ())
    return _resolve(merged, merged, Path(path))


def needs_composing(path: str | Path) -> bool:
    """Whether the config file at ``path`` has a top-level ``base`` key or a ``${...}`` reference (otherwise it is
    a plain config that LightningCLI reads as it is)."""
    raw = _read(Path(path))
    return BASE_KEY in raw or _has_reference(raw)


def compose_arguments(args: Sequence[str]) -> list[str]:
    """``args`` of the training CLI with each config file that needs composing (``--config PATH``,
    ``--config=PATH`` or ``-c PATH``; :func:`needs_composing`) replaced by its composed config as YAML text, which
    jsonargparse reads as it reads the file. Any other argument (a plain config, a YAML string, an override) is
    kept as it is.

    Raises:
        DataError: as :func:`compose`.
    """
    out: list[str] = []
    index = 0
    while index < len(args):
        arg = args[index]
        option, value = arg, None
        if arg in _CONFIG_OPTIONS and index + 1 < len(args):
            value = args[index + 1]
            index += 1
        elif arg.startswith("--config="):
            option, value = arg.split("=", 1)
        if value is None:
            out.append(arg)
        elif Path(value).is_file() and needs_composing(value):
            out += [option, yaml.safe_dump(compose(value), sort_keys=False)]
        else:
            out += [option, value]
        index += 1
    return out


def _read(path: Path) -> dict[str, Any]:
    """One config file as read by jsonargparse's YAML loader; a mapping, or a DataError naming the file."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise DataError(f"cannot read the config ({exc.strerror or exc})", file=path) from None
    try:
        loaded = get_loader("yaml")(text)
    except yaml.YAMLError as exc:
        raise DataError(f"not valid YAML ({' '.join(str(exc).split())})", file=path) from None
    if loaded is None:
        return {}
    if not isinstance(loaded, dict):
        raise DataError(f"a config is a YAML mapping, not a {type(loaded).__name__}", file=path)
    return loaded


def _bases(path: Path, raw: Mapping[str, Any]) -> list[Path]:
    """The bases ``raw`` (read from ``path``) names, as paths (relative ones from ``path``'s folder)."""
    value = raw.get(BASE_KEY)
    names = [value] if isinstance(value, str) else value
    if not isinstance(names, list) or not all(isinstance(name, str) and name for name in names):
        raise DataError("base is a path or a list of paths", file=path, field=BASE_KEY, value=value)
    return [path.parent / name for name in names]


def _compose(path: Path, chain: tuple[Path, ...]) -> dict[str, Any]:
    """``path`` merged over its bases, references not yet resolved; ``chain``: the files that led here, to
    name a cycle."""
    key = path.resolve()
    if key in chain:
        cycle = " -> ".join(str(p) for p in (*chain[chain.index(key):], key))
        raise DataError(f"the bases form a cycle ({cycle})", file=path, field=BASE_KEY)
    if not path.is_file():
        named_by = f" (named by {chain[-1]})" if chain else ""
        raise DataError(f"no such config file{named_by}", file=path)
    raw = _read(path)
    merged: dict[str, Any] = {}
    if BASE_KEY in raw:
        for base in _bases(path, raw):
            merged = merge(merged, _compose(base, (*chain, key)))
    return merge(merged, {k: v for k, v in raw.items() if k != BASE_KEY})


def _has_reference(value: Any) -> bool:
    if isinstance(value, str):
        return _REFERENCE.search(value) is not None
    if isinstance(value, Mapping):
        return any(_has_reference(item) for item in value.values())
    if isinstance(value, list):
        return any(_has_reference(item) for item in value)
    return False


def _lookup(config: Mapping[str, Any], dotted: str, path: Path) -> Any:
    """The value at ``dotted`` (``a.b.c``, mapping keys only) of ``config``; a DataError if there is none or it
    holds a reference itself."""
    node: Any = config
    for part in dotted.split("."):
        if not isinstance(node, Mapping) or part not in node:
            raise DataError(f"the reference ${{{dotted}}} names no key of the composed config", file=path)
        node = node[part]
    if _has_reference(node):
        raise DataError(f"${{{dotted}}} refers to a value that holds a reference itself", file=path)
    return node


def _resolve(value: Any, config: Mapping[str, Any], path: Path) -> Any:
    """``value`` with every ``${...}`` in its strings replaced from ``config`` (module docstring)."""
    if isinstance(value, Mapping):
        return {key: _resolve(item, config, path) for key, item in value.items()}
    if isinstance(value, list):
        return [_resolve(item, config, path) for item in value]
    if not isinstance(value, str) or _REFERENCE.search(value) is None:
        return value
    whole = _REFERENCE.fullmatch(value)
    if whole:
        return copy.deepcopy(_lookup(config, whole.group(1), path))

    def text(match: re.Match[str]) -> str:
        found = _lookup(config, match.group(1), path)
        if isinstance(found, bool) or not isinstance(found, (str, int, float)):
            raise DataError(f"${{{match.group(1)}}} inside a longer string must be a string or a number, "
                            f"not {type(found).__name__}", file=path, value=value)
        return str(found)

    return _REFERENCE.sub(text, value)
