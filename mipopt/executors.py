"""Executors: where a study's independent jobs run, with results in submission order.

A study (``mipopt simulate --runs``, ``mipopt bench``, ``mipopt sweep`` over several instances,
the benchmark scripts' grids) is a list of independent jobs: a top-level function and plain
arguments (picklable, seeds explicit). :func:`make_executor` turns a spec into an
:class:`Executor` whose :meth:`~Executor.map` runs them and returns their results in the order
the jobs were given, so a study's rows are the same whatever the executor:

===============================  =================================================================
``serial``                       in this process, one job after the other
``local``                        a pool of processes, one per CPU this process may use
``local:N``                      a pool of ``N`` processes
``dask://HOST:PORT``             a running Dask scheduler (``pip install -e ".[cluster]"``)
``dask`` / ``dask:local[:N]``    a Dask ``LocalCluster`` of ``N`` processes (default one per CPU),
                                 one thread each, started here and shut down by :meth:`~Executor.close`
``ray://HOST:PORT``              a running Ray cluster through Ray Client (``.[cluster]``)
``ray:local[:N]``                a local Ray instance with ``N`` CPUs (default one per CPU)
===============================  =================================================================

The same with options by the grammar of every spec (:mod:`mipopt.specs`): ``local:workers=4``,
``dask:workers=2``, ``dask:address=10.0.0.5:8786``, ``ray:address=head:10001``.

On a cluster, every worker needs the same mipopt (and its pinned solvers) installed: a job is
sent as a reference to its function, which the worker imports.

Examples
--------
>>> with make_executor("serial") as ex:
...     ex.map(pow, [(2, 3), (3, 2)])
[8, 9]
>>> parse_executor("local:0")
Traceback (most recent call last):
...
mipopt.errors.InstanceError: executor: local:N needs N >= 1, got '0'
"""

from __future__ import annotations

import os
import signal
import sys
import time
import warnings
from collections.abc import Callable, Iterable, Sequence
from contextlib import suppress
from dataclasses import dataclass
from types import FrameType, TracebackType
from typing import Any, TypeVar

from mipopt._signals import held_signals, quiet_stops
from mipopt.errors import InstanceError
from mipopt.specs import bind_options, parse_spec

__all__ = [
    "KINDS",
    "Executor",
    "ExecutorSpec",
    "capped_threads",
    "make_executor",
    "parse_executor",
    "run_jobs",
    "runs_here",
]

T = TypeVar("T")
#: Called as each job finishes: (its index in the submission order, its result).
Done = Callable[[int, Any], None]

KINDS = ("serial", "local", "dask", "ray")
#: The forms of a spec, for messages.
FORMS = "serial, local, local:N, dask://HOST:PORT, dask, dask:local[:N], ray://HOST:PORT, ray:local[:N]"
#: Seconds to wait for a remote scheduler before the spec is reported as unreachable.
CONNECT_TIMEOUT_S = 10.0


