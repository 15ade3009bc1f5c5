"""Every mechanism behind one registry, :data:`MECHANISMS`.

It maps the payload's ``mechanism`` to its :class:`Mechanism` record.

The commands and calls that serve every mechanism read it: the CLI mounts each ``privmap build
NAME`` from :attr:`Mechanism.command`; ``privmap evaluate``, ``verify`` and ``inspect``, the
notebook API's :func:`~privmap.offline.evaluate` and :func:`~privmap.offline.curve`, and the
evaluation package's sweep ask a record for what they branch on (a view, a report face, how DATA
is read, which figures apply) instead of testing the mechanism's name; no module outside this one
compares a mechanism's name (tests/test_architecture.py checks it). A new mechanism is its slice
here (options, build, view, command), its kind on the device (:data:`privmap.device.kinds.KINDS`)
and one record below each (docs/adding-a-mechanism.md).

The seed-000 table engine below the registry (``table/``) asks the build's options instead
(:attr:`~privmap.offline.mechanisms._seed000.Seed000Options.quantizes`), and views of a bundle
the device's kind (how it looks a row up).
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from types import MappingProxyType, ModuleType

import click

from .._errors import BuildError
from . import exact, funnel, gaussian, max_correlation, nullspace, quantized, ranking, recommender
from .table import MappingView, view_from_payload

__all__ = ["Mechanism", "MECHANISMS", "mechanism_of", "view_of", "quantized_command", "exact_command"]


@dataclass(frozen=True)
class Mechanism:
    """One mechanism as the commands and calls that serve every mechanism see it.

    Parameters
    ----------
    name : str
        The payload's ``mechanism`` (and ``privmap build NAME``).
    command : click.Command, optional
        Its ``privmap build NAME`` command; None for a mode of another one's command (the
        recommender and ranking modes are ``privmap build --utility``).
    view : callable, optional
        ``view(payload) -> MappingView``: what a device does with its bundle, as arrays, measured
        by seed 000's table report (``privmap evaluate``, :func:`privmap.offline.evaluate`);
        None for a mechanism evaluated by its own report.
    report : module, optional
        A real-valued kind's face: ``describe(payload)`` and ``print_description(info)``
        (``inspect``), ``verify_facts(loaded)`` (``verify``), ``evaluate_release(payload, data,
        target, seed=, test_fraction=)`` (``evaluate``); None for a table mechanism.
    categorical : bool
        DATA's public columns are read as categories (tuples matched exactly), not numbers.
    quantizes : bool
        Its alphabet is k-means representatives at a number of clusters K: a curve sweeps K, its
        sweep points get the codebook step, and the baselines at K apply.
    sweeps : bool
        ``privmap curve`` solves program (19) for it at each budget Delta.
    ratings : bool
        Its bundle releases numeric rows a rating service can use: the recommender figures
        (``--recommender``) and the outside audit (``--train``) apply.
    private : bool
        It is designed against a private attribute; max-correlation is not (no prior, no
        leakage: its figures are rho_m^2 and the S* bound, measured beside seed 000's mapping).
    disclosure : bool
        It declares its disclosure I(X;Y) and the groups its table merges (the funnel): its own
        evaluation, description and curve (``privmap curve --mechanism``).
    default_metric : str
        The distortion metric of a curve or a build that names none.
    model_space : str, optional
        How ``inspect`` says where a bundle over a model's space takes its rating columns, with
        ``{}`` for the number of the space's coordinates; None for a bundle without a model.
    """

    name: str
    command: click.Command | None = None
    view: Callable[[dict], MappingView] | None = None
    report: ModuleType | None = None
    categorical: bool = False
    quantizes: bool = False
    sweeps: bool = False
    ratings: bool = False
    private: bool = True
    disclosure: bool = False
    default_metric: str = "l2"
    model_space: str | None = None


#: ``privmap build quantized`` (and ``privmap build DATA``): ``--utility`` chooses the recommender's and
#: ranking's modes, ``--mechanism`` the exact mechanism, each handed in here so that the quantized
#: slice imports none of them (they stand on it).
quantized_command = quantized.command_with(modes=(recommender.MODE, ranking.MODE), alternatives=(exact.ALTERNATIVE,))
#: ``privmap build exact``.
exact_command = exact.command

#: payload ``mechanism`` -> its record, in the order ``privmap build --help`` lists the commands.
MECHANISMS: MappingProxyType[str, Mechanism] = MappingProxyType({m.name: m for m in (
    Mechanism("quantized", quantized_command, view_from_payload, quantizes=True, sweeps=True, ratings=True),
    Mechanism("exact", exact_command, view_from_payload, categorical=True, sweeps=True, default_metric="erasures"),
    Mechanism("recommender", view=recommender.view_of_recommender, ratings=True,
              model_space="folded into {} factor coordinates"),
    Mechanism("ranking", view=ranking.view_of_ranking, ratings=True, model_space="embedded in {} score coordinates"),
    Mechanism("funnel", funnel.command, categorical=True, disclosure=True, default_metric="log-loss"),
    Mechanism("max-correlation", max_correlation.command, categorical=True, private=False,
              default_metric="hamming"),
    Mechanism("gaussian", gaussian.command, report=gaussian),
    Mechanism("nullspace", nullspace.command, report=nullspace),
)})


def mechanism_of(name) -> Mechanism | None:
    """The record of a payload's ``mechanism`` value (:data:`MECHANISMS`).

    None for any other value, of any type.
    """
    return MECHANISMS.get(name) if isinstance(name, str) else None


def view_of(payload: dict) -> MappingView:
    """The evaluation view of ``payload`` (its mechanism's :attr:`Mechanism.view`).

    Raises
    ------
    BuildError
        A mechanism without a table view here (its own report evaluates it).
    """
    record = mechanism_of(payload.get("mechanism"))
    if record is None or record.view is None:
        raise BuildError(f"no evaluation view of a {payload.get('mechanism')!r} bundle here; expected one of "
                         f"{', '.join(name for name, m in MECHANISMS.items() if m.view is not None)}")
    return record.view(payload)
