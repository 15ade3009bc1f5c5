"""Independent tasks shared by this process and worker processes: how the cross-fitting folds run.

:class:`Tasks` runs ``function(*args)`` for every tuple of a list on ``jobs`` processes, this one
and ``jobs - 1`` workers, each with a ``jobs``-th of the machine's cores for its BLAS and OpenMP
threads; results come back in order whatever the order in which tasks finish.

**Which workers.** Where each worker gets one thread, on Linux, the workers are forked from this
process (:class:`_ForkedWorkers`): a child already holds this process's imported modules and the
tasks' arguments, so it starts in milliseconds and only a task's index and its result cross its
pipe. Elsewhere they are loky's reusable workers (:class:`_LokyWorkers`), each a fresh interpreter
that imports NumPy, scikit-learn and this package before its first task: about as much CPU as a
fold of the 14,000 x 50 survey (the benchmarks notebook in git, 1dfd9dc:benchmarks/README.md,
"Fold workers forked"). Fork is not used with more threads: GNU OpenMP's threads do not survive a fork, and a child
that opens a parallel region of two or more threads after this process has run one waits for the
lost threads forever (scikit-learn's k-means is such a region; reproduced with scikit-learn's own
libgomp); with one thread no team is formed, and OpenBLAS restarts its own threads after a fork.
"""
from __future__ import annotations

import contextlib
import multiprocessing
import os
import signal
import sys
import threading
import time
import warnings
from collections.abc import Callable, Iterable
from concurrent.futures import Future
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from typing import cast

from ..._routed import caught, route

#: A task's outcome: its result, and the warnings it raised as ``(category name, message)`` pairs.
Outcome = tuple[object, list[tuple[str, str]]]


def run_tasks(function: Callable, work: list, jobs: int, progress: Callable[[int, int], None] | None) -> list:
    """The results of tasks run on several processes, in order.

    ``function(*args)`` for every tuple of ``work``, results in order, on ``jobs`` processes
    (:class:`Tasks`): started and finished at once.
    """
    return Tasks(function, work, jobs).start().finish(progress)


def forks_safely(threads: int) -> bool:
    """Whether workers may be forked from this process.

    Whether workers with ``threads`` BLAS and OpenMP threads each may be forked from this process
    (module docstring): one thread, on Linux.
    """
    return threads == 1 and sys.platform.startswith("linux") and "fork" in multiprocessing.get_all_start_methods()


