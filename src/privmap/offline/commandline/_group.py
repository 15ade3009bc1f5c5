"""The command group every ``privmap`` command runs under, and :func:`guard`.

One-line failures, stdout reserved for the command's output, quiet closed pipes;
:func:`guard` turns typed errors into one line.
"""
from __future__ import annotations

import contextlib
import errno
import functools
import io
import os
import sys

import click

from privmap.device import PrivmapDeviceError

from .._errors import BuildError

#: Exit status when stdout is closed under the command (``privmap ... | head -1``): 128 + SIGPIPE,
#: what a shell reports for any tool that the closed pipe ended, so ``set -o pipefail`` scripts see
#: the output was cut short; nothing is printed.
EXIT_CLOSED_PIPE = 141
#: Environment variable: when set (to anything but "" or "0"), an unexpected exception is re-raised
#: with its traceback instead of the one ``error: internal error ...`` line.
TRACEBACK_ENV = "PRIVMAP_TRACEBACK"


class StdoutClosed(Exception):
    """The reader of stdout went away (EPIPE).

    Not an ``OSError``, so that :func:`guard` lets it through to :class:`CommandGroup`, which
    ends quietly with :data:`EXIT_CLOSED_PIPE`.
    """


class Fail(click.ClickException):
    """One-line failure: ``error: message`` on stderr and exit status 1."""

    def show(self, file=None):
        click.echo(f"error: {self.format_message()}", err=True)


