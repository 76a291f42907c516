"""``--trainer.jit_compile=auto``: the run's first compiled calls time the plain graph and XLA, and
it trains on with the faster.

Which of the two runs a step faster depends on the step and on the CPU: on two x86_64 CPUs the same
64 x 64 CC-VAE step ranked them in opposite orders. So ``auto`` measures on the host, during the run:
the timed calls are training calls, and no step is repeated or thrown away. The model is compiled
for the plain graph (:meth:`abc_tf.methods.base.MethodModel.compile_for`). After
:data:`WARMUP_CALLS` calls (tracing) :class:`ChooseCompile` times :data:`TIMED_CALLS`, rebuilds the
train function with XLA, and after its warm-up (XLA's compile) times as many again. It keeps XLA
if XLA's median call is the shorter, else it goes back to the plain graph's function, traced
already. An XLA call :data:`GIVE_UP_RATIO` times the graph's median or slower ends the timing at
once: XLA can run a step tens of times slower (LORD's convolutions inside a ``tf.cond``).

XLA's compile and the slower mode's calls cost time whichever mode wins: seconds for a small step,
a minute or more for a large one. So a run with less than :data:`MIN_SECONDS_LEFT` left at the plain
graph's rate stays in the plain graph without trying XLA: a run of a minute or two has little to
gain and could lose more than it gains, while a run of tens of minutes gains what XLA saves on
every call (or loses no more than the timing, when the graph wins).
"""

from __future__ import annotations

import statistics
import time
from typing import Callable

import keras

WARMUP_CALLS = 1  # per mode: the first call traces, and under XLA compiles
TIMED_CALLS = 3  # per mode, after the warm-up; their median is compared
GIVE_UP_RATIO = 2.0
MIN_SECONDS_LEFT = 300.0  # 5 minutes, as the flag's help (abc_tf/config.py) and docs/EXPERIMENTS.md say
# A run times both modes only when the timing is at most this share of its calls, so that a short
# run (a test, a smoke run) does not spend most of its time compiling XLA.
TIMED_SHARE = 0.25
CALLS_NEEDED = round(2 * (WARMUP_CALLS + TIMED_CALLS) / TIMED_SHARE)


def should_choose(jit_compile: str, strategy: str, calls: int) -> bool:
    """Whether a fit of ``calls`` compiled calls times the two modes.

    Only under ``auto``, on one device (the default strategy: Keras leaves XLA under
    a distribution strategy to the user), and when the fit has :data:`CALLS_NEEDED` calls.
    Otherwise ``auto`` trains in the plain graph.
    """
    return jit_compile == "auto" and strategy == "default" and calls >= CALLS_NEEDED


class ChooseCompile(keras.callbacks.Callback):
    """Times the plain graph, then XLA, on the first of the fit's ``calls`` calls, and keeps the faster.

    ``choice`` is ``"graph"`` or ``"xla"`` once made; ``seconds`` the median call times (an XLA
    given up on counts its one timed call; a run too short to try XLA has the graph's alone).
    ``clock`` is for tests.
    """

    def __init__(self, calls: int, verbose: bool = True, clock: Callable[[], float] = time.perf_counter):
        super().__init__()
        self.total_calls = calls
        self.verbose = verbose
        self.clock = clock
        self.mode = "graph"
        self.calls = 0  # calls run in the current mode
        self.calls_run = 0  # in both modes
        self.times: dict[str, list[float]] = {"graph": [], "xla": []}
        self.choice: str | None = None
        self.seconds: dict[str, float] = {}
        self._graph_function = None
        self._started = 0.0

    def on_train_batch_begin(self, batch, logs=None):
        if self.choice is None:
            self._started = self.clock()

    def on_train_batch_end(self, batch, logs=None):
        # Keras calls this once a call's logs are read back, so the call has finished.
        if self.choice is None:
            elapsed = self.clock() - self._started
            self.calls += 1
            self.calls_run += 1
            if self.calls > WARMUP_CALLS:
                self.times[self.mode].append(elapsed)
            self._next()

    def _next(self) -> None:
        graph, xla = self.times["graph"], self.times["xla"]
        if self.mode == "graph" and len(graph) == TIMED_CALLS:
            call = statistics.median(graph)
            if (self.total_calls - self.calls_run) * call < MIN_SECONDS_LEFT:
                self._choose(
                    "graph",
                    f"calls of {self.model.steps_per_execution} step(s) took {call:.3f} s in the plain "
                    f"graph (median), which leaves under {MIN_SECONDS_LEFT / 60:g} min of training: too "
                    "little for XLA's compile to pay",
                )
                return
            self._graph_function = self.model.train_function
            self.model.jit_compile = True  # Keras sets False, with a warning, for a model XLA cannot run
            if not self.model.jit_compile:
                self._choose("graph", "Keras cannot compile this model with XLA")
                return
            self.mode, self.calls = "xla", 0
            self.model.make_train_function(force=True)
        elif self.mode == "xla" and xla:
            if len(xla) == TIMED_CALLS or xla[-1] >= GIVE_UP_RATIO * statistics.median(graph):
                self._choose("xla" if statistics.median(xla) < statistics.median(graph) else "graph")

    def _choose(self, mode: str, without_xla: str = "") -> None:
        """Keeps ``mode``; ``without_xla``: why XLA was not timed."""
        self.choice = mode
        self.seconds = {name: statistics.median(times) for name, times in self.times.items() if times}
        if mode == "graph" and self._graph_function is not None:
            self.model.jit_compile = False
            self.model.train_function = self._graph_function
        if not self.verbose:
            return
        if without_xla:
            said = without_xla
        else:
            said = f"calls of {self.model.steps_per_execution} step(s) took " + " and ".join(
                f"{seconds:.3f} s {'with XLA' if name == 'xla' else 'in the plain graph'}"
                for name, seconds in self.seconds.items()
            )
            said += " (medians)"
        kept = "with XLA" if mode == "xla" else "in the plain graph"
        print(f"--trainer.jit_compile=auto: {said}; training on {kept}.", flush=True)
