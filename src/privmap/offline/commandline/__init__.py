"""The kit every ``privmap`` command is written with.

- failures and output: :class:`CommandGroup` (one ``error:`` line for every way a command can fail,
  stdout reserved for the command's output, quiet closed pipes), :func:`guard` (typed errors as
  one-line failures), :class:`Fail`, :func:`emit` (``--json``: one JSON object on stdout);
- the options every build shares: :func:`bundle_options` (``--key``, ``--passphrase-file``,
  ``--out``), :func:`header_options` (the bundle header, as one ``header`` mapping),
  :func:`json_option`, :func:`data_options`, and their one-line help (:data:`BUNDLE_SECTION`);
  :class:`Columns` (``COLS``, comma-separated) and :class:`AutoOr` (a number or ``auto``), parameter types;
  :func:`parse_floats` and :func:`parse_ints`, list options (``0,0.5,1`` or ``START:STOP:COUNT``);
- the step a build ends with: :func:`signed_build` (key loaded first, the build run, its payload
  signed, checked and written; a :class:`Signed`), :func:`load_key`, :func:`sign_checked`;
- keys and secrets: :func:`trust_options` and :func:`trusted_keyring` (``--trusted`` /
  ``--keyring``), :func:`read_keyring_chain`, :data:`passphrase_option` and :func:`read_passphrase`,
  and :func:`read_small_file`, how each of them reads a file argument (regular, bounded);
- the one help renderer: :class:`SectionedCommand` (``--help`` on one screen, one line per
  option under headings; ``--help-all`` in full), :class:`Section`; and
  :class:`DefaultCommandGroup`, a group whose default command takes any other command line.

Private modules: ``_group``, ``_json``, ``_options``, ``_signing``, ``_types``, ``_trust``,
``_passphrase``, ``_files``, ``_help``, ``_default``.
"""
from ._default import DefaultCommandGroup
from ._files import read_small_file
from ._group import CommandGroup, Fail, guard
from ._help import Section, SectionedCommand
from ._json import emit
from ._options import BUNDLE_SECTION, bundle_options, data_options, header_options, json_option
from ._passphrase import passphrase_option, read_passphrase
from ._signing import Signed, load_key, sign_checked, signed_build
from ._trust import read_keyring_chain, trust_options, trusted_keyring
from ._types import AutoOr, Columns, parse_floats, parse_ints

__all__ = ["CommandGroup", "DefaultCommandGroup", "Fail", "guard",
           "emit",
           "bundle_options", "header_options", "json_option", "data_options", "Columns",
           "BUNDLE_SECTION", "AutoOr", "parse_floats", "parse_ints",
           "Signed", "signed_build", "load_key", "sign_checked",
           "trust_options", "trusted_keyring", "read_keyring_chain", "passphrase_option", "read_passphrase",
           "read_small_file", "Section", "SectionedCommand"]
