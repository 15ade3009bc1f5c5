"""A device that remembers: installed bundles, version and time floors, permanent releases.

Private modules: ``_state`` (:class:`DeviceState`: atomic installs, rollback and equivocation
refused, one writer at a time), ``_counter`` (the monotonic-counter interface against replay of an
old state file). The public names are re-exported by :mod:`privmap.device`.
"""
