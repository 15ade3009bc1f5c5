"""Tasks shared by this process and its workers: order, progress, failures, cancelling, and forked
workers that survive this process's OpenMP threads."""
import os
import signal
import time

import numpy as np
import pytest

from privmap.offline.mechanisms.table._tasks import Tasks, forks_safely, run_tasks

#: Both kinds of worker, whatever this machine's cores would choose.
KINDS = [pytest.param(True, id="forked"), pytest.param(False, id="loky")]


def _pid_after(i, seconds):
    time.sleep(seconds)
    if i < 0:
        raise ValueError(f"task {i} failed")
    return i, os.getpid()


def _tasks(work, fork):
    return Tasks(_pid_after, work, 2, threads=1, fork=fork)


@pytest.mark.parametrize("fork", KINDS)
def test_the_tasks_share_this_process_and_its_worker_and_report_progress_in_order(fork):
    told = []
    out = _tasks([(i, 0.3 if i % 2 else 0.05) for i in range(6)], fork).start().finish(
        lambda done, total: told.append((done, total)))
    assert [i for i, _ in out] == list(range(6))
    assert {pid == os.getpid() for _, pid in out} == {True, False}          # this process took tasks too
    assert told == [(d, 6) for d in range(1, 7)]


def _warns(i, seconds):
    import warnings
    time.sleep(seconds)
    warnings.warn("a fold without some class", UserWarning, stacklevel=1)
    return i, os.getpid()


@pytest.mark.parametrize("fork", KINDS)
def test_the_warnings_of_every_task_reach_one_tally_wherever_it_ran_and_none_is_printed(fork, capfd):
    from privmap.offline import _routed
    _routed.clear()
    out = Tasks(_warns, [(i, 0.2 if i % 2 else 0.02) for i in range(6)], 2, threads=1, fork=fork).start().finish(None)
    assert {pid == os.getpid() for _, pid in out} == {True, False}
    assert "a fold without some class" not in capfd.readouterr().err
    assert _routed.summary() == ("note: the folds' tasks raised 6 warning(s), each kind once here: "
                                 "UserWarning: a fold without some class (x6)")
    _routed.clear()
    assert _routed.summary() is None


@pytest.mark.parametrize("fork", KINDS)
@pytest.mark.parametrize("failing", [0, 1, 3])
def test_a_task_that_raises_stops_the_tasks_and_its_error_reaches_the_caller(failing, fork):
    with pytest.raises(ValueError, match="task -1 failed"):
        _tasks([(-1 if i == failing else i, 0.05) for i in range(4)], fork).start().finish(None)
    assert [i for i, _ in _tasks([(i, 0.0) for i in range(3)], fork).start().finish(None)] == [0, 1, 2]


@pytest.mark.parametrize("fork", KINDS)
def test_tasks_set_going_early_run_in_the_worker_while_this_process_works(fork):
    """start: the worker takes tasks at once; finish then runs what is left here too."""
    tasks = _tasks([(i, 0.2) for i in range(4)], fork).start()
    time.sleep(1.5)                                        # this process busy elsewhere; the worker works
    out = tasks.finish(None)
    assert [i for i, _ in out] == list(range(4)) and all(pid != os.getpid() for _, pid in out[:2])


@pytest.mark.parametrize("fork", KINDS)
def test_cancelled_tasks_stop_the_workers_without_waiting_for_them(fork):
    tasks = _tasks([(i, 5.0) for i in range(4)], fork).start()
    time.sleep(0.2)                                        # the worker is inside its first task
    began = time.perf_counter()
    tasks.cancel()
    assert time.perf_counter() - began < 4.0 and not tasks.feeders[0].is_alive()
    if fork:
        assert not any(p.is_alive() for p in tasks.workers.processes)
    assert [i for i, _ in _tasks([(i, 0.0) for i in range(3)], fork).start().finish(None)] == [0, 1, 2]


def _killed_at(i, at):
    if i == at:
        os.kill(os.getpid(), signal.SIGKILL)
    return _pid_after(i, 0.3)


@pytest.mark.skipif(not forks_safely(1), reason="workers are forked on Linux only")
def test_a_worker_killed_by_the_system_is_named_with_the_signal():
    tasks = Tasks(_killed_at, [(i, 0) for i in range(3)], 2, threads=1, fork=True).start()
    time.sleep(0.5)                                        # task 0 reached the worker, which dies
    with pytest.raises(ChildProcessError, match=r"ended during task 1 of 3 \(killed by signal 9, as the system"):
        tasks.finish(None)


_ORPHAN = """
import os, signal, sys, time
from privmap.offline.mechanisms.table._tasks import Tasks
tasks = Tasks(time.sleep, [(0.0,)] * 3, 3, threads=1, fork=True).start()
print(*[p.pid for p in tasks.workers.processes], flush=True)
os.kill(os.getpid(), signal.SIGKILL)
"""


def _ended(pid):
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] in "ZX"        # a zombie has ended
    except FileNotFoundError:
        return True


@pytest.mark.skipif(not forks_safely(1), reason="workers are forked on Linux only")
def test_forked_workers_end_when_their_parent_is_killed():
    import subprocess
    import sys
    done = subprocess.run([sys.executable, "-c", _ORPHAN], capture_output=True, text=True, timeout=60)
    workers = [int(pid) for pid in done.stdout.split()]
    assert done.returncode == -signal.SIGKILL and len(workers) == 2
    deadline = time.monotonic() + 10.0
    while not all(_ended(pid) for pid in workers) and time.monotonic() < deadline:
        time.sleep(0.05)
    left = [pid for pid in workers if not _ended(pid)]
    for pid in left:                                       # no orphan outlives a failing test
        os.kill(pid, signal.SIGKILL)
    assert not left


def test_forked_workers_get_one_thread_each():
    assert forks_safely(1) == os.uname().sysname.startswith("Linux")
    assert not forks_safely(2)
    with pytest.raises(ValueError, match="one thread each"):
        Tasks(_pid_after, [(0, 0.0)], 2, threads=2, fork=True)


def _kmeans_labels(seed):
    from sklearn.cluster import KMeans
    X = np.random.default_rng(seed).normal(size=(4000, 8))
    return KMeans(16, n_init=1, random_state=0).fit(X).labels_, os.getpid()


@pytest.mark.skipif(not forks_safely(1), reason="workers are forked on Linux only")
def test_a_forked_worker_runs_k_means_after_this_process_ran_it_on_two_openmp_threads():
    """GNU OpenMP's threads do not survive fork: a child opening a two-thread region after its parent
    ran one waits forever. A forked worker has one thread, so it finishes."""
    from threadpoolctl import threadpool_limits
    with threadpool_limits(limits=2):
        here, _ = _kmeans_labels(0)                       # this process's OpenMP team of two
    tasks = Tasks(_kmeans_labels, [(0,)], 2, threads=1, fork=True).start()
    deadline = time.monotonic() + 60.0
    while not tasks.finished[0] and not tasks.errors and time.monotonic() < deadline:
        time.sleep(0.05)
    if not tasks.finished[0]:
        tasks.cancel()
        pytest.fail("the forked worker did not finish its k-means within 60 s")
    (labels, pid), = tasks.finish(None)
    assert pid != os.getpid() and np.array_equal(labels, here)


def test_run_tasks_gives_the_results_in_order():
    assert [i for i, _ in run_tasks(_pid_after, [(i, 0.01 * (3 - i)) for i in range(4)], 2, None)] == [0, 1, 2, 3]
