"""Procedural scenes ray-cast with open3d and written as COCO-format splits: the embedded default data.

- :mod:`vision.synthetic.objects`: the object library (categories, colours, procedural textures, meshes);
- :mod:`vision.synthetic.photos`: the bank of real photographs used as surface textures (``textures="photo"``);
- :mod:`vision.synthetic.render`: scene layout and ray casting (RGB, depth, instance ids);
- :mod:`vision.synthetic.scenes`: vocabulary, seeds, scene sampling and the split writer (``vision-synthetic``);
- :mod:`vision.synthetic.detection`: the OOV detection splits (``python -m vision.synthetic.detection``);
- :mod:`vision.synthetic.concept`: the concept-prompt splits (``vision-synthetic --concept``): several instances of
  a phrase, near-category distractors, entries, exits and long occlusions.

This package renders; it writes its splits through the data layer (:mod:`vision.data`) and imports no task.
"""
