"""Concept prompts: every instance of a noun phrase (or of exemplar boxes) found, segmented and tracked with
persistent ids across a video or an unordered view set, on the shared geometry backbone.

The detector (:mod:`vision.detection`) proposes the phrase's instances per view, the tracker (:mod:`vision.tracking`)
decodes their masks and gives each view's 3D point map, the instances are associated in 3D
(:mod:`vision.concept.association`), and a presence head decides per view whether the phrase is there at all
(:mod:`vision.concept.heads`). :class:`vision.concept.predictor.ConceptPredictor` is the user's entry point.
"""
