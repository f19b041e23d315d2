"""The model card of a model folder (its ``README.md``): the task as the registry (:mod:`vision.tasks`) describes it,
the config, what it was trained on and the validation figures, all read from the folder (nothing typed in).
Every writer of a folder passes it to :func:`vision.model_folder.write_model_folder` (``card=model_card``).
"""

from __future__ import annotations

import json

from vision.model_folder import ModelFolder
from vision.tasks import get_task

__all__ = ["model_card"]


def model_card(folder: ModelFolder) -> str:
    """The model card (Markdown) of ``folder``: the task, the config, what it was trained on and the validation
    figures, all read from ``folder`` (nothing typed in); what was not recorded is said so."""
    task = get_task(folder.task)
    training = folder.training
    lines = [f"# {folder.task} model", "", f"{task.summary[0].upper()}{task.summary[1:]}.", "",
             "## Use", "", "```python", f"from {task.module} import load", "",
             "model, config = load(\"path/to/this/folder\")  # weights from model.safetensors, never unpickled",
             "```", ""]
    if task.has("predictor"):
        usage = task.get("predict_usage", "")
        needs = f" {usage}" if usage else ""
        lines += [f"or `vision-predict --task {folder.task} --ckpt path/to/this/folder{needs} INPUT`.", ""]
    lines += ["## Model config", "", "| field | value |", "|---|---|"]
    lines += [f"| {k} | `{json.dumps(v)}` |" for k, v in folder.config.items()]
    sizes = {p: sum(t.numel() for t in w.values()) for p, w in folder.weights.items()}
    lines += ["", "Weights: " + ", ".join(f"`{'model' if p == 'model' else p}.safetensors` {n:,} values"
                                          for p, n in sizes.items()) + ".", ""]
    names = folder.hyper_parameters.get("class_names")
    if isinstance(names, list):
        lines += ["Training vocabulary (the default vocabulary): " + ", ".join(f"`{n}`" for n in names) + ".", ""]
    lines += ["## Training", ""]
    if not training:
        lines += ["Not recorded: this folder was saved from a model, not exported from a training checkpoint.", ""]
    else:
        facts = [f"{k.replace('_', ' ')}: `{training[k]}`" for k in ("checkpoint", "module", "epoch", "global_step")
                 if k in training]
        lines += [f"- {fact}" for fact in facts]
        data = training.get("data") or {}
        if data:
            lines += ["- data: " + ", ".join(f"{k}=`{json.dumps(v)}`" for k, v in data.items())]
        trained_with = {k: v for k, v in folder.hyper_parameters.items()
                        if k not in ("_class_path", "_instantiator", "class_names", "category_ids")}
        if trained_with:
            lines += ["- training hyper-parameters: "
                      + ", ".join(f"{k}=`{json.dumps(v)}`" for k, v in trained_with.items())]
        fit = training.get("light_points")
        if fit:
            lines += ["- light point maps fitted after training (`vision-fit-light-points`): "
                      + ", ".join(f"{k}=`{json.dumps(v)}`" for k, v in fit.items())
                      + "; the validation figures below were logged by the training run, with the point head"]
        lines += [""]
    lines += ["## Validation", ""]
    validation = training.get("validation") or {}
    if "score" in validation:
        lines += [f"The checkpoint's monitored figure: `{validation['monitor']}` = {validation['score']:.4g}.", ""]
    if validation.get("metrics"):
        lines += [f"Logged at epoch {training.get('epoch')} (`{validation.get('source')}`):", "",
                  "| metric | value |", "|---|---|"]
        lines += [f"| {k} | {v:.4g} |" for k, v in validation["metrics"].items()]
        lines += [""]
    if not validation:
        lines += ["No validation figures were recorded in the checkpoint or found in its run folder.", ""]
    return "\n".join(lines)
