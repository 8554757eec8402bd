"""Re-initialising mpirep inside a test, and putting the suite's default runtime back after."""
import contextlib

import mpirep


@contextlib.contextmanager
def reinitialized(**config):
    mpirep.shutdown()
    try:
        mpirep.init(**config)
        yield
    finally:
        if mpirep.is_initialized():
            mpirep.shutdown()
        mpirep.init()
