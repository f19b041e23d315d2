"""Dataset converters and builders, each a module with a ``main(argv=None) -> int`` installed as a console script:

- :mod:`vision.prepare.aigv`: ``vision-prepare-aigv`` (``datasets/prepare_aigv.py``), the built-in AIGV forensics
  benchmark (its learned generators in :mod:`vision.prepare.aigv_generators`, the other generator families in
  :mod:`vision.prepare.aigv_families`);
- :mod:`vision.prepare.genvideo`: ``vision-prepare-genvideo`` (``datasets/prepare_genvideo.py``), GenVideo-style
  folders -> splits;
- :mod:`vision.prepare.oov_coco`: ``vision-prepare-oov-coco`` (``datasets/prepare_oov_coco.py``), OOV-COCO /
  OOV-VOC-style open-set splits from a COCO annotation file;
- :mod:`vision.prepare.vos`: ``vision-prepare-vos`` (``datasets/prepare_vos.py``), DAVIS 2017 / YouTube-VOS / MOSE
  folders -> a COCO-video split;
- :mod:`vision.prepare.colmap`: ``vision-prepare-colmap`` (``datasets/prepare_colmap.py``), a COLMAP text model ->
  an unordered multi-view split with cameras (first view = world frame);
- :mod:`vision.prepare.co3d`: ``vision-prepare-co3d`` (``datasets/prepare_co3d.py``), a CO3Dv2 category -> one
  unordered multi-view video per sequence with cameras (view 0 = world frame), optional depth and the object's mask
  track;
- :mod:`vision.prepare.ytvis`, :mod:`vision.prepare.burst`, :mod:`vision.prepare.saco`: ``vision-prepare-ytvis``
  (YouTube-VIS 2019 / 2021, LV-VIS), ``vision-prepare-burst`` (BURST / TAO) and ``vision-prepare-saco`` (SA-Co)
  -> COCO-video splits whose categories are phrases and whose videos list the phrases queried on them (what the
  ``concept`` task reads); what they share is in :mod:`vision.prepare.instances`.
"""
