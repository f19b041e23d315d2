"""vision.task_config: task configs as plain data, every field checked against its type and rule."""

from __future__ import annotations

import dataclasses
import json
import math
import typing
from datetime import timedelta
from pathlib import Path
from typing import Any

import hypothesis.strategies as st
import pytest
import torch
import yaml
from hypothesis import HealthCheck, given, settings

from vision.errors import DataError, InputError
from vision.task_config import ConfigError, Rule, TaskConfig, checked
from vision.tasks import TASKS, get_task


@dataclasses.dataclass
class ToyConfig(TaskConfig):
    width: int = 4
    layers: tuple[int, ...] = (1, -1)
    name: str = "tiny"


def test_config_from_none_mapping_or_instance():
    assert ToyConfig.from_value(None) == ToyConfig()
    assert ToyConfig.from_value({"width": 8}) == ToyConfig(width=8)
    config = ToyConfig(name="base")
    assert ToyConfig.from_value(config) == config and ToyConfig.from_value(config) is not config
    assert config.replace(width=2) == ToyConfig(width=2, name="base")


def test_config_to_dict_is_plain_data():
    assert ToyConfig().to_dict() == {"width": 4, "layers": [1, -1], "name": "tiny"}


def test_unknown_config_field_is_named():
    with pytest.raises(InputError, match=r"unknown ToyConfig field\(s\) \['depth'\]"):
        ToyConfig.from_value({"depth": 3})
    with pytest.raises(InputError, match="must be a mapping"):
        ToyConfig.from_value(3)


# ---------------------------------------------------------------------------------------------------- the schema
# Every TaskConfig field has a type (its annotation) and a rule (checked(...)): a config read from a checkpoint or a
# model folder is untrusted input, refused field by field before any model is built.

ROOT = Path(__file__).resolve().parents[1]
NAMES = [task.name for task in TASKS]
#: a registered task's config class by task name
CONFIGS = {name: get_task(name).resolve("config") for name in NAMES}
#: (task, field) of every field of every registered task's config
FIELDS = [(name, field.name) for name, cls in CONFIGS.items() for field in dataclasses.fields(cls)]
#: the most values (weights and buffers) the largest config a task accepts may build: 10 GB of float32, so that
#: building it and reading its weights fit a 24 GB machine
MAX_VALUES = 2.5e9


@dataclasses.dataclass
class Ruled(TaskConfig):
    width: int = checked(4, low=1, high=8, multiple_of=2)
    layers: tuple[int, ...] = checked((1, -1), low=-4, high=3, items=(1, 4))
    name: str | None = checked("tiny", choices=("tiny", "base"))
    rate: float = checked(0.5, low=0.0, high=1.0, open_high=True)
    names: list[str] = checked(factory=list, items=(0, 3), max_chars=5)
    flag: bool = True
    parts: dict = dataclasses.field(default_factory=dict)


@pytest.mark.parametrize("changes, field, reason", [
    ({"width": True}, "width", "must be an integer in [1, 8], a multiple of 2, got a bool"),
    ({"width": "4"}, "width", "got a str"),
    ({"width": 4.0}, "width", "got a float"),
    ({"width": 3}, "width", "a multiple of 2"),
    ({"width": 10 ** 5000}, "width", "must be an integer in [1, 8]"),
    ({"layers": "ab"}, "layers", "must be a list of 1..4 items, each an integer in [-4, 3], got a str"),
    ({"layers": []}, "layers", "got a list of 0 items"),
    ({"layers": [1, [2]]}, "layers[1]", "got a list of 1 item"),
    ({"layers": [1, 9]}, "layers[1]", "must be an integer in [-4, 3]"),
    ({"name": "huge"}, "name", "must be one of ['tiny', 'base'] or null"),
    ({"name": 3}, "name", "or null, got an int"),
    ({"rate": "0.5"}, "rate", "must be a number in [0, 1), got a str"),
    ({"rate": 1}, "rate", "must be a number in [0, 1)"),
    ({"rate": math.nan}, "rate", "must be a number in [0, 1)"),
    ({"rate": -10 ** 5000}, "rate", "must be a number in [0, 1)"),
    ({"names": "abc"}, "names", "got a str"),
    ({"names": ["abcdef"]}, "names[0]", "at most 5 characters"),
    ({"names": ["a\x00"]}, "names[0]", "no NUL byte"),
    ({"flag": "false"}, "flag", "must be true or false, got a str"),
    ({"flag": 0}, "flag", "must be true or false, got an int"),
    ({"parts": [1]}, "parts", "must be a mapping, got a list"),
])
def test_a_field_of_the_wrong_type_or_out_of_its_rule_is_refused_by_name(changes, field, reason):
    with pytest.raises(ConfigError) as info:
        Ruled.from_value(changes)
    assert info.value.field == field and reason in info.value.reason, str(info.value)
    assert str(info.value).startswith(f"Ruled.{field}") and "\n" not in str(info.value)
    with pytest.raises(DataError) as info:
        Ruled.from_value(changes, file="folder/config.json", field="config")
    assert str(info.value).startswith(f"folder/config.json: config.{field}") and reason in str(info.value)


