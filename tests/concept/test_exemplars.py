"""vision/concept/exemplars.py: an exemplar written as text, and the checks made before any model runs."""

from __future__ import annotations

import pytest

from vision.concept.exemplars import ConceptPrompt, check_exemplars, parse_exemplar
from vision.errors import InputError


def test_an_exemplar_reads_view_box_and_sign():
    assert parse_exemplar(" 3, 1.5,2,10,20 , NEG") == (3, [1.5, 2.0, 10.0, 20.0], False)
    assert parse_exemplar("0,1,2,3,4,pos") == (0, [1.0, 2.0, 3.0, 4.0], True)


@pytest.mark.parametrize("text, message", [
    ("1,2,3,4", "must be VIEW,x0,y0,x1,y1"), ("-1,0,0,5,5", "VIEW must be a whole number"),
    ("0,0,0,nan,5", "finite"), ("0,5,0,1,5", "x0 < x1"), ("0,1,2,3,4,maybe", "'neg'")])
def test_a_malformed_exemplar_is_one_input_error_naming_it(text, message):
    with pytest.raises(InputError, match=message):
        parse_exemplar(text, name="--exemplar")


def test_an_exemplar_off_the_input_is_refused():
    prompts = [ConceptPrompt("mug", [(2, [0.0, 0.0, 5.0, 5.0], True)])]
    check_exemplars(prompts, width=10, height=10, views=3)
    with pytest.raises(InputError):
        check_exemplars(prompts, width=10, height=10, views=2)  # view 2 of a 2-view input
    with pytest.raises(InputError):
        check_exemplars([ConceptPrompt("mug", [(0, [0.0, 0.0, 50.0, 5.0], True)])], width=10, height=10, views=1)
