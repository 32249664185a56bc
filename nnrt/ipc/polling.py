"""The worker's poll window: how long a worker keeps polling for requests after its last execute.

Both sides need it: the runtime checks ``Runtime(poll_window=...)`` and passes it to the workers it
spawns (``--poll-window``), and the worker service (:mod:`nnrt.worker.service`) polls that long
before it sleeps, so that a request sent soon after does not pay for waking it up.
"""

__all__ = ["DEFAULT_POLL_WINDOW", "MAX_POLL_WINDOW"]

#: Default seconds the loop keeps polling after its last execute before it sleeps.
DEFAULT_POLL_WINDOW = 0.00025
#: Longest polling window accepted (a longer one only burns CPU).
MAX_POLL_WINDOW = 0.01
