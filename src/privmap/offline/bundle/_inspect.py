"""Reading a bundle on the operator's side: verified load, or an unverified look inside.

``read_unverified`` is for ``privmap inspect`` without a trusted key: it applies
the device's size cap, envelope and payload limits and closed-schema checks,
but the signature is not checked, so nothing it returns may be trusted. The
device itself never does this (signature before parse).
"""
from __future__ import annotations

from privmap.device import Limits
from privmap.device.errors import BundleTooLargeError
from privmap.device.files import read_regular
from privmap.device.format import decode_envelope, decode_payload, parse_header
from privmap.device.kinds import kind_of, parse_table_body
from privmap.device.trust import envelope_signatures


def read_bytes(path, limits: Limits = Limits()) -> bytes:
    """Read at most ``limits.max_bundle_bytes + 1`` bytes of ``path`` once.

    Raises
    ------
    BundleTooLargeError
        The file is larger than the cap.
    OSError
        The file cannot be read (:class:`~privmap.device.files.NotRegularFile`: a FIFO, device
        or directory, refused before anything is read).
    """
    data = read_regular(path, limits.max_bundle_bytes)
    if len(data) > limits.max_bundle_bytes:
        raise BundleTooLargeError(f"bundle is larger than {limits.max_bundle_bytes} bytes")
    return data


def listed_signatures(data: bytes, limits: Limits = Limits()) -> tuple[int, list[str]]:
    """The envelope format (1 or 2) and the hex key ids its signatures name, in envelope order.

    WITHOUT checking any signature. Raises :class:`BundleError` for a malformed envelope.
    """
    fmt, signatures, _ = envelope_signatures(decode_envelope(data, limits))
    return fmt, [s.key_id.hex() for s in signatures]


def read_unverified(data: bytes, limits: Limits = Limits()) -> tuple[dict, str]:
    """Decode and schema-check a bundle's payload WITHOUT checking its signature.

    Reads format-1 (one signature) and format-2 (k of n) envelopes alike.

    Returns
    -------
    (payload, key_id_hex)
        The decoded payload map and the key id the envelope names first (format 2: the first
        listed signature; :func:`listed_signatures` gives them all).

    Raises
    ------
    BundleError
        Any format problem the device would also refuse (except the signature).
    """
    _, signatures, payload_bytes = envelope_signatures(decode_envelope(data, limits))
    payload = decode_payload(payload_bytes, limits)
    version, issued_at, expires = parse_header(payload)
    kind = kind_of(payload["mechanism"])
    if kind is not None and not kind.table:  # nullspace / gaussian
        from privmap.device.kinds import load_real_body
        load_real_body(payload, limits, version=version, issued_at=issued_at, expires=expires,
                       sha256="", key_id="", data=b"")
    else:
        parse_table_body(payload, limits)
    return payload, signatures[0].key_id.hex()


def payload_table(payload: dict):
    """A table payload's integer table as probabilities q(c^|c) = weight / 2^bits.

    A ``scipy.sparse.csr_matrix`` of shape (K_in, K_out), rows in the payload's input order.
    """
    import numpy as np
    import scipy.sparse as sp
    table = payload["table"]
    indptr = np.concatenate([[0], np.cumsum([len(index) for index in table["index"]])])
    columns = np.array([j for index in table["index"] for j in index], dtype=np.int64)
    weights = np.array([w for weight in table["weight"] for w in weight], dtype=float)
    return sp.csr_matrix((weights / float(1 << int(table["bits"])), columns, indptr),
                         shape=(len(payload["inputs"]), len(payload["outputs"])))


def payload_output_leakage(payload: dict) -> tuple[float | None, str]:
    """The per-output leakage epsilon (bits) of a table payload and where the figure comes from.

    epsilon = max over outputs c_hat of positive mass and classes a of |log2 p(a | c_hat) - log2 p(a)|
    on the payload's prior p(a, c) (the training prior, to the payload's 12 significant digits),
    under the integer table ``weight / 2^bits``.

    Returns
    -------
    (value, note)
        ``value`` is the figure the build declared (``metrics.max_output_leakage_bits``) when
        present, else the one computed here from the table and the prior; None when it cannot be
        given as a number: the payload has no prior p(a, c) (max-correlation, real-valued kinds),
        or the figure is infinite (an output of positive mass rules a class out). ``note`` says
        which case applies.
    """
    declared = payload.get("metrics", {}).get("max_output_leakage_bits")
    if declared is not None:
        return float(declared), "declared by the build (integer table, training prior)"
    if "table" not in payload or "prior" not in payload:
        return None, "not computable: the payload carries no table with a prior p(a, c)"
    import numpy as np

    from .._information import max_output_leakage_bits, ruled_out
    q = payload_table(payload)
    p_ac = np.asarray(payload["prior"], dtype=float)
    p_ac = p_ac / p_ac.sum()
    where = ruled_out(p_ac, q)
    if where is None:
        return (max_output_leakage_bits(p_ac, q),
                "computed from the integer table and the payload's prior (the bundle does not declare it)")
    output, a = where
    return None, (f"unbounded: output {output} has positive mass and p(a|c^) = 0 for class "
                  f"{payload['private']['classes'][a]!r} (releasing it rules that class out)")
