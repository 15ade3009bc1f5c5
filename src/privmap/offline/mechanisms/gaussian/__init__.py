"""Seeds 001 and 004: the mechanisms on real-valued rows and their payloads.

Private modules: ``_nullspace`` (seed 001's null-space cleaning), ``_gaussian`` (seed 004's greedy
Gaussian noise), ``_build`` (their unsigned payloads). The public names are re-exported by
:mod:`privmap.offline.mechanisms`.
"""
