"""The statistics of the evaluation, kept in `kgrag.stats` (the method packages use them
too); this module re-exports them for eval's modules and older scripts."""

from kgrag.stats import (
    ConfidenceInterval,
    McNemarResult,
    PairedBootstrapResult,
    bootstrap_ci,
    length_controlled,
    mcnemar,
    mcnemar_counts,
    paired_bootstrap,
)

__all__ = [
    "ConfidenceInterval",
    "McNemarResult",
    "PairedBootstrapResult",
    "bootstrap_ci",
    "length_controlled",
    "mcnemar",
    "mcnemar_counts",
    "paired_bootstrap",
]
