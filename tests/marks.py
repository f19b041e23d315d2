"""Marks shared by the test files: :data:`GPU` for tests that need a CUDA GPU (``pytest -m gpu``; skipped without
one, deselected by ``make test-fast``)."""

from __future__ import annotations

import pytest
import torch

GPU = (pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU (pytest -m gpu)"))
