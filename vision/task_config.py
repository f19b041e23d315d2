"""The typed configs that rebuild a task's model: :class:`TaskConfig` and the rules of its fields.

Every task defines one dataclass config (a subclass of :class:`TaskConfig`) in ``vision/<task>/task.py``; its
LightningModule stores it in the checkpoint's hyper-parameters as a plain dict under ``"config"`` (so
``weights_only=True`` reads it), and a model folder's ``config.json`` holds it under ``"config"``.

A config read from a file is untrusted input: every field has a type (its annotation) and a :class:`Rule` (its
range, choices, lengths; :func:`checked`), checked when the config is made, before any model is built. One schema
serves checkpoints (``hyper_parameters.config``), model folders (``config.json``'s ``config``), YAML recipes and
Python callers.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import numbers
import types
import typing
from collections.abc import Callable, Container, Mapping
from pathlib import Path
from typing import Any, ClassVar, TypeVar

from vision.errors import DataError, InputError

__all__ = ["TaskConfig", "Rule", "checked", "ConfigError", "MAX_TEXT_CHARS"]

C = TypeVar("C", bound="TaskConfig")

#: The longest text a config field holds unless its rule says otherwise (a path's limit on Linux).
MAX_TEXT_CHARS = 4096

_NO_VALUE = object()


class ConfigError(InputError):
    """A task config refused one of its fields.

    Attributes:
        config: the config class's name.
        field: a path inside the config: ``dim``, ``feature_layers[2]``, ``detector.image_size``; empty for the config
            as a whole (not a mapping, unknown fields).
        reason: what the field must be, in plain words.
        value: the refused value; None when there is none to show, or it is a list or a mapping, which the reason
            describes (a value nested without bound would not print in one line).
    """

    def __init__(self, config: str, field: str, reason: str, value: Any = _NO_VALUE) -> None:
        self._shown = value is not _NO_VALUE and not isinstance(value, (list, tuple, Mapping))
        self.config, self.field, self.reason = config, field, reason
        self.value = value if self._shown else None
        where = f"{config}.{field}" if field else config
        super().__init__(str(DataError(reason, field=where, **self._value())))  # DataError's "field=value: reason"

    def _value(self) -> dict[str, Any]:
        return {"value": self.value} if self._shown else {}

    def data_error(self, file: str | Path, prefix: str) -> DataError:
        """The same refusal as a :class:`DataError` naming ``file`` and ``<prefix>.<field>``."""
        return DataError(self.reason, file=file, field=f"{prefix}.{self.field}" if self.field else prefix,
                         **self._value())


@dataclasses.dataclass(frozen=True)
class Rule:
    """What a config field takes besides its annotated type; :func:`checked` attaches one to a field.

    Args:
        low, high: the range of a number (of each item, for a list of numbers); None: unbounded on that side (a
            number is always finite).
        open_low, open_high: the end is excluded (``(0, 1)`` for a probability that is neither 0 nor 1).
        multiple_of: an integer must be a multiple of it.
        choices: the values a string (or each item of a list) may take: a tuple, or a registry's dict, asked at
            check time so that later registrations count.
        items: ``(fewest, most)`` items of a list.
        max_chars: the longest string (each item's, for a list of strings).
    """

    low: float | None = None
    high: float | None = None
    open_low: bool = False
    open_high: bool = False
    multiple_of: int | None = None
    choices: Container[Any] | None = None
    items: tuple[int, int] | None = None
    max_chars: int = MAX_TEXT_CHARS

    def range_text(self) -> str:
        """``[low, high]`` (``(`` / ``)`` for an open end, ``inf`` for none); empty when unbounded."""
        if self.low is None and self.high is None:
            return ""
        low = "-inf" if self.low is None else _number_text(self.low)
        high = "inf" if self.high is None else _number_text(self.high)
        opening = "(" if self.open_low or self.low is None else "["
        closing = ")" if self.open_high or self.high is None else "]"
        return f"{opening}{low}, {high}{closing}"

    def in_range(self, value: int | float) -> bool:
        """Whether ``value`` (an int or a float; NaN never is) lies in the range; ints are compared exactly."""
        if isinstance(value, float) and not math.isfinite(value):
            return False
        if self.low is not None and (value <= self.low if self.open_low else value < self.low):
            return False
        return self.high is None or (value < self.high if self.open_high else value <= self.high)


def _number_text(value: float) -> str:
    return str(value) if isinstance(value, int) else f"{value:g}"


_DEFAULT_RULE = Rule()


def checked(default: Any = dataclasses.MISSING, *, factory: Callable[[], Any] | None = None, **rule: Any) -> Any:
    """A :class:`TaskConfig` field with its :class:`Rule`: ``checked(64, low=8, high=2048, multiple_of=8)``, or
    ``checked(factory=list, items=(0, 100))`` for a mutable default; ``rule`` takes :class:`Rule`'s arguments."""
    metadata = {"rule": Rule(**rule)}
    if factory is not None:
        return dataclasses.field(default_factory=factory, metadata=metadata)
    return dataclasses.field(default=default, metadata=metadata)


@dataclasses.dataclass
class TaskConfig:
    """Base of the tasks' model configs: a dataclass of plain values (str, int, float, bool, lists of them), whose
    ``task`` class attribute is the registered task's name (:mod:`vision.tasks`).

    ``to_dict()`` is what a checkpoint stores; ``from_value`` accepts a config, a mapping (a checkpoint's or a YAML
    file's) or None (the defaults), and names an unknown field instead of ignoring it.

    Every field is checked when a config is made (``__post_init__``), before any model is built: its value must be
    of the field's annotated type (``bool`` is not an int; an int is a float; a string is not a list; ``X | None``
    takes None; a list's items are checked one by one) and within the field's :class:`Rule` (:func:`checked`), and
    is normalised (a float field holds a float, a list field a list). A subclass's ``__post_init__`` calls
    ``super().__post_init__()`` first, then checks the rules that tie fields together (raising
    :meth:`field_error`). A refused field is a :class:`ConfigError` (an :class:`~vision.errors.InputError`) naming
    it; read from a file (``from_value(..., file=...)``) it is a :class:`~vision.errors.DataError` naming the file
    and the field.

    A LightningModule takes it as ``config: XConfig = XConfig()`` (not ``XConfig | None``: LightningCLI can link
    ``model.init_args.config.<field>`` to the data only when the argument's type is the dataclass itself).
    """

    task: ClassVar[str] = ""

    def __post_init__(self) -> None:
        name = type(self).__name__
        for field, kind, rule in _schema(type(self)):
            setattr(self, field, _check(name, field, getattr(self, field), kind, rule))

    def to_dict(self) -> dict[str, Any]:
        return {k: list(v) if isinstance(v, tuple) else v for k, v in dataclasses.asdict(self).items()}

    @classmethod
    def from_value(cls: type[C], value: C | Mapping[str, Any] | None, file: str | Path | None = None,
                   field: str = "hyper_parameters.config") -> C:
        """The config of ``value``: a config (copied), a mapping of its fields (others keep their defaults) or None
        (the defaults).

        Raises:
            ConfigError: a field is unknown or refused (``value`` not a mapping: the config as a whole).
            DataError: the same, when ``file`` (where ``value`` was read) is given: naming the file and
                ``<field>.<the config's field>`` (``hyper_parameters.config.dim`` of a checkpoint,
                ``config.dim`` of a model folder's ``config.json``).
        """
        if value is None:
            return cls()
        if isinstance(value, cls):
            return dataclasses.replace(value)  # a copy: a signature's default instance is never shared
        try:
            if not isinstance(value, Mapping):
                raise ConfigError(cls.__name__, "", f"a {cls.__name__} must be a mapping of its fields, got "
                                                    f"{_kind_of(value)}", value)
            names = {f.name for f in dataclasses.fields(cls)}
            unknown = sorted(repr(k) for k in value if k not in names)
            if unknown:
                raise ConfigError(cls.__name__, "", f"unknown {cls.__name__} field(s) [{', '.join(unknown)}]; known: "
                                                    f"{sorted(names)}")
            return cls(**dict(value))
        except ConfigError as exc:
            if file is None:
                raise
            raise exc.data_error(file, field) from None
        except InputError as exc:  # a config's own check that names no field
            if file is None:
                raise
            raise DataError(str(exc), file=file, field=field) from None

    @classmethod
    def variant(cls, hyper_parameters: Mapping[str, Any]) -> type:
        """The config class that reads a model folder of this task whose ``hyper_parameters`` are these: ``cls``
        itself, unless the task has more than one kind of model (then its config class overrides this and returns
        the other kind's, which has ``task`` and ``from_value`` as a task config does)."""
        return cls

    def replace(self: C, **changes: Any) -> C:
        """A copy with ``changes`` applied (``dataclasses.replace``)."""
        return dataclasses.replace(self, **changes)

    def field_error(self, field: str, reason: str, value: Any = _NO_VALUE) -> ConfigError:
        """The :class:`ConfigError` refusing ``field`` (a path inside this config) for ``reason``, showing ``value``
        (by default the field's)."""
        if value is _NO_VALUE:
            value = getattr(self, field, _NO_VALUE)
        return ConfigError(type(self).__name__, field, reason, value)

    def nested(self, field: str, config_cls: type[C]) -> C:
        """The config ``config_cls`` of the mapping in ``field`` (a combined task's part: concept's ``detector``);
        a refusal names ``<field>.<its field>``."""
        try:
            return config_cls.from_value(getattr(self, field))
        except ConfigError as exc:
            inner = f"{field}.{exc.field}" if exc.field else field
            raise ConfigError(type(self).__name__, inner, exc.reason, exc.value) from None


@functools.lru_cache(maxsize=None)
def _schema(cls: type) -> tuple[tuple[str, Any, Rule], ...]:
    """``(name, resolved annotation, rule)`` of every field of the config class ``cls``."""
    hints = typing.get_type_hints(cls)
    return tuple((f.name, hints[f.name], f.metadata.get("rule", _DEFAULT_RULE)) for f in dataclasses.fields(cls))


def _kind_of(value: Any) -> str:
    """The type of ``value`` in words: ``a str``, ``a list of 3 items``, ``null``."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a bool"
    if isinstance(value, (list, tuple, Mapping)):
        return f"a {type(value).__name__} of {len(value)} item{'' if len(value) == 1 else 's'}"
    name = type(value).__name__
    return f"an {name}" if name[0] in "aeiou" else f"a {name}"


def _expected(kind: Any, rule: Rule) -> str:
    """What a field of annotation ``kind`` under ``rule`` takes, in words (``an integer in [1, 8]``)."""
    origin, args = typing.get_origin(kind), typing.get_args(kind)
    if origin in (typing.Union, types.UnionType):
        return " or ".join("null" if a is type(None) else _expected(a, rule) for a in args)
    if origin is typing.Literal:
        return f"one of {list(args)}"
    if origin in (list, tuple) or kind in (list, tuple):
        item = args[0] if args else Any
        fewest, most = rule.items or (0, None)
        count = f"{fewest}..{most} " if most is not None else (f"at least {fewest} " if fewest else "")
        return f"a list of {count}items, each {_expected(item, rule)}"
    if kind is bool:
        return "true or false"
    if kind in (int, float):
        text = "an integer" if kind is int else "a number"
        bounds = rule.range_text()
        text += f" in {bounds}" if bounds else ("" if kind is int else " (finite)")
        return text + (f", a multiple of {rule.multiple_of}" if rule.multiple_of else "")
    if kind is str:
        if rule.choices is not None:
            return f"one of {sorted(rule.choices) if not isinstance(rule.choices, tuple) else list(rule.choices)}"
        return f"a text of at most {rule.max_chars} characters"
    if kind is dict or origin in (dict, Mapping) or kind is Mapping:
        return "a mapping"
    return f"a {getattr(kind, '__name__', kind)}"


def _check(config: str, field: str, value: Any, kind: Any, rule: Rule, shown: Any = None) -> Any:
    """``value`` normalised to the annotation ``kind`` (a float field's int becomes a float, a list field's tuple a
    list), or a :class:`ConfigError` naming ``field`` of ``config`` when it is not of that type or not within
    ``rule``; the message says what ``shown`` takes (the whole annotation, when ``kind`` is one arm of it)."""
    def refuse(wrong_type: bool = False) -> ConfigError:
        got = f", got {_kind_of(value)}" if wrong_type else ""
        return ConfigError(config, field, f"must be {_expected(shown or kind, rule)}{got}", value)

    origin, args = typing.get_origin(kind), typing.get_args(kind)
    if kind is Any:
        return value
    if origin in (typing.Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        arms = [a for a in args if a is not type(None)]
        for arm in arms:
            try:
                return _check(config, field, value, arm, rule, shown=kind)
            except ConfigError:
                if len(arms) == 1:  # the one arm's refusal says whether the type or the range is wrong
                    raise
        raise refuse(wrong_type=True)
    if origin is typing.Literal:
        if not any(value == a and type(value) is type(a) for a in args):
            raise refuse()
        return value
    if origin in (list, tuple) or kind in (list, tuple):
        if not isinstance(value, (list, tuple)):
            raise refuse(wrong_type=True)
        fewest, most = rule.items or (0, None)
        if len(value) < fewest or (most is not None and len(value) > most):
            raise ConfigError(config, field, f"must be {_expected(shown or kind, rule)}, got {_kind_of(value)}")
        item = args[0] if args else Any
        items = [_check(config, f"{field}[{i}]", v, item, rule) for i, v in enumerate(value)]
        return tuple(items) if origin is tuple or kind is tuple else items
    if kind is bool:
        if not isinstance(value, bool):
            raise refuse(wrong_type=True)
        return value
    if kind is int:
        if isinstance(value, bool) or not isinstance(value, numbers.Integral):
            raise refuse(wrong_type=True)
        value = int(value)
        if not rule.in_range(value) or (rule.multiple_of and value % rule.multiple_of):
            raise refuse()
        return value
    if kind is float:
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            raise refuse(wrong_type=True)
        if isinstance(value, numbers.Integral):
            value = int(value)  # compared exactly: an integer of any size is refused by range, never overflows
        if not rule.in_range(value):
            raise refuse()
        try:
            number = float(value)
        except OverflowError:
            number = math.inf
        if not math.isfinite(number):
            raise refuse()
        return number
    if kind is str:
        if not isinstance(value, str):
            raise refuse(wrong_type=True)
        if rule.choices is not None:
            if value not in rule.choices:
                raise refuse()
        elif len(value) > rule.max_chars or "\x00" in value:
            raise ConfigError(config, field, f"must be {_expected(shown or kind, rule)} and no NUL byte, got "
                                             f"{len(value)} characters", value[:80])
        return value
    if kind is dict or kind is Mapping or origin in (dict, Mapping):
        if not isinstance(value, Mapping):
            raise refuse(wrong_type=True)
        return dict(value)
    if isinstance(kind, type) and not isinstance(value, kind):
        raise refuse(wrong_type=True)
    return value
