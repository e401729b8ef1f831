"""The numerical engine: finite differences, perturb-evaluate-restore, influence probes."""
