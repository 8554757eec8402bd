"""What each rank of an ``mpirep.run`` job runs (``python -m mpirep.function_rank``): fetch the
function from the caller, call it, send back its result or its error
(mpirep/function_job.py)."""
import importlib
import importlib.util
import os
import pickle
import sys
import traceback
from multiprocessing.connection import Client

from mpirep.function_job import ADDRESS_VARIABLE, KEY_VARIABLE

MAIN_ALIAS = "__mp_main__"


def _address():
    host, _, port = os.environ[ADDRESS_VARIABLE].rpartition(":")
    return host, int(port)


def _ask(message, answer=True):
    with Client(_address(), authkey=bytes.fromhex(os.environ[KEY_VARIABLE])) as connection:
        connection.send(message)
        return connection.recv_bytes() if answer else None


def _load_main(path):
    """The caller's main script as a module named __mp_main__, and as __main__, so that pickle
    finds the functions it defines; its __main__ block does not run."""
    spec = importlib.util.spec_from_file_location(MAIN_ALIAS, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[MAIN_ALIAS] = sys.modules["__main__"] = module
    spec.loader.exec_module(module)


def _rank():
    from mpi4py import MPI

    return MPI.COMM_WORLD.Get_rank()


def _error_blob(module, error):
    text = f"{type(error).__name__}: {error}"
    try:
        exception = module.dumps(error)
    except Exception:
        exception = None
    return text, traceback.format_exc(), exception


def main():
    rank = _rank()
    module_name, main_path, script_dir, blob = pickle.loads(_ask(("function", rank)))
    module = importlib.import_module(module_name)
    sys.path.insert(0, script_dir)
    try:
        if main_path:
            _load_main(main_path)
        result = module.dumps(module.loads(blob)())
    except BaseException as error:  # noqa: B902  (SystemExit too: the caller hears of it)
        _ask(("result", rank, False, _error_blob(module, error)), answer=False)
        from mpirep import session

        if session.is_initialized():   # the other ranks fail now, naming this one
            session.shutdown(f"{type(error).__name__}: {error}")
        return 1
    _ask(("result", rank, True, result), answer=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
