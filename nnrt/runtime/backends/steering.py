"""Whether a pool *packs* light traffic onto its first worker or spreads it: decided by trying.

Spreading requests over every worker is what a pool does by default elsewhere, and what heavy
models need. For light ones it can be the wrong call: when the client process and the workers
together want more CPUs than the machine has, each extra worker kept awake takes CPU from the
client, which then feeds every worker more slowly (2 cores, 64 tiny executes in flight: ~100k
executes/s spread over two workers, ~130k on one). No load figure tells the two cases apart
reliably: a packed worker with 64 requests in flight is never idle, yet spreading makes things
worse. So the pool measures: it runs in one mode, now and then tries the other for one short
window, compares completions per second with the windows on either side, and switches only for
a clear gain (:data:`GAIN`). Trials that change nothing come less and less often.

What packing may do is bounded whatever the trials say (``nnrt.runtime.backends.pool``): a request
goes to the packed worker only while the work queued there, its requests in flight times its CPU
cost per execute from its load reports, stays under :data:`PACK_DELAY`, and only for models
cheaper than :data:`PACK_MAX_SERVICE` per execute. A heavy model is never queued behind another.
"""

from __future__ import annotations

__all__ = [
    "FIRST_TRIAL",
    "GAIN",
    "MAX_TRIAL_INTERVAL",
    "MIN_COMPLETIONS",
    "PACK_DELAY",
    "PACK_MAX_SERVICE",
    "SETTLE",
    "WINDOW",
    "Steering",
    "pack_limit",
]

#: Seconds of one measurement window.
WINDOW = 0.02
#: Seconds left unmeasured after each change of mode (requests sent before it finish).
SETTLE = 0.005
#: Fewest completions in a window for it to count (less traffic: nothing worth deciding).
MIN_COMPLETIONS = 50
#: A trial wins only if it completed this much more per second than the windows around it
#: (the gains sought are 20-100 %; windows on a busy virtual machine differ by 10 % or more).
GAIN = 1.1
#: Seconds from one trial to the next after a switch; doubled after each trial that changed
#: nothing, up to :data:`MAX_TRIAL_INTERVAL`.
FIRST_TRIAL = 0.25
MAX_TRIAL_INTERVAL = 4.0
#: Longest queue (seconds of work: in flight x CPU per execute) packing builds on one worker.
PACK_DELAY = 0.001
#: Models costing more CPU seconds per execute than this are never packed: the runtime's own
#: cost per request is then too small a share for packing to win anything worth a wait.
PACK_MAX_SERVICE = 0.00005


def pack_limit(service_time: float, max_in_flight: int) -> int:
    """How many requests in flight a worker that costs ``service_time`` CPU seconds per execute
    may hold and still take one more while packing (0: never packed)."""
    if not 0 < service_time <= PACK_MAX_SERVICE:
        return 0
    return min(max_in_flight, int(PACK_DELAY / service_time))


class Steering:
    """The packing decision of one pool: the current mode and when the next trial is due.

    The pool's steering task calls :meth:`trial_due` after each window of the current mode and,
    after a trial, :meth:`decide` with the three rates (completions per second); times are
    ``time.monotonic()`` seconds. A trial that wins is confirmed by a second one at once before
    the mode switches: a single window can be lucky (a worker still warming up, the host
    stealing time from the other windows).
    """

    __slots__ = ("fixed", "interval", "next_trial", "packing", "switches", "trials", "wins")

    def __init__(self, *, packing: bool = True) -> None:
        #: Whether light requests go to the first worker (the default: see the module).
        self.packing = packing
        #: Seconds from the last trial to the next one.
        self.interval = FIRST_TRIAL
        #: When the next trial is due (0: at the first window with traffic).
        self.next_trial = 0.0
        #: Trials in a row that the other mode won (a second one switches).
        self.wins = 0
        #: Trials run and switches made so far (statistics, tests).
        self.trials = 0
        self.switches = 0
        #: Whether :attr:`packing` was set by :meth:`fix` (no trials then).
        self.fixed = False

    def fix(self, packing: bool | None) -> None:
        """Pack (True) or spread (False) from now on without trying the other mode, or (None)
        go back to deciding by trials, starting with the next window."""
        self.fixed = packing is not None
        if packing is not None:
            self.packing = packing
        self.wins, self.interval, self.next_trial = 0, FIRST_TRIAL, 0.0

    def trial_due(self, now: float) -> bool:
        """Whether the next window should try the other mode."""
        return not self.fixed and now >= self.next_trial

    def decide(self, before: float, trial: float, after: float, now: float) -> bool:
        """Take a trial's outcome: the other mode wins if the trial's rate beats the mean of
        the windows before and after it by :data:`GAIN`; two wins in a row switch the mode.
        Returns whether the mode switched."""
        self.trials += 1
        if trial >= GAIN * (before + after) / 2:
            self.wins += 1
            if self.wins < 2:
                self.next_trial = now  # confirm at once
                return False
            self.packing = not self.packing
            self.switches += 1
            self.wins = 0
            self.interval = FIRST_TRIAL
            self.next_trial = now + self.interval
            return True
        self.wins = 0
        self.interval = min(self.interval * 2, MAX_TRIAL_INTERVAL)
        self.next_trial = now + self.interval
        return False