def test_values_are_normalised_to_their_annotation():
    config = Ruled.from_value({"layers": [2, 3], "rate": 0, "name": None, "names": ("a",)})
    assert config.layers == (2, 3) and config.rate == 0.0 and type(config.rate) is float and config.names == ["a"]
    assert Ruled.from_value(config.to_dict()) == config
    assert Rule(low=0.0, high=1.0, open_low=True).range_text() == "(0, 1]"


def test_the_refused_value_is_shown_in_one_line_however_it_is_made():
    deep: list = []
    for _ in range(100_000):  # repr() of this would exceed the recursion limit
        deep = [deep]
    for value in (deep, {"a": deep}, "x" * 10 ** 6, 10 ** 5000):
        for field in ("width", "names", "parts", "name"):
            try:
                Ruled.from_value({field: value}, file="config.json", field="config")
            except DataError as exc:
                assert "\n" not in str(exc) and len(str(exc)) < 400, str(exc)[:400]


@pytest.mark.parametrize("name", NAMES)
def test_every_number_and_text_field_of_every_task_has_bounds(name):
    """Every int / float (or list of them) has a range, every text either choices or a length: a config that
    passes cannot ask for more than the bounds allow."""
    cls = CONFIGS[name]
    hints = typing.get_type_hints(cls)
    for field in dataclasses.fields(cls):
        rule = field.metadata.get("rule", Rule())
        kinds = {k for k in _leaf_kinds(hints[field.name])}
        if kinds & {int, float}:
            assert rule.low is not None and rule.high is not None, f"{cls.__name__}.{field.name} has no range"
        if list in {typing.get_origin(hints[field.name])}:
            assert rule.items is not None, f"{cls.__name__}.{field.name} has no item count"


def _leaf_kinds(kind: Any) -> list[Any]:
    args = typing.get_args(kind)
    return [leaf for arg in args for leaf in _leaf_kinds(arg)] if args else [kind]


RENDERED = sorted((ROOT / "tests" / "configs" / "rendered").glob("*.yaml"))


@pytest.mark.parametrize("path", RENDERED, ids=[p.stem for p in RENDERED])
def test_every_shipped_recipe_config_is_accepted(path):
    """The rendered recipes (tests/configs/rendered: configs/*/*.yaml as LightningCLI composes them, the VGGT-1B
    ones included) are within the bounds."""
    task = path.stem.split("__")[0]
    model = yaml.safe_load(path.read_text())["model"]
    fields = model["init_args"]["config"]
    if model["class_path"] == "vision.tracking.real.lightning.RealTrackerModule":  # G2TAM on real video
        from vision.tracking.real.model import RealTrackerConfig

        config = RealTrackerConfig(**fields)
        assert RealTrackerConfig(**config.to_dict()) == config
        return
    config = CONFIGS[task].from_value(fields, file=path)
    assert CONFIGS[task].from_value(config.to_dict()) == config


LARGEST: dict[str, dict[str, Any]] = {
    "geometry": {"size": "vggt_1b", "image_size": 2044, "match_dim": 4096, "ray_head": True},
    "tracking": {"backbone": "vggt_1b", "image_size": 2044, "dim": 512, "num_heads": 32, "decoder_depth": 8,
                 "num_masks": 16, "text_dim": 4096, "decoder_style": "sam2"},
    "detection": {"size": "vggt_1b", "image_size": 2044, "channels": 1024, "feature_layers": list(range(8)),
                  "embed_dim": 4096, "num_oov_prompts": 64, "pixel_stem": False, "text_projection": True},
    "forensics": {"hidden": 4096},
}
LARGEST["concept"] = {"image_size": 2044, "hidden": 4096, "detector": LARGEST["detection"],
                      "tracker": LARGEST["tracking"]}


