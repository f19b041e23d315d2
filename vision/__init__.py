"""vision: geometry-grounded tracking (G2TAM), open-vocabulary detection that rejects the unknown (OOVDet),
and AI-generated-video forensics, on one VGGT-style geometry backbone and one COCO-format data layer."""

__version__ = "0.1.0"
