"""Stage 3 of a build: the mechanisms, each turning a dataset into an unsigned payload.

Private modules: ``_pipeline`` (the quantized and exact MI-optimal mappings of seed 000 and the
:func:`build` entry point), ``_erasure`` (the exact mechanism's alphabet of tuples and erasures);
for real-valued rows (issue 16) ``_nullspace`` (seed 001), ``_gaussian`` (seed 004) and
``_realvalued`` (their payloads).
"""
from ._pipeline import MECHANISMS, Build, BuildOptions, build

# issue 16: real-valued kinds (seed 001 null-space cleaning, seed 004 greedy Gaussian noise)
from ._gaussian import GaussianModel, GreedyResult, fisher_information, greedy_noise  # noqa: E402
from ._nullspace import NullspaceDirections, clean, fit_linear, nullspace_directions  # noqa: E402
from ._realvalued import HeaderOptions, RealBuild, build_gaussian, build_nullspace  # noqa: E402

__all__ = ["build", "Build", "BuildOptions", "MECHANISMS",
           "build_nullspace", "build_gaussian", "RealBuild", "HeaderOptions",
           "GaussianModel", "GreedyResult", "greedy_noise", "fisher_information",
           "NullspaceDirections", "nullspace_directions", "clean", "fit_linear"]
