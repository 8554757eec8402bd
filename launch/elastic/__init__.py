"""mpirep-run in elastic mode: the driver that runs a job as generations of ranks on the hosts
that are there (docs/elastic.md, which maps every layer of elastic training; the ranks' side is
mpirep/elastic).  It builds on the same job and plan code as a plain launch.

Only ``requested`` is loaded with the launcher: the driver shares its protocol with the ranks
(mpirep.elastic.protocol), so it is imported when elastic mode is used, and importing the
launcher stays free of mpirep's package."""
from .config import requested

__all__ = ["launch", "requested"]


def launch(args, environ, say):
    from .start import start

    return start(args, environ, say)
