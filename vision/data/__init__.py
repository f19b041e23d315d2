"""The one data layer: COCO-format splits (+ video, geometry, vocabulary and forensic extensions)."""
