"""Stage 1 of a build: read labelled rows, measure distances, quantize, estimate the prior.

Private modules: ``_dataset`` (CSV reading and validation), ``_partitioned`` (CSV and Parquet files
cut into partitions, each read and validated alone), ``_distortion`` (metrics and the device's
nearest-representative rule), ``_blas_nearest`` (the same rule, fast, for l2), ``_quantize``
(k-means into domain-valid representatives), ``_prior`` (p(a, c) from counts), ``_schema``
(declared feature domains and missing-answer spellings, completed by inference), ``_frames`` (a
table in memory as the CSV every reader reads), ``_numeric`` (named numeric columns of a CSV, for
the real-valued mechanisms), ``_synthetic`` (seeded latent-factor ratings with a private attribute
and blanks missing not at random, :func:`synthetic_ratings`, or chunk by chunk,
:func:`synthetic_rating_chunks`), ``_known_joint`` (a seeded population of known joint distribution
p(a, x), where the leakage any table leaks to new users is exact, :func:`known_joint`).
"""
from ._blas_nearest import nearest, nearest_l2
from ._dataset import (
    MIN_ROWS,
    Dataset,
    check_classes,
    check_unique,
    column_indexes,
    data_rows,
    joint_classes,
    load_dataset,
    read_csv,
)
from ._distortion import METRICS, assigned_distance, block_shape, pairwise
from ._frames import csv_source
from ._known_joint import known_joint
from ._numeric import read_numeric_columns
from ._partitioned import (
    Partition,
    Source,
    describe_partition,
    file_sha256,
    open_source,
    read_partition,
    row_keys,
    source_sha256,
)
from ._prior import joint_prior, posterior_prior, prior_from_counts
from ._quantize import Quantization, domain_points, kmeans, observed_domain, quantize
from ._schema import (
    Column,
    Declaration,
    Declared,
    declare,
    parse_domains,
    read_schema_file,
    resolve,
    schema_json,
)
from ._synthetic import synthetic_rating_chunks, synthetic_ratings

__all__ = ["Dataset", "load_dataset", "MIN_ROWS", "check_classes", "joint_classes", "check_unique", "column_indexes",
           "data_rows", "read_csv",
           "csv_source", "read_numeric_columns",
           "open_source", "Source", "Partition", "read_partition", "describe_partition", "file_sha256", "source_sha256",
           "row_keys",
           "posterior_prior", "prior_from_counts", "joint_prior",
           "METRICS", "nearest", "nearest_l2", "pairwise", "assigned_distance", "block_shape",
           "Quantization", "quantize", "observed_domain", "domain_points", "kmeans",
           "Column", "Declaration", "Declared", "declare", "parse_domains", "read_schema_file", "resolve", "schema_json",
           "synthetic_ratings", "synthetic_rating_chunks", "known_joint"]
