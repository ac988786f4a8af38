"""The load driver shared by the Python workloads (files, YCSB, game):
N client threads, each with its own connection, run one operation after
another for a fixed time; every operation's latency is recorded.

Python threads share one interpreter lock, so the driver itself costs CPU;
it is the same client for every system, which keeps the ratios fair, and
sysbench (C) covers the cases where the client must be as thin as possible.
"""
import threading
import time


class WorkloadError(Exception):
    """A workload could not run, or a system returned a wrong answer."""


class Measurement:
    """One measured phase of one workload on one system."""

    def __init__(self, phase, unit, ops, seconds, latencies_ms):
        self.phase = phase
        self.unit = unit
        self.ops = ops
        self.seconds = seconds
        self.latencies_ms = latencies_ms

    @property
    def throughput(self):
        return self.ops / self.seconds if self.seconds > 0 else 0.0

    def percentile(self, p):
        return percentile(sorted(self.latencies_ms), p)


def percentile(sorted_values, p):
    """Nearest-rank percentile (p in 0..100) of an ascending list; None if empty."""
    if not sorted_values:
        return None
    rank = max(1, int(-(-p * len(sorted_values) // 100)))  # ceil(p/100 * n)
    return sorted_values[min(rank, len(sorted_values)) - 1]


def require(condition, message):
    """A check of an answer: raise WorkloadError(message) when it fails."""
    if not condition:
        raise WorkloadError(message)


def run_threads(threads, duration, make_step, stop_event=None):
    """Runs make_step(i)() repeatedly in `threads` threads for `duration` s.

    make_step(i) is called in thread i (so it may open its connection there)
    and returns a callable doing one operation; it may also return a
    (step, close) pair. Returns (ops, elapsed_s, latencies_ms). The first
    exception in any thread stops every thread and is re-raised, with the
    thread's operation count, as WorkloadError.
    """
    stop = stop_event or threading.Event()
    lock = threading.Lock()
    latencies = []
    errors = []
    ready = threading.Barrier(threads + 1)
    counts = [0] * threads

    def worker(i):
        close = None
        try:
            made = make_step(i)
            step, close = made if isinstance(made, tuple) else (made, None)
        except Exception as e:  # noqa: BLE001 - reported to the caller
            errors.append(e)
            stop.set()
            ready.wait()
            return
        ready.wait()
        local = []
        try:
            while not stop.is_set():
                t0 = time.perf_counter()
                step()
                local.append((time.perf_counter() - t0) * 1000.0)
        except Exception as e:  # noqa: BLE001
            errors.append(e)
            stop.set()
        finally:
            counts[i] = len(local)
            with lock:
                latencies.extend(local)
            if close:
                try:
                    close()
                except Exception:  # noqa: BLE001 - closing after an error
                    pass

    pool = [threading.Thread(target=worker, args=(i,), daemon=True) for i in range(threads)]
    for t in pool:
        t.start()
    ready.wait()
    start = time.perf_counter()
    stop.wait(duration)
    stop.set()
    for t in pool:
        t.join(timeout=300)
    elapsed = time.perf_counter() - start
    if any(t.is_alive() for t in pool):
        raise WorkloadError("a client thread did not finish within 300 s after the phase ended (server hung?)")
    if errors:
        e = errors[0]
        if isinstance(e, WorkloadError):
            raise e
        raise WorkloadError("%s: %s" % (type(e).__name__, e)) from e
    return sum(counts), elapsed, latencies


def parallel(threads, fn):
    """Runs fn(i) in `threads` threads to completion (loaders); re-raises the
    first error as WorkloadError."""
    errors = []

    def wrap(i):
        try:
            fn(i)
        except Exception as e:  # noqa: BLE001
            errors.append(e)

    pool = [threading.Thread(target=wrap, args=(i,), daemon=True) for i in range(threads)]
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    if errors:
        e = errors[0]
        if isinstance(e, WorkloadError):
            raise e
        raise WorkloadError("%s: %s" % (type(e).__name__, e)) from e