@pytest.mark.parametrize("name", NAMES)
def test_the_largest_config_each_task_accepts_is_buildable(name):
    """Built on the meta device (no memory): the number of values of the largest model the bounds allow."""
    config = CONFIGS[name].from_value(LARGEST.get(name, {}))
    with torch.device("meta"):
        model = get_task(name).build_model(config)
    values = sum(t.numel() for t in model.parameters()) + sum(t.numel() for t in model.buffers())
    assert values <= MAX_VALUES, f"{name}: {values / 1e9:.2f} G values"


def _deep(levels: int) -> list:
    value: list = []
    for _ in range(levels):
        value = [value]
    return value


#: values that are wrong for most fields: other types, bools for numbers, texts of numbers and bools, huge, negative,
#: non-finite numbers, integers past Python's digit limit, nested lists and mappings
HOSTILE = st.one_of(
    st.none(), st.booleans(),
    st.integers(min_value=-10 ** 7, max_value=10 ** 7),
    st.sampled_from([0, -1, 3, 10 ** 6, 10 ** 30, 10 ** 5000, -10 ** 5000]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0.5, 2.0, -1.0, 1e300, 64.0]),
    st.text(max_size=12),
    st.sampled_from(["0.5", "64", "false", "true", "abc", "", " ", "tiny", "{}", "a {} {}", "{0.x}", "a\x00b"]),
    st.lists(st.integers(min_value=-100, max_value=100), max_size=10),
    st.lists(st.text(max_size=6), max_size=4),
    st.sampled_from([[[1]], [1, "a"], _deep(50), {"a": 1}, {}]),
    st.dictionaries(st.text(max_size=6), st.integers(), max_size=3),
)