class Tasks:
    """Independent tasks on several processes, this one included.

    ``function(*args)`` for every tuple of ``work`` on ``jobs`` processes: this one and ``jobs - 1``
    workers, each with a ``jobs``-th of the machine's cores for its BLAS and OpenMP threads.

    :meth:`start` sets the workers going, each fed by a thread of this process that hands it the
    next task as its last one returns, so no worker waits while tasks remain; this process may do
    other work meanwhile (a build's own stages). :meth:`finish` makes this process take tasks from
    the same queue until none is left, waits for the workers and returns the results in order
    (every warning a task raised routed to this process's tally, not printed: :mod:`privmap.offline._routed`),
    telling ``progress(done, total)``, in this thread, how many tasks are done in order (task i
    counts once tasks 0 .. i are done: a build's ``holdout-fold-i`` stage ends there). This process
    is one of the ``jobs``: it takes tasks too rather than wait.

    The first exception raised by a task (a fold returns its BuildError, so anything raised is a
    bug or an interrupt) is raised by :meth:`finish` once the workers are stopped; no task starts
    after it. :meth:`cancel` stops the workers without waiting for their tasks (a build that fails,
    or is interrupted, before it reaches the folds).

    Parameters
    ----------
    function : callable
        Picklable (a module-level function) where the workers are loky's.
    work : list of tuple
        The arguments of each task.
    jobs : int
        Processes, this one included (>= 1).
    threads : int, optional, keyword-only
        BLAS and OpenMP threads of each process while it runs a task (default: the machine's cores
        divided by ``jobs``, at least 1).
    fork : bool, optional, keyword-only
        Fork the workers (:func:`forks_safely` decides by default). Raises ValueError where forked
        workers would get more than one thread.
    """

    def __init__(self, function: Callable, work: list, jobs: int, *, threads: int | None = None,
                 fork: bool | None = None) -> None:
        self.function, self.work, self.jobs = function, work, jobs
        self.threads = max(1, (os.cpu_count() or 1) // jobs) if threads is None else threads
        self.fork = forks_safely(self.threads) if fork is None else fork
        if self.fork and self.threads > 1:
            raise ValueError(f"forked workers get one thread each, not {self.threads} (module docstring)")
        self.results: list = [None] * len(work)
        self.finished = [False] * len(work)
        self.errors: list[BaseException] = []
        self.pending = list(range(len(work) - 1, -1, -1))              # popped from the end: task 0 first
        self.changed = threading.Condition()
        self.reported = 0
        self.workers: _ForkedWorkers | _LokyWorkers | None = None
        self.feeders: list[threading.Thread] = []

    def _take(self) -> int | None:
        with self.changed:
            return self.pending.pop() if self.pending and not self.errors else None

    def _store(self, i: int, value: Outcome | None = None, error: BaseException | None = None) -> None:
        """Store a task's outcome, or the error that stops every task.

        Task ``i``'s outcome (``(result, warnings)`` from :func:`_limited`, its warnings routed
        to this process's tally), or the error that stops every task.
        """
        with self.changed:
            if error is None:
                result, records = cast(Outcome, value)      # given where no error is
                route(records)
                self.results[i], self.finished[i] = result, True
            else:
                self.errors.append(error)
            self.changed.notify_all()

    def _report(self, progress: Callable[[int, int], None] | None) -> None:
        with self.changed:
            done = self.reported
            while done < len(self.work) and self.finished[done]:
                done += 1
        for count in range(self.reported + 1, done + 1):
            if progress:
                progress(count, len(self.work))
        self.reported = done

    def start(self) -> Tasks:
        """Set the ``jobs - 1`` workers going (none when ``jobs`` is 1); returns self."""
        if self.jobs > 1:
            kind = _ForkedWorkers if self.fork else _LokyWorkers
            self.workers = workers = kind(self.function, self.work, self.threads, self.jobs - 1)

            def feed(k: int) -> None:
                while (i := self._take()) is not None:
                    try:
                        self._store(i, workers.run(k, i))
                    except BaseException as exc:        # raised by finish in this process's thread
                        self._store(i, error=exc)

            self.feeders = [threading.Thread(target=feed, args=(k,), daemon=True) for k in range(self.jobs - 1)]
            for feeder in self.feeders:
                feeder.start()
        return self

    def finish(self, progress: Callable[[int, int], None] | None) -> list:
        """Take tasks here too until none is left, wait for every task; the results in order."""
        try:
            while (i := self._take()) is not None:
                self._store(i, _limited(self.threads, self.function, *self.work[i]))
                self._report(progress)
            while True:
                self._report(progress)
                with self.changed:
                    if self.errors or all(self.finished):
                        break
                    self.changed.wait_for(lambda: self.errors or self.finished[self.reported])
        except BaseException as exc:
            self._store(-1, error=exc)
        self._stop()
        if self.errors:
            raise self.errors[0]
        return self.results

    def cancel(self) -> None:
        """Stop: no task starts any more, the workers are killed and their tasks wasted."""
        self._store(-1, error=_Cancelled("tasks cancelled"))
        self._stop()

    def _stop(self) -> None:
        if self.workers is not None:
            if self.errors:
                self.workers.kill()                     # the running tasks are wasted
            for feeder in self.feeders:
                feeder.join()
            self.workers.close()


class _Cancelled(Exception):
    """Stored by :meth:`Tasks.cancel` (never raised to a caller that finished its tasks)."""


def _limited(threads: int, function: Callable[..., object], *args: object) -> Outcome:
    """A task's result and warnings, with its BLAS and OpenMP threads limited.

    ``(function(*args), its warnings)`` with at most ``threads`` BLAS and OpenMP threads (in a
    worker or here): the warnings the task raised, recorded and not printed
    (:func:`privmap.offline._routed.caught`), for :meth:`Tasks._store` to route to this process's
    tally wherever the task ran.
    """
    from threadpoolctl import threadpool_limits
    with threadpool_limits(limits=threads), caught() as records:
        value = function(*args)
    return value, records


class _ForkedWorkers:
    """Workers forked from this process.

    ``count`` children forked from this process, each serving tasks by index over its own pipe
    (:func:`_serve`); they hold ``function`` and ``work`` from the fork.
    """

    def __init__(self, function: Callable[..., object], work: list, threads: int, count: int) -> None:
        context = multiprocessing.get_context("fork")
        self.work = work
        self.pipes: list[Connection] = []
        self.processes: list[BaseProcess] = []
        with warnings.catch_warnings():
            # Python 3.12 and later warn that forking a process with threads (here OpenBLAS's) may
            # deadlock the child: the module docstring says why these children cannot.
            warnings.filterwarnings("ignore", message=r".*multi-threaded.*fork", category=DeprecationWarning)
            for _ in range(count):
                ours, theirs = context.Pipe()
                process = context.Process(target=_serve, args=(theirs, [*self.pipes, ours], function, work, threads),
                                          daemon=True)
                process.start()
                theirs.close()
                self.pipes.append(ours)
                self.processes.append(process)

    def run(self, k: int, i: int) -> Outcome:
        """Task ``i``'s result on worker ``k``.

        Task ``i`` on worker ``k``: its result, or what it raised raised here. Raises
        ChildProcessError when the worker ends without answering (killed: by :meth:`kill`, or by
        the system, often for want of memory).
        """
        try:
            self.pipes[k].send(i)
            ok, value = self.pipes[k].recv()
        except (EOFError, OSError) as exc:
            process = self.processes[k]
            process.join(timeout=5.0)
            code = process.exitcode
            if code is None or code >= 0:
                how = f"exit code {code}"
            else:
                how = f"killed by signal {-code}" + (", as the system does for want of memory"
                                                    if code == -signal.SIGKILL else "")
            raise ChildProcessError(f"worker process {process.pid} ended during task {i + 1} of {len(self.work)} "
                                    f"({how})") from exc
        if not ok:
            raise value
        return value

    def kill(self) -> None:
        """Kill every worker (a feeder waiting on one gets EOFError)."""
        for process in self.processes:
            process.kill()

    def close(self) -> None:
        """Tell the workers to exit (once their feeders are done) and reap them."""
        for pipe in self.pipes:
            with contextlib.suppress(OSError):          # killed: nothing listens
                pipe.send(None)
            pipe.close()
        for process in self.processes:
            process.join()


def _serve(pipe: Connection, parent_ends: list[Connection], function: Callable[..., object], work: list, threads: int) -> None:
    """A forked worker's loop.

    A forked worker: run task ``work[i]`` for each index received, send ``(True, result)`` or
    ``(False, exception)``, until None arrives or this process's parent goes. Interrupts are left
    to the parent, which kills its workers when it stops. The parent's ends of the pipes, inherited
    by the fork, are closed first: held open here, they would keep a worker whose parent was killed
    waiting for a task forever.
    """
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    for end in parent_ends:
        end.close()
    while True:
        try:
            i = pipe.recv()
        except EOFError:
            return
        if i is None:
            return
        message: tuple[bool, Outcome | BaseException]
        try:
            message = (True, _limited(threads, function, *work[i]))
        except BaseException as exc:
            message = (False, exc)
        try:
            pipe.send(message)
        except OSError:                                 # the parent is gone
            return
        except Exception as exc:                        # the result or exception would not pickle
            pipe.send((False, RuntimeError(f"task {i}: its outcome could not be sent back: {exc!r}")))


class _LokyWorkers:
    """loky's reusable executor with ``count`` workers (a fresh interpreter each, kept between calls)."""

    def __init__(self, function: Callable[..., object], work: list, threads: int, count: int) -> None:
        from joblib.externals.loky import get_reusable_executor
        self.function, self.work, self.threads = function, work, threads
        self.executor = get_reusable_executor(max_workers=count)
        self.submitting = threading.Lock()              # held while a task is handed over (see kill)
        self.inflight: list = [None] * count
        self.killed = False

    def run(self, k: int, i: int) -> Outcome:
        """Task ``i`` through worker slot ``k``: its result, or what it raised raised here."""
        with self.submitting:
            if self.killed:
                raise _Cancelled("workers killed")
            future = self.inflight[k] = self.executor.submit(_limited, self.threads, self.function, *self.work[i])
        return future.result()

    def kill(self) -> None:
        """Kill the workers.

        Kill the workers once loky has handed every submitted task to one (:func:`_until_handed_over`);
        no task is submitted after.
        """
        with self.submitting:
            self.killed = True
            _until_handed_over(self.inflight)
            self.executor.shutdown(wait=False, kill_workers=True)

    def close(self) -> None:
        """Nothing: the reusable executor keeps its workers for the next call."""


def _until_handed_over(futures: Iterable[Future[Outcome] | None], seconds: float = 2.0) -> None:
    """Wait until loky has handed every submitted task to a worker.

    Wait (at most ``seconds``) until loky has handed every submitted task to a worker. Killing the
    workers while one waits in its queue made loky's manager thread fail on the task it had just
    dropped ('Exception in thread ExecutorManagerThread ... KeyError' on stderr).
    """
    deadline = time.monotonic() + seconds
    while any(f is not None and not (f.running() or f.done()) for f in futures) and time.monotonic() < deadline:
        time.sleep(0.001)
