"""AIGV forensics: forensic tools (feature extractors), a learned detector, an evidence graph and a report.

Layout: ``tools/`` (one module per forensic tool, common interface in ``tools/base.py``), ``model.py`` (detector
over tool features, calibrated), ``task.py`` (the one definition: ``ForensicsConfig``, ``build_model``, ``load``),
``features.py`` (clips and cached tool features), ``lightning.py`` (training, validation, test, prediction),
``evidence.py`` (planning, evidence graph, verdict), ``report.py`` (JSON + HTML), ``predictor.py``
(:class:`ForensicsPredictor`).
"""
