import pytest

from vision.errors import InputError
from vision.text.vocabulary import check_vocabulary, parse_vocabulary


def test_check_vocabulary():
    assert check_vocabulary(["a  mug", " cube"]) == ["a mug", "cube"]
    for bad, match in (([], "empty"), ("mug", "list"), (["mug", None], r"vocabulary\[1\] must be a str"),
                       (["mug", "MUG"], "duplicates"), ([""], "empty")):
        with pytest.raises(InputError, match=match):
            check_vocabulary(bad)


@pytest.mark.parametrize("text, names", [
    ("mug", ["mug"]),
    ("mug,chair,lamp", ["mug", "chair", "lamp"]),
    (" mug, chair; lamp\n", ["mug", "chair", "lamp"]),  # commas, semicolons and line breaks separate
    ("mug\r\nchair", ["mug", "chair"]),
    ("  red   mug ;traffic light", ["red mug", "traffic light"]),  # spaces trimmed, inner runs collapsed
])
def test_parse_vocabulary_splits_and_trims(text, names):
    assert parse_vocabulary(text) == names


@pytest.mark.parametrize("text, match", [
    ("", "the vocabulary is empty"),
    (" \n ", "the vocabulary is empty"),
    ("mug,,chair", r"'mug,,chair': name 2 of 3 is empty"),
    ("mug, chair,", "name 3 of 3 is empty"),
    (";mug", "name 1 of 2 is empty"),
    ("mug;\nchair", "name 2 of 3 is empty"),
    ("mug, chair, Mug", "'mug, chair, Mug': name 3 'Mug' repeats name 1 'mug'"),
    ("red mug, red  mug", "name 2 'red mug' repeats name 1"),
])
def test_parse_vocabulary_refuses_empty_and_repeated_names(text, match):
    with pytest.raises(InputError, match=match):
        parse_vocabulary(text)


def test_parse_vocabulary_names_its_field_and_refuses_a_list():
    with pytest.raises(InputError, match="--vocabulary 'a,,b': name 2"):
        parse_vocabulary("a,,b", field="--vocabulary")
    with pytest.raises(InputError, match="must be a text"):
        parse_vocabulary(["mug"])  # type: ignore[arg-type]
