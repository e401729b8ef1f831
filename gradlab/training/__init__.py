"""A tiny training run (`gradlab train`): the student's LM, or gradlab's
reference LM with the student's parts swapped in, trained on a toy task made
in code (copy or reversal of a short sequence), next to the same run with
gradlab's reference parts. The result is a KindResult with one record
("train"), so the CLI, --json, the HTML report and notebooks show it as any
check:

    import gradlab.training
    result = gradlab.training.train(impl="my_attention.py", steps=200, seed=0)
    result                                  # in a notebook: the report inline
"""
from gradlab.training.run import train

__all__ = ["train"]