def cpu_count() -> int:
    """CPUs this process may run on (what ``nproc`` prints)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def capped_threads(threads: int, name: str = "threads", stacklevel: int = 2) -> int:
    """``threads``, or this machine's cores (:func:`cpu_count`) when it asks for more, with a
    :class:`UserWarning` naming ``name`` (more threads than cores only slow a solver down: HiGHS
    took 4.5 to 10 s with 1,000 threads where 2 take 0.7 s); ``stacklevel`` is what the caller
    would give :func:`warnings.warn` (2: the line that called the caller).

    Examples
    --------
    >>> capped_threads(1)
    1
    """
    cores = cpu_count()
    if threads <= cores:
        return threads
    warnings.warn(
        f"{name}: {threads} is more than this machine's {cores} cores; using {cores}",
        stacklevel=stacklevel + 1,
    )
    return cores


@dataclass(frozen=True, slots=True)
class ExecutorSpec:
    """A parsed executor spec: its kind, a remote address (or None for local), its worker count
    (None: one per CPU; remote clusters: the cluster's)."""

    kind: str
    address: str | None = None
    workers: int | None = None

    def __str__(self) -> str:
        if self.kind in ("serial",):
            return self.kind
        if self.address is not None:
            return f"{self.kind}://{self.address}"
        local = "local" if self.kind == "local" else f"{self.kind}:local"
        return local if self.workers is None else f"{local}:{self.workers}"


def _workers(text: str, form: str, path: str) -> int:
    try:
        n = int(text)
    except ValueError:
        n = 0
    if n < 1 or str(n) != text.strip():
        raise InstanceError(path, f"{form} needs N >= 1, got {text!r}")
    return n


def parse_executor(spec: str | ExecutorSpec, path: str = "executor") -> ExecutorSpec:
    """Check a spec's form without starting anything.

    Raises
    ------
    InstanceError
        Naming ``path`` for an unknown kind, a bad worker count or a missing address.
    """
    if isinstance(spec, ExecutorSpec):
        return spec
    text = str(spec).strip()
    if "=" in text:  # options by the grammar of every spec: local:workers=4, dask:address=HOST:PORT
        return _by_options(text, path)
    kind, sep, rest = text.partition("://")
    if sep:
        if kind not in ("dask", "ray"):
            raise InstanceError(path, f"{text!r}: only dask:// and ray:// take an address (known: {FORMS})")
        host, _, port = rest.partition(":")
        if not host or "/" in rest or (port and not (port.isascii() and port.isdigit())):
            raise InstanceError(path, f"{text!r}: give {kind}://HOST:PORT, e.g. {kind}://10.0.0.5:8786")
        return ExecutorSpec(kind, address=rest)
    kind, _, rest = text.partition(":")
    if kind == "serial" and not rest:
        return ExecutorSpec("serial", workers=1)
    if kind == "local":
        return ExecutorSpec("local", workers=_workers(rest, "local:N", path) if rest else None)
    if kind in ("dask", "ray"):
        where, _, n = rest.partition(":")
        if where not in ("local", "" if kind == "dask" else "local") or (n and not where):
            raise InstanceError(path, f"{text!r}: give {kind}:local[:N] or {kind}://HOST:PORT")
        return ExecutorSpec(kind, workers=_workers(n, f"{kind}:local:N", path) if n else None)
    raise InstanceError(path, f"unknown executor {text!r} (known: {FORMS})")


def _serial() -> None:
    """``serial`` takes no option."""


def _local(workers: int | None = None) -> None:
    """``local:workers=N``."""


def _remote(workers: int | None = None, address: str | None = None) -> None:
    """``dask:workers=N`` (a local cluster), ``dask:address=HOST:PORT``; ``ray`` likewise."""


#: What each kind takes as ``key=value`` options (:func:`mipopt.specs.bind_options` reads them).
_OPTIONS: dict[str, Callable[..., None]] = {
    "serial": _serial,
    "local": _local,
    "dask": _remote,
    "ray": _remote,
}


def _by_options(text: str, path: str) -> ExecutorSpec:
    """A spec with ``key=value`` options (:mod:`mipopt.specs`), the same executors as the short forms."""
    parsed = parse_spec(text, path)
    if parsed.name not in _OPTIONS or parsed.inner is not None:
        raise InstanceError(path, f"unknown executor {text!r} (known: {FORMS})")
    options = bind_options(parsed, _OPTIONS[parsed.name], path, "executor")
    workers, address = options.get("workers"), options.get("address")
    if workers is not None and workers < 1:
        raise InstanceError(path, f"{parsed.name}:workers=N needs N >= 1, got {workers}")
    if address is not None:
        if workers is not None:
            raise InstanceError(
                path, f"{text!r}: a remote cluster's workers are its own; give address or workers"
            )
        return parse_executor(f"{parsed.name}://{address}", path)
    return ExecutorSpec(parsed.name, workers=workers)


class Executor:
    """Runs independent jobs; :meth:`map` returns their results in submission order.

    Use it as a context manager (or call :meth:`close`): a pool or a local cluster it started is
    shut down there.
    """

    spec: ExecutorSpec

    @property
    def workers(self) -> int:
        """Jobs run at once (a remote cluster's: its worker threads when known)."""
        return self.spec.workers or 1

    def map(self, fn: Callable[..., T], jobs: Iterable[Sequence[Any]], done: Done | None = None) -> list[T]:
        """``[fn(*job) for job in jobs]``, run by this executor; ``done(i, result)`` as each ends.

        An exception in a job is raised here (the first one met, in finishing order).
        """
        raise NotImplementedError

    def close(self) -> None:
        return None

    def __enter__(self) -> Executor:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, err: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.spec}>"