def _valid(kind: Any, rule: Rule, default: Any = None) -> st.SearchStrategy:
    """Values of the annotation ``kind`` within ``rule``, often the ``default`` doubled or halved (whether the
    config then accepts them depends on the rules that tie fields together, such as a multiple of a patch size)."""
    args = typing.get_args(kind)
    if args and type(None) in args:
        return st.one_of(st.none(), *(_valid(a, rule, default) for a in args if a is not type(None)))
    if typing.get_origin(kind) in (list, tuple):
        fewest, most = rule.items or (0, 4)
        return st.lists(_valid(args[0], rule), min_size=fewest, max_size=min(most, fewest + 4))
    if kind is bool:
        return st.booleans()
    if kind in (int, float):
        low, high = rule.low if rule.low is not None else -100, rule.high if rule.high is not None else 100
        near = [kind(x) for x in (default, low, high) if isinstance(x, (int, float)) and not isinstance(x, bool)]
        near += [kind(x * 2) for x in near] + [kind(x // 2 if kind is int else x / 2) for x in near]
        step = rule.multiple_of or 1
        near = [x for x in near if rule.in_range(x) and x % step == 0]
        if kind is int:
            drawn = st.integers(min_value=-(-int(low) // step), max_value=int(high) // step).map(lambda n: n * step)
        else:
            drawn = st.floats(min_value=low, max_value=high, exclude_min=rule.open_low, exclude_max=rule.open_high)
        return st.one_of(drawn, st.sampled_from(near)) if near else drawn
    if kind is str:
        return st.sampled_from(sorted(rule.choices)) if rule.choices is not None else st.text(max_size=20)
    return st.just({})


def _values(cls: type, field: str, hostile: bool = True) -> st.SearchStrategy:
    """Hostile values and values of the field's type within its rule (``hostile`` False: mostly the latter;
    hypothesis favours a ``one_of``'s first strategy)."""
    spec = next(f for f in dataclasses.fields(cls) if f.name == field)
    valid = _valid(typing.get_type_hints(cls)[field], spec.metadata.get("rule", Rule()), getattr(cls(), field))
    return st.one_of(HOSTILE, valid) if hostile else st.one_of(valid, valid, valid, HOSTILE)


def _conforms(value: Any, kind: Any) -> bool:
    """Whether ``value`` is plain data of the annotation ``kind`` (checked here independently of the schema)."""
    args = typing.get_args(kind)
    if args and type(None) in args:
        return value is None or any(_conforms(value, a) for a in args if a is not type(None))
    if typing.get_origin(kind) in (list, tuple):
        return isinstance(value, typing.get_origin(kind)) and all(_conforms(v, args[0]) for v in value)
    if kind is float:
        return type(value) is float and math.isfinite(value)
    if kind in (bool, int, str):
        return type(value) is kind
    return isinstance(value, dict)


def _outcome(cls: type, fields: dict[str, Any]) -> TaskConfig | None:
    """The config of ``fields`` read from a model folder's config.json, or None when it is refused with one
    DataError line that names the file and a field of the config; any other exception fails the test."""
    try:
        config = cls.from_value(fields, file="model/config.json", field="config")
    except DataError as exc:
        text = str(exc)
        assert text.startswith("model/config.json: config.") and "\n" not in text and len(text) < 1000, text[:1000]
        named = exc.field.removeprefix("config.").split(".")[0].split("[")[0].split("=")[0]
        assert named in {f.name for f in dataclasses.fields(cls)}, text
        return None
    hints = typing.get_type_hints(cls)
    for field in dataclasses.fields(cls):
        assert _conforms(getattr(config, field.name), hints[field.name]), (field.name, getattr(config, field.name))
    plain = json.loads(json.dumps(config.to_dict(), allow_nan=False))
    assert cls.from_value(plain) == config
    return config


# Each example takes milliseconds; the deadline flags one that starts to build or allocate.
CONFIG_FUZZ = settings(max_examples=25, deadline=timedelta(seconds=5), suppress_health_check=list(HealthCheck),
                       derandomize=True)


@CONFIG_FUZZ
@given(data=st.data())
@pytest.mark.parametrize("name, field", FIELDS, ids=[f"{n}.{f}" for n, f in FIELDS])
def test_every_field_of_every_task_refuses_what_it_cannot_take_by_name(name, field, data):
    """One field mutated (a wrong type, a bool for an int, a text for a number or a bool, a huge, negative, NaN or
    5000-digit number, a nested list, an out-of-range value): a valid config or one DataError naming the file and
    the field, never another exception, never a hang; a value of another type is refused by this field's name."""
    cls = CONFIGS[name]
    value = data.draw(_values(cls, field), label=field)
    config = _outcome(cls, {field: value})
    kind = typing.get_type_hints(cls)[field]
    if config is not None:
        assert _conforms(getattr(config, field), kind)


@pytest.mark.parametrize("name, field", FIELDS, ids=[f"{n}.{f}" for n, f in FIELDS])
def test_a_value_of_another_type_is_refused_by_the_fields_name(name, field):
    cls = CONFIGS[name]
    kind = typing.get_type_hints(cls)[field]
    for value in ([[1]], {"a": 1}, True, "0.5", 10 ** 5000, math.nan):
        if _conforms(value, kind):
            continue
        with pytest.raises(DataError) as info:
            cls.from_value({field: value}, file="model/config.json", field="config")
        assert info.value.field.split("=")[0].startswith(f"config.{field}"), str(info.value)


@settings(CONFIG_FUZZ, max_examples=200, deadline=timedelta(seconds=30))
@given(data=st.data())
@pytest.mark.parametrize("name", NAMES)
def test_several_fields_mutated_at_once_give_a_buildable_config_or_one_error(name, data):
    """Fields mutated together, mostly within their own rules, so that the rules tying fields together are met or
    broken (a patch size, heads that divide a width, the backbone's depth): a config that is accepted builds (on
    the meta device: the whole architecture, no memory)."""
    cls = CONFIGS[name]
    fields = [f.name for f in dataclasses.fields(cls)]
    chosen = data.draw(st.lists(st.sampled_from(fields), min_size=1, max_size=3, unique=True))
    config = _outcome(cls, {field: data.draw(_values(cls, field, hostile=False), label=field) for field in chosen})
    if config is not None:
        with torch.device("meta"):
            get_task(name).build_model(config)
