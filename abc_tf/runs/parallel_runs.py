"""The runs of a sweep side by side: grid points, their confirming seeds and ``train.py --seeds``,
each run its own ``python -m abc_tf`` process, on this host (:class:`LocalPool`) or on a Ray
cluster (:class:`RayPool`).

A :class:`Job` is one run's commands (train, then evaluate), run in order into their log files.
Locally at most ``at_once`` jobs run, each child with ``threads`` TensorFlow intra- and inter-op
threads (its share of the cores). TensorFlow's CPU kernels split their sums by the thread count, so a
run's numbers depend on it: the same seeds and threads give the same bits, side by side or one after
another; 1 thread against 2 differ in the 8th digit.

A SIGTERM or Ctrl-C to the sweep reaches every running child once (they run in their own session,
so a terminal's Ctrl-C does not reach them twice). Each stops at its step's end with a checkpoint,
the sweep waits for all and raises :class:`SweepStopped`; the same command resumes them. A child
dies with its parent (Linux ``PR_SET_PDEATHSIG``), so a killed sweep or a lost Ray worker leaves no
run holding its run directory's lock.

On Ray each job is a task asking for ``threads`` CPUs. When its worker or host is lost, Ray runs
the task again elsewhere (``RETRIES``) and the run resumes from its last checkpoint, which must lie
on storage every host sees. Ray is imported only here, when a pool is asked for.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import os
import shlex
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Callable, Sequence

# Sets the child to die with its parent, then becomes ``python -m abc_tf``; a wrapper rather than
# Popen's preexec_fn, which can deadlock in a process with threads (the pool's, Ray's).
_DIE_WITH_PARENT = (
    "import ctypes, os, signal, sys\n"
    "try:\n"
    "    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG\n"
    "except (AttributeError, OSError):\n"
    "    pass  # not Linux: an orphan runs on\n"
    "if os.getppid() == 1:\n"
    "    sys.exit(143)  # the parent died before prctl\n"
    "os.execv(sys.executable, [sys.executable, '-m', 'abc_tf', *sys.argv[1:]])\n"
)
ANSWER_SECONDS = 10  # how long a cluster's address may take to accept a connection
RETRIES = 3  # Ray's runs of a task again after its worker is lost; a command's own error is not retried


class SweepStopped(Exception):
    """The sweep stopped on SIGTERM or Ctrl-C after its running children saved their checkpoints."""

    def __init__(self, signal_number: int):
        self.signal_number, self.exit_status = signal_number, 128 + signal_number
        super().__init__(
            f"Stopped by {signal.Signals(signal_number).name}; every run keeps its checkpoint. "
            "Run the same command again to resume them."
        )


@dataclasses.dataclass(frozen=True)
class Job:
    """One run: ``steps`` are (what, abc_tf arguments, log file), run in order; ``name`` names it in
    the progress lines."""

    name: str
    steps: tuple[tuple[str, tuple[str, ...], str], ...]


def cores() -> int:
    """The cores this process may run on (a container's or ``taskset``'s share, not the host's)."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def thread_env(threads: int | None) -> dict[str, str]:
    """The environment of a child with ``threads`` threads; None: TensorFlow's default."""
    if not threads:
        return {}
    counts = ("TF_NUM_INTRAOP_THREADS", "TF_NUM_INTEROP_THREADS", "OMP_NUM_THREADS")
    # Runs side by side share a GPU: each takes memory as it needs it, not the whole card at start.
    return {**{name: str(threads) for name in counts}, "TF_FORCE_GPU_ALLOW_GROWTH": "true"}


def run_command(
    arguments: Sequence[str],
    log_file: str,
    threads: int | None = None,
    started: Callable[[subprocess.Popen | None], None] = lambda process: None,
) -> None:
    """Runs ``abc_tf <arguments>`` into ``log_file`` with ``threads`` threads. RuntimeError quoting the
    command's error line and naming the log when it fails; ``started`` is told the process, then None."""
    os.makedirs(os.path.dirname(log_file) or ".", exist_ok=True)
    with open(log_file, "a") as log:
        log.write(f"$ {shlex.join(['abc_tf', *arguments])}\n")
        log.flush()
        process = subprocess.Popen(
            [sys.executable, "-c", _DIE_WITH_PARENT, *arguments],
            stdout=log,
            stderr=subprocess.STDOUT,
            env={**os.environ, **thread_env(threads)},
            start_new_session=True,
        )
        started(process)
        try:
            code = process.wait()
        finally:
            started(None)
    if code:
        with open(log_file, errors="replace") as log:
            errors = [line.strip() for line in log if f"abc_tf {arguments[0]}: error: " in line]
        said = f": {errors[-1].split(': error: ', 1)[1]}" if errors else ""
        raise RuntimeError(f"abc_tf {arguments[0]} exited with {code}{said} (its output: {log_file})")


Runner = Callable[..., None]  # run_command's signature: (arguments, log_file, threads, started)


class LocalPool:
    """Runs jobs on this host, ``at_once`` at a time, each child with ``threads`` threads."""

    def __init__(self, at_once: int = 1, threads: int | None = None, runner: Runner = run_command):
        self.at_once, self.threads, self.runner = at_once, threads, runner
        self.where = f"{at_once} at once" + (f", {threads} thread(s) each" if threads else "")

    def run(self, jobs: Sequence[Job], say: Callable[[str], None], label: str) -> None:
        """Runs ``jobs``; the first failure's RuntimeError once the running ones end (none starts
        after it), or :class:`SweepStopped` after a signal."""
        lock, running, live = threading.Lock(), [], {}
        stopping: list[int] = []
        failures: list[RuntimeError] = []

        def run_job(job: Job) -> None:
            for what, arguments, log_file in job.steps:
                with lock:
                    if stopping or failures:
                        return
                    if job.name not in running:
                        running.append(job.name)
                    say(f"[{label}] {what} {job.name} (running: {', '.join(running)})")

                def started(process, job=job):
                    with lock:
                        live[job.name] = process
                    if process is not None and stopping:  # a signal came while it started
                        process.send_signal(stopping[0])

                try:
                    self.runner(arguments, log_file, self.threads, started)
                except RuntimeError as error:
                    with lock:
                        running.remove(job.name)
                        if not stopping:
                            failures.append(error)
                    return
            with lock:
                running.remove(job.name)

        def forward(signal_number, frame) -> None:
            # Every child is told once per signal: a second Ctrl-C stops them at once, as train.py's.
            stopping.append(signal_number)
            with lock:
                processes = [process for process in live.values() if process is not None]
            for process in processes:
                process.send_signal(signal_number)

        handled = (signal.SIGTERM, signal.SIGINT)
        main = threading.current_thread() is threading.main_thread()
        previous = {number: signal.signal(number, forward) for number in handled} if main else {}
        try:
            with concurrent.futures.ThreadPoolExecutor(self.at_once) as executor:
                futures = [executor.submit(run_job, job) for job in jobs]
                while concurrent.futures.wait(futures, timeout=1.0).not_done:
                    pass  # a timeout, so that the main thread runs the signal handler promptly
                for future in futures:
                    future.result()  # a job's unexpected error (not a command's failure) is raised
        finally:
            for number, handler in previous.items():
                signal.signal(number, handler)
        if stopping:
            raise SweepStopped(stopping[0])
        if failures:
            raise failures[0]


def _ray_job(job: Job, threads: int) -> str:
    """A Ray task: the job's steps on this worker; returns where it ran. Written into the job's first
    log too, so a run retried after a lost worker shows both places."""
    import ray

    where = f"host {socket.gethostname()}, Ray node {ray.get_runtime_context().get_node_id()}"
    os.makedirs(os.path.dirname(job.steps[0][2]) or ".", exist_ok=True)
    with open(job.steps[0][2], "a") as log:
        log.write(f"[ray] {job.name} on {where}\n")
    for _, arguments, log_file in job.steps:
        run_command(arguments, log_file, threads)
    return where


class RayPool:
    """Runs jobs as Ray tasks on the cluster at ``address`` ("auto" or host:port), each asking for
    ``threads`` CPUs."""

    def __init__(self, address: str, threads: int = 1):
        try:
            import ray
        except ImportError:
            raise ValueError(
                f"--ray_address={address} needs Ray, which is not installed: pip install 'abc_tf[ray]'."
            ) from None
        host, _, port = address.rpartition(":")
        if address != "auto" and not (host and port.isdigit()):
            raise ValueError(f"--ray_address={address}: write auto or host:port (e.g. 10.0.0.5:6379).")
        if address != "auto":  # ray.init retries a silent address for minutes; a connection tells at once
            try:
                socket.create_connection((host, int(port)), timeout=ANSWER_SECONDS).close()
            except (OSError, ValueError) as error:
                raise ValueError(
                    f"--ray_address={address}: no Ray cluster answers there ({error})."
                ) from None
        try:
            ray.init(address=address, log_to_driver=False, configure_logging=False)
        except (ConnectionError, RuntimeError, ValueError) as error:
            first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
            raise ValueError(f"--ray_address={address}: no Ray cluster answers there ({first}).") from None
        self.ray, self.threads = ray, threads
        self.where = f"Ray at {address}, {threads} CPU(s) a run"

    def run(self, jobs: Sequence[Job], say: Callable[[str], None], label: str) -> None:
        task = self.ray.remote(num_cpus=self.threads, max_retries=RETRIES)(_ray_job)
        pending = {task.remote(job, self.threads): job for job in jobs}
        for job in jobs:
            say(f"[{label}] submitted {job.name}")
        try:
            while pending:
                (ready,), _ = self.ray.wait(list(pending), num_returns=1)
                job = pending.pop(ready)
                try:
                    where = self.ray.get(ready)
                except self.ray.exceptions.RayTaskError as error:  # a command failed: not retried
                    raise RuntimeError(str(getattr(error, "cause", error))) from None
                running = ", ".join(other.name for other in pending.values())
                say(f"[{label}] done {job.name} on {where} (running: {running})")
        except KeyboardInterrupt:
            for ref in pending:
                self.ray.cancel(ref)
            raise SweepStopped(signal.SIGINT) from None


def pool(parallel: int, cpus_per_run: int, runs: int, say: Callable[[str], None], ray_address: str = ""):
    """The pool the flags ask for: on Ray at ``ray_address``, else on this host with ``parallel`` runs
    at once (0: as many as the cores, at most ``runs``), each with ``cpus_per_run`` threads (0: the
    cores divided among them). More at once than cores is allowed, with one warning."""
    if parallel < 0:
        raise ValueError(f"--parallel must be 0 (as many as the cores) or a positive count, got {parallel}.")
    if cpus_per_run < 0:
        raise ValueError(f"--cpus_per_run must be 0 (a share of the cores) or positive, got {cpus_per_run}.")
    if ray_address:
        return RayPool(ray_address, cpus_per_run or 1)
    host = cores()
    at_once = parallel or max(1, min(host, runs))
    if at_once > host:
        say(
            f"warning: --parallel={at_once} runs more at once than this host's {host} cores; they share them."
        )
    # One run alone keeps TensorFlow's default threads, so its numbers are those of a plain train.py.
    threads = cpus_per_run or (max(1, host // at_once) if at_once > 1 else None)
    return LocalPool(at_once, threads)