class SerialExecutor(Executor):
    """Every job in this process, in order."""

    def __init__(self) -> None:
        self.spec = ExecutorSpec("serial", workers=1)

    def map(self, fn: Callable[..., T], jobs: Iterable[Sequence[Any]], done: Done | None = None) -> list[T]:
        out = []
        for i, job in enumerate(jobs):
            out.append(fn(*job))
            if done is not None:
                done(i, out[-1])
        return out


class LocalExecutor(Executor):
    """A pool of processes on this machine, started lazily by the first :meth:`map`.

    Workers are forked from a server process that imported mipopt and the first job's module once
    (``forkserver``), never from the caller, whose threads (a solver's, a plot's) a plain fork
    would copy mid-flight. A single job runs in this process.
    """

    def __init__(self, workers: int | None = None) -> None:
        self.spec = ExecutorSpec("local", workers=workers)
        self._n = workers or cpu_count()
        self._pool: Any = None

    @property
    def workers(self) -> int:
        return self._n

    def map(self, fn: Callable[..., T], jobs: Iterable[Sequence[Any]], done: Done | None = None) -> list[T]:
        import multiprocessing
        from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait

        jobs = list(jobs)
        if len(jobs) < 2:  # nothing to run side by side: no pool to start
            return SerialExecutor().map(fn, jobs, done)
        if self._pool is None:
            ctx = multiprocessing.get_context("forkserver")
            # the job's module, imported once in the server rather than in every worker (the
            # server starts once per process: the first pool's list holds for later ones)
            ctx.set_forkserver_preload(["mipopt", *([fn.__module__] if fn.__module__ != "__main__" else [])])
            self._pool = ProcessPoolExecutor(max_workers=self._n, mp_context=ctx, initializer=_worker_start)
        results: list[Any] = [None] * len(jobs)
        try:
            # a stop while a worker starts would leave it reading a queue already gone (a
            # traceback on stderr): the stop waits until every job is handed over
            with held_signals():
                futures = {self._pool.submit(_job, fn, *job): i for i, job in enumerate(jobs)}
            pending = set(futures)
            while pending:
                finished, pending = wait(pending, return_when=FIRST_COMPLETED)
                for f in sorted(finished, key=futures.__getitem__):
                    results[futures[f]] = f.result()
                    if done is not None:
                        done(futures[f], results[futures[f]])
        except BaseException:  # a job failed, or Ctrl-C or SIGTERM: the other jobs stop too
            self._stop_workers()
            raise
        return results

    def _stop_workers(self) -> None:
        """End the workers now, where closing the pool would wait for the jobs they run: no job
        is handed out any more, SIGTERM ends the job each runs and then the worker, as an exit
        does (:func:`_worker_start`), and SIGKILL any still running :data:`STOP_GRACE_S` later.

        The workers are signalled by process id: the pool's own bookkeeping takes a worker for
        ended once the forkserver that started it is gone (a SIGTERM to the whole process group
        ends the forkserver too), and the worker would then wait for jobs forever.
        """
        pids = [p.pid for p in (getattr(self._pool, "_processes", None) or {}).values()]  # the pool's own
        pool, self._pool = self._pool, None
        with held_signals():
            pool.shutdown(wait=False, cancel_futures=True)
            _send(pids, signal.SIGTERM)
            deadline = time.monotonic() + STOP_GRACE_S
            while _send(pids, 0) and time.monotonic() < deadline:
                time.sleep(0.02)
            _send(pids, signal.SIGKILL)

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None


