"""Binding a bundle to the device's own configuration (THREATS E1, E2).

The signed payload names the device class it is built for (``device_class``), the private
attribute (``private.name``, ``private.classes``) and the feature schema (``features``: names,
kinds, domains, missing-answer rules, category lists, in cell order). A device configured with a
:class:`Binding` refuses a bundle for another device class (:class:`WrongTargetError`) or whose
private attribute or feature schema differs from its own (:class:`WrongDomainError`), so a
validly signed bundle built for other hardware, another catalogue or another attribute is never
used. The feature schema is compared through :func:`schema_sha256`, a hash the operator can
print (``privmap verify --json``) and provision.
"""
from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol

from ..errors import WrongDomainError, WrongTargetError
from ..format import Feature

__all__ = ["Binding", "schema_sha256", "check_binding"]


def schema_sha256(features: Iterable[Feature]) -> str:
    """Hex sha256 of the feature schema.

    The hash is of canonical JSON of each feature's name, kind, min, max, integer flag,
    category values, missing-answer rule, fill value and missing token, in cell order.

    Parameters
    ----------
    features : sequence of Feature
        ``Bundle.features``.
    """
    rows = [[f.name, f.kind, f.min, f.max, f.integer, list(f.values), f.missing, f.fill, f.missing_token]
            for f in features]
    text = json.dumps(rows, separators=(",", ":"), ensure_ascii=True, allow_nan=False)
    return hashlib.sha256(text.encode("ascii")).hexdigest()


class BoundBundle(Protocol):
    """What :func:`check_binding` reads of a loaded bundle (a kind's bundle class)."""

    @property
    def device_class(self) -> str: ...
    @property
    def private_name(self) -> str | None: ...
    @property
    def classes(self) -> Sequence[str]: ...
    @property
    def features(self) -> Sequence[Feature]: ...


@dataclass(frozen=True)
class Binding:
    """What a device expects of every bundle; ``None`` fields are not checked.

    Attributes
    ----------
    device_class : str | None
        The device's class (hardware/firmware family); a bundle's ``device_class`` must equal it.
    private_name : str | None
        The private attribute the device protects.
    classes : tuple[str, ...] | None
        Its classes, in order.
    schema_sha256 : str | None
        :func:`schema_sha256` of the device's feature schema (64 hex characters).
    """

    device_class: str | None = None
    private_name: str | None = None
    classes: tuple | None = None
    schema_sha256: str | None = None


def check_binding(bundle: BoundBundle, binding: Binding | None) -> None:
    """The check of a bundle against the device's binding.

    Raise :class:`WrongTargetError` (device class) or :class:`WrongDomainError` (private
    attribute, classes, feature schema) if ``bundle`` does not match ``binding``.
    """
    if binding is None:
        return
    if not isinstance(binding, Binding):
        raise TypeError("binding must be a privmap.device.Binding")
    if binding.device_class is not None and bundle.device_class != binding.device_class:
        raise WrongTargetError("bundle is built for another device class than this device's")
    if binding.private_name is not None and bundle.private_name != binding.private_name:
        raise WrongDomainError("bundle protects another private attribute than this device's")
    if binding.classes is not None and tuple(bundle.classes) != tuple(binding.classes):
        raise WrongDomainError("bundle's private classes differ from this device's")
    if binding.schema_sha256 is not None and schema_sha256(bundle.features) != binding.schema_sha256:
        raise WrongDomainError("bundle's feature schema (catalogue, scale, categories) differs from this device's")
