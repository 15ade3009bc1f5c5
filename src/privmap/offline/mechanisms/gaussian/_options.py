"""The gaussian options: what decides a gaussian bundle's bytes besides the data and the key."""
from __future__ import annotations

from dataclasses import dataclass

from .._header import HeaderOptions, check_header
from .._real_columns import check_target_groups
from ._model import check_greedy

__all__ = ["GaussianOptions"]


@dataclass(frozen=True, kw_only=True)
class GaussianOptions(HeaderOptions):
    """The greedy's columns and parameters (seed 004).

    Attributes
    ----------
    private, utility : tuple of str
        The private columns X_p and the utility columns X_u, withheld from the release (neither
        empty, none in both); every other column of the CSV is released.
    delta : float >= 0
        Utility-loss cap I(X_u;X) - I(X_u;Y) in nats.
    gamma : float >= 0
        Least ratio of privacy gain to utility loss.
    fisher : bool
        Measure utility by the Fisher information (one utility column).
    dtheta, stop, saturation : float > 0
        The greedy's first variance increment, the increment it stops below, and the privacy gain
        below which a coordinate counts as saturated.

    Raises
    ------
    BuildError
        At construction, for any of the above out of range.
    """

    private: tuple[str, ...]
    utility: tuple[str, ...]
    delta: float
    gamma: float = 0.0
    fisher: bool = False
    dtheta: float = 1.0
    stop: float = 1e-3
    saturation: float = 1e-6

    def __post_init__(self):
        check_target_groups(self.private, self.utility)
        check_greedy(self.delta, self.gamma, dtheta=self.dtheta, stop=self.stop, saturation=self.saturation)
        check_header(self)