def _send(pids: list[int], signum: int) -> int:
    """Send ``signum`` to each process still there (0: none, only look); how many were there."""
    there = 0
    for pid in pids:
        with suppress(ProcessLookupError):
            os.kill(pid, signum)
            there += 1
    return there


#: Seconds a local worker has to end its job and exit once its caller was stopped.
STOP_GRACE_S = 2.0


#: In a local worker: set by SIGTERM, after which no job starts (those already queued included).
_stopping = False


def _worker_start() -> None:
    """In each local worker: SIGTERM raises SystemExit, which ends the job it runs, and no later
    job starts; the worker then exits as it does when the pool closes, cleaning up what it holds
    (a killed worker leaves its semaphores to the resource tracker, which warns of them). Ctrl-C,
    which a terminal sends to the workers too, is left to the caller, which stops them so."""
    signal.signal(signal.SIGTERM, _exit_worker)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    sys.unraisablehook = _exit_again
    quiet_stops()  # Pyomo logs the SystemExit it sees; the caller says "terminated" once


def _exit_worker(signum: int, frame: FrameType | None) -> None:
    global _stopping
    _stopping = True
    raise SystemExit(128 + signal.SIGTERM)


def _exit_again(unraisable: Any) -> None:
    """The SystemExit of a SIGTERM that landed in code whose exceptions Python ignores (a weakref
    callback, such as the import system's module locks, or a ``__del__``) would be printed and lost,
    and the worker would run on until killed: raise it again a moment later, past that code."""
    if _stopping and isinstance(unraisable.exc_value, SystemExit) and hasattr(signal, "setitimer"):
        signal.signal(signal.SIGALRM, _exit_worker)
        signal.setitimer(signal.ITIMER_REAL, 0.01)
    else:
        sys.__unraisablehook__(unraisable)


def _job(fn: Callable[..., T], *args: Any) -> T:
    """``fn(*args)`` in a local worker, unless the worker was told to stop."""
    if _stopping:
        raise SystemExit(128 + signal.SIGTERM)
    return fn(*args)


def _missing(kind: str, path: str) -> InstanceError:
    package = "dask[distributed]" if kind == "dask" else "ray"
    return InstanceError(
        path, f"{kind} is not installed: pip install '{package}' (or mipopt's extra: .[cluster])"
    )


class DaskExecutor(Executor):
    """A Dask cluster: a scheduler at an address, or a ``LocalCluster`` started here."""

    def __init__(self, spec: ExecutorSpec, path: str = "executor") -> None:
        try:
            from distributed import Client, LocalCluster
        except ImportError:
            raise _missing("dask", path) from None
        self.spec, self._cluster = spec, None
        try:
            if spec.address is None:
                n = spec.workers or cpu_count()
                self._cluster = LocalCluster(
                    n_workers=n, threads_per_worker=1, processes=True, dashboard_address=None
                )
                self.client = Client(self._cluster)
            else:
                self.client = Client(f"tcp://{spec.address}", timeout=CONNECT_TIMEOUT_S)
        except OSError as err:
            self.close()
            raise InstanceError(path, f"cannot reach the Dask scheduler at {spec.address}: {err}") from None

    @property
    def workers(self) -> int:
        threads = self.client.nthreads()
        return sum(threads.values()) if threads else 1

    def map(self, fn: Callable[..., T], jobs: Iterable[Sequence[Any]], done: Done | None = None) -> list[T]:
        from distributed import as_completed

        jobs = list(jobs)
        # pure=False: every job runs, even two with equal arguments (a job may time itself)
        futures = [self.client.submit(fn, *job, pure=False) for job in jobs]
        index = {f.key: i for i, f in enumerate(futures)}
        results: list[Any] = [None] * len(jobs)
        try:
            for f in as_completed(futures):
                i = index[f.key]
                results[i] = f.result()
                if done is not None:
                    done(i, results[i])
        except BaseException:
            self.client.cancel(futures)
            raise
        return results

    def close(self) -> None:
        client = getattr(self, "client", None)
        if client is not None:
            client.close()
        if self._cluster is not None:
            self._cluster.close()
            self._cluster = None


