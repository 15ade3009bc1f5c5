"""The recommendation-grade mode: program (19) over users' latent taste, releasing full rows of
predicted ratings (:mod:`._build`; the factor model in :mod:`._factors`)."""
from ._build import FACTOR_PREFIX, Prepared, RecommenderOptions, build_prepared, factor_options, prepare
from ._factors import CANDIDATE_REGS, DEFAULT_RANK, FactorModel, choose_reg, fit_factors

__all__ = ["RecommenderOptions", "Prepared", "prepare", "build_prepared", "factor_options", "FACTOR_PREFIX", "FactorModel",
           "fit_factors", "choose_reg", "DEFAULT_RANK", "CANDIDATE_REGS"]
