"""Evaluation: the runner, metrics, statistics and reports.

Question loading and answer normalisation sit below the methods (`kgrag.datasets`,
`kgrag.normalize`, `kgrag.parsing`). Scoring lives here and never inside a method:
methods return raw answer text, and `eval` turns it into option labels, EM/F1, ROUGE-L or
G-Eval scores and significance tests.

>>> from kgrag.datasets import load_dataset
>>> from eval.metrics import score_answer
>>> score_answer("The Cat", ["cat"]).em
1.0
"""
