"""The one shape every mechanism's build returns.

A build turns an in-memory dataset and the mechanism's options into an unsigned payload (the
bundle stage signs it) and the figures its command reports. Everything a caller needs without
knowing the mechanism is here; what only one mechanism has (the solved table, the funnel's
merges, the Gaussian noise) stays in :attr:`Result.detail`.
"""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Result:
    """A mechanism's build.

    Attributes
    ----------
    mechanism : str
        The payload's ``mechanism`` (``"quantized"``, ``"exact"``, ``"funnel"``, ...).
    payload : dict
        The unsigned payload, ready for :func:`privmap.offline.bundle.encode_payload` and signing;
        its ``metrics`` map holds the declared figures.
    detail : object
        The mechanism's own record of the build (its solved table, model, timings), for reports
        and tests; never written into the bundle.
    """

    mechanism: str
    payload: dict
    detail: object = field(default=None, compare=False, repr=False)

    @property
    def metrics(self) -> dict:
        """The declared figures (``payload["metrics"]``): leakage in bits, distortion, n, ..."""
        return self.payload.get("metrics", {})
