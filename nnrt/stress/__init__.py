"""The stress harness behind ``nnrt stress``: mixed traffic from many client processes against
a shared service and embedded pools, with workers killed under it, every result checked and
every leak counted. See ``docs/reliability.md``.
"""

from nnrt.stress.harness import StressConfig as StressConfig
from nnrt.stress.harness import run_stress as run_stress
from nnrt.stress.leaks import LeakAccount as LeakAccount
from nnrt.stress.leaks import RssSeries as RssSeries
from nnrt.stress.outcomes import Tally as Tally
from nnrt.stress.outcomes import classify_error as classify_error
from nnrt.stress.outcomes import results_match as results_match
from nnrt.stress.report import StressReport as StressReport

__all__ = ["LeakAccount", "RssSeries", "StressConfig", "StressReport", "Tally",
           "classify_error", "results_match", "run_stress"]
