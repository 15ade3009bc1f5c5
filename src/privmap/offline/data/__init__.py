"""Stage 1 of a build: read labelled rows, measure distances, quantize, estimate the prior.

Private modules: ``_dataset`` (CSV reading and validation), ``_distortion`` (metrics and the
device's nearest-representative rule), ``_blas_nearest`` (the same rule, fast, for l2), ``_quantize`` (k-means into domain-valid
representatives), ``_prior`` (p(a, c) from counts), ``_schema`` (declared feature domains and
missing-answer spellings, completed by inference), ``_frames`` (a table in memory as the CSV every
reader reads), ``_synthetic`` (seeded latent-factor ratings with a
private attribute and blanks missing not at random, :func:`synthetic_ratings`).
"""
from ._dataset import Dataset, load_dataset
from ._distortion import METRICS, nearest, pairwise
from ._frames import csv_source, is_table
from ._partitioned import Partition, Source, open_source
from ._prior import joint_prior, posterior_prior, prior_from_counts
from ._quantize import Quantization, domain_points, kmeans, observed_domain, quantize
from ._schema import (
           Column,
           Declaration,
           Declared,
           declare,
           read_schema_file,
           resolve,
           schema_json,
)
from ._synthetic import SyntheticRatings, synthetic_ratings

__all__ = ["Dataset", "load_dataset", "csv_source", "is_table", "open_source", "Source", "Partition", "posterior_prior", "prior_from_counts", "METRICS", "nearest", "pairwise", "joint_prior", "Quantization", "quantize", "observed_domain", "domain_points", "kmeans",
           "Column", "Declaration", "Declared", "declare", "read_schema_file", "resolve", "schema_json",
           "SyntheticRatings", "synthetic_ratings"]
