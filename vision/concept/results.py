"""Concept model outputs -> the task's COCO-video results (the records of :mod:`vision.concept.records`), which
``vision.evaluation.evaluate(split, results, "concept")`` scores."""

from __future__ import annotations

from vision.concept.inference import concept_records

__all__ = ["to_results", "concept_results"]

#: one state's results: :func:`vision.concept.inference.concept_records`
concept_results = concept_records

#: model outputs -> the task's results (the registry's fixed name, vision.tasks.PARTS)
to_results = concept_results
