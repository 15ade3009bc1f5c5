"""What a bundle is on the wire: msgpack decoding, the pre-scan, work limits, the schema, the bundle.

Private modules: ``_limits`` (format constants and work caps), ``_prescan`` (a header-only walk of
the payload bytes before decoding), ``_codec`` (strict msgpack decoding), ``_schema`` (every field
of the payload validated), ``_leakage`` (declared figures recomputed from the integer table),
``_bundle`` (:func:`load_bundle`: verify, decode, validate, into a :class:`Bundle`). The public
names are re-exported by :mod:`privmap.device`.
"""
