"""Each task's evaluation entry (one torch-free module per task, named by the registry: ``Task.evaluation``): its scorer, options, flags, split check and results validator."""
