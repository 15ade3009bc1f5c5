"""The bundle kinds: per mechanism, its body's parse and its release, dispatched by a registry.

The layer above randomness (releases draw from it) and below the load workflow, which hands each
header-checked payload to :func:`load_body`. One public module per kind:

- :mod:`.table`: ``quantized`` and ``exact`` (nearest representative or equal tuple, the integer
  table sampler) and the :class:`Bundle` every table kind releases through;
- :mod:`.funnel` (seed 003), :mod:`.max_correlation` (``max-correlation``, seed 002),
  :mod:`.recommender` (ratings folded into a factor space) and :mod:`.ranking` (which items were
  rated, embedded in a score space): table kinds with bodies of their own;
- :mod:`.nullspace` (seed 001) and :mod:`.gaussian` (seed 004): real-valued kinds.

Private modules: ``_registry`` (mechanism name -> its ``Kind``: its parse and its release; the
dispatch), ``_lookup`` (parsing a
row and finding its input representative), ``_leakage`` (the leakage a table gives on its prior,
recomputed), ``_real`` (what the real-valued kinds share).
"""
from __future__ import annotations

from ._leakage import table_leakage_bits
from ._lookup import parse_row
from ._registry import KINDS, TABLE_KINDS, TableKind, check_declared_metrics, kind_of, load_body, load_real_body, parse_table_body
from .gaussian import GaussianBundle
from .nullspace import NullspaceBundle
from .table import Bundle, recompute_leakage_bits, release_index

__all__ = [
    # the registry and the dispatch
    "TableKind", "KINDS", "TABLE_KINDS", "kind_of", "load_body", "parse_table_body",
    "load_real_body",
    # the bundle objects
    "Bundle", "NullspaceBundle", "GaussianBundle",
    # releases
    "release_index",
    # declared figures
    "check_declared_metrics", "recompute_leakage_bits", "table_leakage_bits",
    # rows
    "parse_row"]