def guard(fn):
    """Turn the project's typed errors (and I/O or value errors) into one-line CLI failures."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except (BuildError, PrivmapDeviceError) as exc:
            raise Fail(str(exc)) from exc
        except OSError as exc:
            raise Fail(f"{exc.filename or ''}: {exc.strerror or exc}".lstrip(": ")) from exc
        except ValueError as exc:
            raise Fail(str(exc)) from exc
    return wrapper


# -- the top-level group: stdout for the command's output only, one-line failures ---------------

#: The packages whose code is the command line's own: the ``cli`` that mounts the commands and this kit.
_COMMAND_LINE_PACKAGES = ("privmap.offline.cli", __name__.rpartition(".")[0])
#: How the modules holding the mechanisms' commands end (``privmap.offline.mechanisms.NAME._command``).
_COMMAND_MODULE = "_command"


def _is_command_line(name: str) -> bool:
    """Whether module ``name`` is the command line's own code.

    :data:`_COMMAND_LINE_PACKAGES`, or a module whose name ends in ``_command``: a mechanism's
    command.
    """
    return (any(name == package or name.startswith(package + ".") for package in _COMMAND_LINE_PACKAGES)
            or name.rpartition(".")[2].endswith(_COMMAND_MODULE))


def _written_by_cli(frame) -> bool:
    """Whether the code that asked for a write, ``frame`` and outwards, is the command line's own.

    The innermost frame outside click (``click.echo``, help and version output) must belong to it
    (:func:`_is_command_line`). Commands must therefore live in ``privmap.offline.cli`` or in a
    module ending in ``_command``, and write through this kit or click.
    """
    while frame is not None:
        name = frame.f_globals.get("__name__", "")
        if name != "click" and not name.startswith("click."):
            return _is_command_line(name)
        frame = frame.f_back
    return False


class _CommandStdout(io.TextIOBase):
    """``sys.stdout`` while a command runs: the CLI's writes to the real stdout, any other to ``err``.

    What the CLI's own code writes (``click.echo``, :func:`emit`) goes to ``out`` (the real
    stdout); what any other code writes through ``sys.stdout`` (a library's ``print``, a logging
    handler made during the command) goes to ``err``. A closed ``out`` raises
    :class:`StdoutClosed`.
    """

    def __init__(self, out, err):
        super().__init__()
        self._out, self._err = out, err

    @property
    def encoding(self):
        return getattr(self._out, "encoding", "utf-8")

    @property
    def errors(self):
        return getattr(self._out, "errors", "strict")

    def isatty(self) -> bool:
        return self._out.isatty()

    def writable(self) -> bool:
        return True

    def fileno(self) -> int:  # C-level writers asking for stdout's descriptor get stderr's
        return self._err.fileno()

    def write(self, text) -> int:
        if not _written_by_cli(sys._getframe(1)):
            return self._err.write(text)
        with _pipe_closed_as_stdout_closed():
            return self._out.write(text)

    def flush(self) -> None:
        with _pipe_closed_as_stdout_closed():
            self._out.flush()
        self._err.flush()

    def __del__(self) -> None:
        """Nothing to release: both streams belong to the process.

        IOBase's finaliser would close, hence flush, them; at interpreter exit this module's globals
        may already be None, and Python 3.13 printed 'Exception ignored in: <_CommandStdout ...>' for
        each one left.
        """


@contextlib.contextmanager
def _pipe_closed_as_stdout_closed():
    try:
        yield
    except OSError as exc:
        if isinstance(exc, BrokenPipeError) or exc.errno == errno.EPIPE:
            raise StdoutClosed() from None
        raise


def _real_stdout_fd() -> int | None:
    try:
        return sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):  # CliRunner's buffer, a closed or absent stdout
        return None


@contextlib.contextmanager
def reserved_stdout():
    """Run a command with stdout reserved for its own output.

    When ``sys.stdout`` is file descriptor 1, descriptor 1 is pointed at stderr (``os.dup2``) for
    the whole command, so nothing a C library writes there (HiGHS's banner, a solver's log, a
    worker process's output) reaches stdout; the command's own text goes to a duplicate of the
    original descriptor through :class:`_CommandStdout`, which also sends Python-level writes of
    other code to stderr. Without a real descriptor (click's CliRunner) only the Python-level
    routing applies. Both are undone on the way out, even on error. Raises :class:`StdoutClosed`
    if the reader of stdout has gone.
    """
    original, err = sys.stdout, sys.stderr
    if original is None or err is None:
        yield
        return
    saved = None
    out = original
    if _real_stdout_fd() == 1:
        with _pipe_closed_as_stdout_closed():
            original.flush()
        try:
            saved = os.dup(1)
            os.dup2(err.fileno(), 1)
        except (OSError, ValueError):  # no usable stderr descriptor: leave descriptor 1 alone
            if saved is not None:
                os.close(saved)
            saved = None
        else:
            out = open(saved, "w",  # noqa: SIM115 - closed in the finally below, after the command buffering=1 if getattr(original, "line_buffering", False) else -1,
                       encoding=original.encoding, errors=original.errors, closefd=False)
    sys.stdout = _CommandStdout(out, err)
    try:
        yield
        with _pipe_closed_as_stdout_closed():
            out.flush()
    finally:
        sys.stdout = original
        if saved is not None:
            try:
                with contextlib.suppress(OSError):  # a closed pipe: what is left is dropped
                    out.close()
            finally:
                os.dup2(saved, 1)
                os.close(saved)


def _one_line(message: str) -> str:
    return " ".join(part.strip() for part in str(message).splitlines() if part.strip())


def _silence_closed_stdout() -> None:
    """Point descriptor 1 at /dev/null so the interpreter's last flush cannot fail again."""
    fd = _real_stdout_fd()
    if fd is None:
        return
    with contextlib.suppress(OSError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, fd)
        os.close(devnull)


class CommandGroup(click.Group):
    """The ``privmap`` group: every command runs under :func:`reserved_stdout`.

    Every way it can end is reported the same way.

    - success: exit 0 (or the status of an explicit ``ctx.exit``);
    - any failure, click's usage errors included: exactly one line ``error: MESSAGE`` on stderr,
      exit 2 for usage errors (click's convention) and 1 otherwise; an unexpected exception
      (a bug) is ``error: internal error: TYPE: MESSAGE`` unless ``PRIVMAP_TRACEBACK`` is set;
    - stdout closed by its reader (``privmap ... | head -1``): nothing printed, exit
      :data:`EXIT_CLOSED_PIPE` (141).

    ``main(standalone_mode=False)`` keeps click's behaviour for callers that handle exceptions.
    """

    def invoke(self, ctx):
        super().invoke(ctx)  # commands' return values are not exit statuses

    def main(self, args=None, prog_name=None, complete_var=None, standalone_mode=True, **extra):
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        try:
            with reserved_stdout():
                status = super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        except StdoutClosed:
            _silence_closed_stdout()
            sys.exit(EXIT_CLOSED_PIPE)
        except getattr(click.exceptions, "NoArgsIsHelpError", ()) as exc:  # a bare group: no command
            self._fail(f"no command given (see '{exc.ctx.command_path} --help')", exc.exit_code)
        except click.UsageError as exc:
            hint = f" (see '{exc.ctx.command_path} --help')" if exc.ctx is not None else ""
            self._fail(_one_line(exc.format_message()) + hint, exc.exit_code)
        except click.ClickException as exc:
            self._fail(_one_line(exc.format_message()), exc.exit_code)
        except click.Abort:
            self._fail("aborted", 1)
        except Exception as exc:  # a bug: still one line, unless asked for the traceback
            if os.environ.get(TRACEBACK_ENV, "") not in ("", "0"):
                raise
            self._fail(f"internal error: {type(exc).__name__}: {_one_line(exc) or 'no message'} "
                       f"(set {TRACEBACK_ENV}=1 for the traceback)", 1)
        sys.exit(status if type(status) is int else 0)

    @staticmethod
    def _fail(message: str, status: int):
        click.echo(f"error: {message}", err=True)
        sys.exit(status)