class RayExecutor(Executor):
    """A Ray cluster through Ray Client (``ray://``), or a Ray instance started here."""

    def __init__(self, spec: ExecutorSpec, path: str = "executor") -> None:
        try:
            import ray
        except ImportError:
            raise _missing("ray", path) from None
        self.spec, self._ray = spec, ray
        try:
            if spec.address is None:
                ray.init(
                    num_cpus=spec.workers or cpu_count(),
                    include_dashboard=False,
                    log_to_driver=False,
                    configure_logging=False,
                )
            else:
                ray.init(address=f"ray://{spec.address}", log_to_driver=False)
        except (ConnectionError, OSError, TimeoutError) as err:
            raise InstanceError(path, f"cannot reach the Ray cluster at {spec.address}: {err}") from None

    @property
    def workers(self) -> int:
        return int(self._ray.cluster_resources().get("CPU", 1))

    def map(self, fn: Callable[..., T], jobs: Iterable[Sequence[Any]], done: Done | None = None) -> list[T]:
        ray = self._ray
        remote = ray.remote(num_cpus=1, max_retries=0)(fn)
        refs = [remote.remote(*job) for job in jobs]
        index = {ref: i for i, ref in enumerate(refs)}
        results: list[Any] = [None] * len(refs)
        pending = list(refs)
        try:
            while pending:
                ready, pending = ray.wait(pending, num_returns=1)
                for ref in ready:
                    value = ray.get(ref)
                    results[index[ref]] = value
                    if done is not None:
                        done(index[ref], value)
        except BaseException:
            for ref in pending:
                ray.cancel(ref)
            raise
        return results

    def close(self) -> None:
        if self._ray.is_initialized():
            self._ray.shutdown()


def runs_here(executor: str | ExecutorSpec | Executor | None, jobs: int) -> bool:
    """Whether :func:`run_jobs` would run ``jobs`` jobs in this process (``serial``, or ``local``
    with one job): a caller may then follow each job's own progress."""
    if isinstance(executor, Executor):
        return isinstance(executor, SerialExecutor) or (isinstance(executor, LocalExecutor) and jobs < 2)
    kind = parse_executor(executor or "serial").kind
    return kind == "serial" or (kind == "local" and jobs < 2)


def make_executor(spec: str | ExecutorSpec = "local", path: str = "executor") -> Executor:
    """The executor a spec names (see the module docstring), started or connected.

    Raises
    ------
    InstanceError
        Naming ``path`` for a bad spec, a cluster package not installed or a scheduler that
        cannot be reached.

    Examples
    --------
    >>> import mipopt
    >>> with mipopt.make_executor("local:2") as ex:  # results in the order of the jobs
    ...     ex.map(divmod, [(7, 2), (9, 4), (1, 1)])
    [(3, 1), (2, 1), (1, 0)]
    """
    parsed = parse_executor(spec, path)
    if parsed.kind == "serial":
        return SerialExecutor()
    if parsed.kind == "local":
        return LocalExecutor(parsed.workers)
    if parsed.kind == "dask":
        return DaskExecutor(parsed, path)
    return RayExecutor(parsed, path)


def run_jobs(
    fn: Callable[..., T],
    jobs: Iterable[Sequence[Any]],
    executor: str | ExecutorSpec | Executor | None = None,
    done: Done | None = None,
) -> list[T]:
    """``[fn(*job) for job in jobs]`` on ``executor``: an :class:`Executor` (left open), a spec
    (started here and closed after) or None (``serial``). Results in submission order."""
    if isinstance(executor, Executor):
        return executor.map(fn, jobs, done)
    with make_executor("serial" if executor is None else executor) as ex:
        return ex.map(fn, jobs, done)
