"""The one check of a text a user gives (vision/text/user_text.py), and every entrance that applies it: the text
encoder's list, vocabularies (lists and texts), ``--concept``, ``--text``, prompt lines, ``--exemplar-box``'s name
and the demo's phrase and exemplar fields. Arbitrary Unicode (surrogates included) and arbitrary bytes (as a
command line delivers them) are either read or refused with one line naming the field; what is read encodes."""

from __future__ import annotations

import argparse
import os
from datetime import timedelta

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vision.concept.cli import concept_prompts
from vision.concept.demo_handlers import _exemplar_lines, parse_phrases
from vision.concept.exemplars import parse_exemplar
from vision.detection.cli import parse_exemplar_box
from vision.errors import InputError
from vision.text.encoder import check_texts
from vision.text.user_text import MAX_TEXT_LENGTH, check_text, check_text_field
from vision.text.vocabulary import check_vocabulary, parse_vocabulary
from vision.tracking.prompt_text import flag_prompts, parse_prompt_lines

FUZZ = settings(max_examples=80, deadline=timedelta(seconds=10), suppress_health_check=list(HealthCheck))

#: any code point, lone surrogates and controls included
ANY_TEXT = st.text(alphabet=st.characters(codec=None, categories=None), max_size=40)

#: any bytes, as Python hands a command-line argument over (undecodable bytes as surrogates)
ANY_ARGUMENT = st.binary(max_size=40).map(os.fsdecode)


def _concept(text: str) -> list:
    return concept_prompts(argparse.Namespace(concept_prompts=[("phrase", text)]))


#: every entrance of a user's text: field name -> how it reads one text
ENTRANCES = {
    "check_text": lambda t: check_text(t, "--concept"),
    "encoder": lambda t: check_texts([t]),
    "vocabulary list": lambda t: check_vocabulary([t]),
    "--vocabulary": lambda t: parse_vocabulary(t, field="--vocabulary"),
    "--concept": _concept,
    "--text": lambda t: flag_prompts(texts=[t]),
    "--prompt": lambda t: parse_prompt_lines(f"object 1 text {t}"),
    "--exemplar-box": lambda t: parse_exemplar_box(f"{t}=frame.png:1,2,30,40"),
    "demo phrases": parse_phrases,
    "demo exemplars": lambda t: [parse_exemplar(line, "exemplar box") for line in _exemplar_lines(t)],
}

#: the entrances that read names or phrases (the demo's exemplar field reads boxes)
PHRASE_ENTRANCES = sorted(set(ENTRANCES) - {"demo exemplars"})


@pytest.mark.parametrize("text, expected", [
    ("mug", "mug"), ("  red\tmug \n", "red mug"), ("café", "café"), ("日本の茶碗", "日本の茶碗"), ("🙂", "🙂"),
    ("mug\u200b", "mug\u200b"), ("e\u0301", "e\u0301"),
])
def test_visible_valid_text_is_read_with_its_spaces_folded(text, expected):
    assert check_text(text, "--concept") == expected


@pytest.mark.parametrize("text, message", [
    ("", "--concept '' is empty"),
    ("   ", "--concept '   ' is nothing visible"),
    ("\u200b", r"is nothing visible \(only spaces, format or zero-width characters\)"),
    ("\u200b\u200d\ufeff\u2060", "nothing visible"),
    ("\u3164\u2800", "nothing visible"),
    ("\u0301", "nothing visible"),
    ("\ue000", "nothing visible"),
    ("caf\udce9", r"--concept 'caf\\udce9' is not valid UTF-8 text: byte 0xE9 at character 4"),
    ("a\ud800", r"is not valid Unicode: a lone surrogate U\+D800 at character 2"),
    ("mug\x1b[31m", r"holds the control character U\+001B at character 4"),
    ("m\x00ug", r"holds the control character U\+0000 at character 2"),
    ("m" * (MAX_TEXT_LENGTH + 1), f"is {MAX_TEXT_LENGTH + 1} characters long; at most {MAX_TEXT_LENGTH} are read"),
    (b"mug", "must be a text, got bytes"),
])
def test_invalid_or_invisible_text_is_one_line_naming_the_field(text, message):
    with pytest.raises(InputError, match=message) as caught:
        check_text(text, "--concept")
    assert "\n" not in str(caught.value)


def test_a_field_keeps_its_line_breaks_and_checks_its_length():
    assert check_text_field("mug\nchair", "the vocabulary") == "mug\nchair"
    with pytest.raises(InputError, match="the vocabulary is 11 characters long; at most 10"):
        check_text_field("mug, chairs", "the vocabulary", max_length=10)


@pytest.mark.parametrize("entrance", sorted(ENTRANCES))
def test_every_entrance_refuses_undecodable_text(entrance):
    with pytest.raises(InputError, match="is not valid UTF-8 text: byte 0xE9"):
        ENTRANCES[entrance]("caf\udce9")


@pytest.mark.parametrize("entrance", PHRASE_ENTRANCES)
def test_every_phrase_entrance_refuses_invisible_text(entrance):
    with pytest.raises(InputError, match="nothing visible"):
        ENTRANCES[entrance]("\u200b\u2060")


@pytest.fixture(scope="module")
def encoder():
    from vision.text.encoder import MiniLMTextEncoder

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    return MiniLMTextEncoder()


def _read_or_refused(text: str) -> list[str]:
    """Each entrance on ``text``: it reads it or refuses it with one line; the texts of phrase entrances read."""
    read = []
    for name, entrance in ENTRANCES.items():
        try:
            entrance(text)
        except InputError as exc:
            assert "\n" not in str(exc), (name, str(exc))
        else:
            if name == "check_text":
                read.append(text)
    return read


@FUZZ
@given(text=ANY_TEXT)
def test_any_unicode_is_read_or_refused_in_one_line_and_what_is_read_encodes(encoder, text):
    for phrase in _read_or_refused(text):
        vector = encoder([phrase])
        assert vector.shape == (1, 384) and bool(vector.isfinite().all())


@FUZZ
@given(text=ANY_ARGUMENT)
def test_any_command_line_bytes_are_read_or_refused_in_one_line_and_what_is_read_encodes(encoder, text):
    for phrase in _read_or_refused(text):
        assert encoder([phrase]).shape == (1, 384)


@pytest.mark.parametrize("argv, message", [
    (["--task", "tracking", "--text", "caf\udce9"], "error: --text 'caf\\udce9' is not valid UTF-8 text"),
    (["--task", "tracking", "--text", "\u200b"], "error: --text '\\u200b' is nothing visible"),
    (["--task", "tracking", "--prompt", "object 1 text \u200b"], "the text prompt '\\u200b' is nothing visible"),
    (["--task", "detection", "--vocabulary", "mug, caf\udce9"], "error: --vocabulary 'mug, caf\\udce9' is not valid"),
    (["--task", "detection", "--vocabulary", "mug, \u200b"], "name 2 '\\u200b' is nothing visible"),
    (["--task", "concept", "--concept", "\ufeff"], "error: --concept '\\ufeff' is nothing visible"),
])
def test_the_command_line_refuses_bad_text_before_any_input_or_model(tmp_path, capsys, argv, message):
    from vision.cli.predict import main

    ckpt = tmp_path / "c.ckpt"
    ckpt.write_bytes(b"not read")
    code = main(["missing.mp4", "--ckpt", str(ckpt), "--out", str(tmp_path / "out"), *argv])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and message in err, err
    assert not (tmp_path / "out").exists()
