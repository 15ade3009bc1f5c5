"""Seed 003: the greedy privacy funnel and its bundle.

Private modules: ``_model`` (the greedy merge of symbols under a disclosure budget), ``_build``
(its table as a signed-bundle payload). The public names are re-exported by
:mod:`privmap.offline.mechanisms`.
"""
