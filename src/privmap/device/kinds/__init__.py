"""The release paths of the other seeds' mechanisms, beside seed 000's table lookup.

Private modules: ``_funnel`` (seed 003's funnel table checks), ``_maxcorr`` (seed 002's marginal
P_X and rho_m^2), ``_realvalued`` (shared parsing of real-valued rows and bundles), ``_nullspace``
(seed 001), ``_gaussian`` (seed 004), ``_real_kinds`` (choosing the real-valued kind of a payload).
The public names are re-exported by :mod:`privmap.device`.
"""
