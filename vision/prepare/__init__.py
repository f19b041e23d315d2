"""Dataset converters and builders, each a module with a ``main(argv=None) -> int`` run as ``vision prepare <name>``
(the list and the skeleton every ``main`` shares are in :mod:`vision.prepare.converter`):

- :mod:`vision.prepare.aigv`: ``vision prepare aigv``, the built-in AIGV forensics benchmark (its learned generators
  in :mod:`vision.prepare.aigv_generators`, the other generator families in :mod:`vision.prepare.aigv_families`);
- :mod:`vision.prepare.genvideo`: ``vision prepare genvideo``, GenVideo-style folders -> splits;
- :mod:`vision.prepare.oov_coco`: ``vision prepare oov-coco``, OOV-COCO / OOV-VOC-style open-set splits from a COCO
  annotation file;
- :mod:`vision.prepare.vos`: ``vision prepare vos``, DAVIS 2017 / YouTube-VOS / MOSE folders -> a COCO-video split;
- :mod:`vision.prepare.colmap`: ``vision prepare colmap``, a COLMAP text model -> an unordered multi-view split with
  cameras (first view = world frame);
- :mod:`vision.prepare.co3d`: ``vision prepare co3d``, a CO3Dv2 category -> one unordered multi-view video per
  sequence with cameras (view 0 = world frame), optional depth and the object's mask track;
- :mod:`vision.prepare.ytvis`, :mod:`vision.prepare.burst`, :mod:`vision.prepare.saco`: ``vision prepare ytvis``
  (YouTube-VIS 2019 / 2021, LV-VIS), ``vision prepare burst`` (BURST / TAO) and ``vision prepare saco`` (SA-Co)
  -> COCO-video splits whose categories are phrases and whose videos list the phrases queried on them (what the
  ``concept`` task reads); what they share is in :mod:`vision.prepare.instances`;
- :mod:`vision.prepare.teacher`, :mod:`vision.prepare.real_depth`: ``vision prepare real-detection`` and
  ``vision prepare real-depth``, real frames labelled by a teacher detector / a monocular depth teacher;
- :mod:`vision.prepare.opencv_samples`: ``vision prepare opencv-samples``, OpenCV's real sample videos.

The old console scripts (``vision-prepare-<name>``, ``vision-fetch-opencv-samples``) run the same ``main``.
"""
