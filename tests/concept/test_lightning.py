"""ConceptModule's guard: the heads' inputs are cached per clip, so augmented training clips are refused."""

import pytest

from vision.concept.lightning import ConceptModule
from vision.data.datamodule import MultiViewDataModule
from vision.errors import InputError


@pytest.mark.parametrize("augment, image_size, refused", [(True, 64, True), (False, 64, False), (True, None, False)])
def test_augmented_training_clips_are_refused(augment, image_size, refused):
    datamodule = MultiViewDataModule(train_split="train.json", val_split="val.json", augment=augment,
                                     image_size=image_size)
    if refused:
        with pytest.raises(InputError, match="augment: false"):
            ConceptModule.check_datamodule(datamodule)
    else:
        ConceptModule.check_datamodule(datamodule)
