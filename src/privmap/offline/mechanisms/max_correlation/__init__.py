"""Seed 002: the marginal-only max-correlation design (P_X alone) and its bundle.

Private modules: ``_design`` (the design and rho_m^2), ``_build`` (its table as a payload). The
public names are re-exported by :mod:`privmap.offline.mechanisms`.
"""
