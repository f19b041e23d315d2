"""The FSDP configs of the base and VGGT-1B backbones: the strategy they describe is built on the CPU (no run, no
GPU) and wraps, and checkpoints the activations of, the transformer blocks the model is made of."""

from pathlib import Path
from typing import Optional, Union

import pytest
from jsonargparse import ArgumentParser
from lightning.pytorch.strategies import FSDPStrategy, Strategy

from vision.geometry.layers import Block
from vision.geometry.task import GeometryConfig, build_model
from vision.training.compose import compose

CONFIGS = Path(__file__).resolve().parents[2] / "configs" / "geometry"


@pytest.mark.parametrize("name, size", [("base_fsdp.yaml", "base"), ("vggt_1b_fsdp.yaml", "vggt_1b")])
def test_fsdp_config_builds_its_strategy(name, size):
    config = compose(CONFIGS / name)
    parser = ArgumentParser()
    parser.add_argument("--strategy", type=Optional[Union[str, Strategy]])
    strategy = parser.instantiate_classes(parser.parse_object({"strategy": config["trainer"]["strategy"]})).strategy
    assert isinstance(strategy, FSDPStrategy)
    assert strategy.kwargs["auto_wrap_policy"]._module_classes == {Block}
    assert strategy._activation_checkpointing_kwargs["auto_wrap_policy"]._module_classes == {Block}
    assert strategy._state_dict_type == "full"
    assert config["trainer"]["precision"] == "bf16-mixed"
    model_config = GeometryConfig.from_value(config["model"]["init_args"]["config"])
    assert model_config.size == size and not model_config.use_checkpoint


def test_the_wrapped_block_is_the_models_transformer_block():
    model = build_model(GeometryConfig(size="tiny", image_size=32))
    blocks = [m for m in model.modules() if isinstance(m, Block)]
    aggregator = model.backbone.aggregator
    assert all(isinstance(b, Block) for b in [*aggregator.frame_blocks, *aggregator.global_blocks])
    assert len(blocks) > 2 * len(aggregator.frame_blocks)  # the camera head's trunk too
