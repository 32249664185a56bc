"""The worker's poll window: how long a worker keeps polling for requests after its last execute.

Both sides need it: the runtime checks ``Runtime(poll_window=...)`` and passes it to the workers it
spawns (``--poll-window``), and the worker service (:mod:`nnrt.worker.service`) polls that long
before it sleeps, so that a request sent soon after does not pay for waking it up. A worker
whose client sends its next request a little later than that every time (it copies a large
input into shared memory first, say) polls for that client's turnaround instead
(:class:`Turnaround`), up to :data:`MAX_TURNAROUND`.
"""

__all__ = ["DEFAULT_POLL_WINDOW", "MAX_POLL_WINDOW", "MAX_TURNAROUND", "Turnaround"]

#: Default seconds the loop keeps polling after its last execute before it sleeps.
DEFAULT_POLL_WINDOW = 0.00025
#: Longest polling window accepted (a longer one only burns CPU).
MAX_POLL_WINDOW = 0.01
#: Longest a worker polls for a client's usual turnaround (seconds): a client that takes longer
#: to send its next request is not waited for (measured: a 0.8 MB image input sent back to
#: back arrives 0.3 ms after the reply; waking a sleeping worker cost ~20 us more, and its
#: first steps ran colder).
MAX_TURNAROUND = 0.001
#: Weight of the newest turnaround in the running mean.
_WEIGHT = 0.2


class Turnaround:
    """The running mean of the time from a worker's answer to the next execute request it
    reads, and the polling window that follows from it.

    Each sample is capped at twice :data:`MAX_TURNAROUND` (a client pausing for a second
    weighs like one that does not come back soon, no more), so a few pauses in a stream of
    back-to-back requests move the mean only a little.
    """

    __slots__ = ("mean",)

    def __init__(self) -> None:
        self.mean = 0.0

    def observe(self, seconds: float) -> None:
        """A request arrived ``seconds`` after the previous answer."""
        self.mean += _WEIGHT * (min(seconds, 2 * MAX_TURNAROUND) - self.mean)

    def window(self, poll_window: float) -> float:
        """Seconds to poll after an answer: ``poll_window``, or longer (a quarter more than
        the mean turnaround) while the mean stays within :data:`MAX_TURNAROUND`; 0 stays 0
        (polling off)."""
        mean = self.mean
        if not poll_window or mean > MAX_TURNAROUND or 1.25 * mean <= poll_window:
            return poll_window
        return min(1.25 * mean, MAX_TURNAROUND)
