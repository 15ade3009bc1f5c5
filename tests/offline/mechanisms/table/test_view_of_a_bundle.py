"""The evaluation view of a verified device bundle (:func:`view_from_bundle`): a view measures
what a release tells of the bundle's private attribute, so a bundle designed without one is refused."""
import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from privmap.device import Keyring, load_bundle
from privmap.offline import BuildError
from privmap.offline.bundle._write import encode_payload, sign_bundle
from privmap.offline.mechanisms import funnel, max_correlation
from privmap.offline.mechanisms.table import view_from_bundle

KEY = Ed25519PrivateKey.from_private_bytes(bytes(range(32)))
NOW = 1_700_000_000


def _loaded(payload):
    return load_bundle(sign_bundle(encode_payload(payload), KEY), Keyring([KEY.public_key()]), now=NOW + 1)


def test_a_bundle_with_a_private_attribute_gives_its_view(toy_csv):
    payload = funnel.build(toy_csv(400, 0), funnel.FunnelOptions(private="secret", disclosure_fraction=0.5,
                                                                 issued_at=NOW)).payload
    view = view_from_bundle(_loaded(payload))
    assert view.private_name == "secret" and view.classes == ("no", "yes")


def test_a_bundle_without_a_private_attribute_is_refused(toy_csv):
    payload = max_correlation.build(toy_csv(400, 0), max_correlation.MaxCorrelationOptions(
        delta=0.2, public=("colour",), issued_at=NOW, starts=2)).payload
    with pytest.raises(BuildError, match="no private attribute"):
        view_from_bundle(_loaded(payload))
