"""Builds the TensorFlow op library (native/bindings/tensorflow) against the installed TensorFlow,
once, into a cache directory keyed by the TensorFlow version and a hash of the sources and flags.

Installing mpirep never compiles it: the first use does (or `python -m mpirep.tensorflow.build`,
ahead of a job), and a failure only makes the caller fall back to the numpy_function bridge.
Ranks starting together take a file lock, so one rank per cache directory compiles, saying so
on stderr, while the others wait quietly for its result.
"""

import fcntl
import hashlib
import os
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

import tensorflow as tf

from mpirep._source_tree import native_dir

# The op library's source, then every header it includes.
_SOURCE_NAMES = ("bindings/tensorflow/mpirep_tf_ops.cc", "bindings/tensorflow/tf_compat.h",
                 "bindings/c_api.h", "core/common.h")


class BuildError(RuntimeError):
    """The op library could not be compiled; the message carries the compiler's output."""


def _source_dir():
    try:
        return native_dir(*_SOURCE_NAMES)
    except FileNotFoundError as error:
        raise BuildError(str(error)) from None


def _cache_root():
    if os.environ.get("MPIREP_CACHE_DIR"):
        return Path(os.environ["MPIREP_CACHE_DIR"])
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "mpirep"


def _compiler():
    return (os.environ.get("CXX") or sysconfig.get_config_var("CXX") or "g++").split()


def _command(sources, output):
    return (_compiler()
            + ["-shared", "-fPIC", "-O2", "-Wno-deprecated-declarations", f"-I{sources}"]
            + tf.sysconfig.get_compile_flags()
            + [str(sources / _SOURCE_NAMES[0]), "-o", str(output)]
            + tf.sysconfig.get_link_flags())


def _location():
    """(sources, cache entry, library file). The entry is keyed by the TensorFlow version and a
    hash of the sources and flags, but not of the compiler's name: a library built on a login
    node is found on compute nodes whose CXX differs, or that have no compiler at all."""
    sources = _source_dir()
    digest = hashlib.sha256()
    for name in _SOURCE_NAMES:
        digest.update((sources / name).read_bytes())
    digest.update(" ".join(_command(sources, "out")[len(_compiler()):]).encode())
    directory = _cache_root() / f"tf-{tf.__version__}-{digest.hexdigest()[:16]}"
    return sources, directory, directory / "mpirep_tf_ops.so"


def cached_library():
    """The built library, or None if this TensorFlow's is not built yet. Compiles nothing."""
    library = _location()[2]
    return library if library.is_file() else None


def library_path():
    """The path of the built library, compiling it first if the cache lacks it."""
    sources, directory, library = _location()
    if library.is_file():
        return library
    directory.mkdir(parents=True, exist_ok=True)
    with open(directory / "build.lock", "w") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:  # another process is compiling it: wait for its result
            fcntl.flock(lock, fcntl.LOCK_EX)
        if not library.is_file():  # not built meanwhile (or the other process failed)
            _compile_saying_so(sources, directory, library)
    return library


def _compile_saying_so(sources, directory, library):
    """Compiles, with a line on stderr before and after: without them the first collective
    seems to hang for as long as the compiler runs."""
    print(f"mpirep: compiling the TensorFlow op library for TensorFlow {tf.__version__} into "
          f"{directory}. This takes about half a minute, once: later runs with this TensorFlow "
          "reuse it (`python -m mpirep.tensorflow.build` builds it ahead of a job).",
          file=sys.stderr, flush=True)
    started = time.monotonic()
    _compile(sources, directory, library)
    print(f"mpirep: the TensorFlow op library is ready ({time.monotonic() - started:.0f} s).",
          file=sys.stderr, flush=True)


def _compile(sources, directory, library):
    fd, scratch = tempfile.mkstemp(suffix=".so", dir=directory)
    os.close(fd)
    try:
        result = subprocess.run(_command(sources, scratch), capture_output=True, text=True)
        if result.returncode != 0:
            raise BuildError(result.stderr[-4000:])
        os.replace(scratch, library)  # atomic: no rank ever loads a half-written library
    except OSError as error:
        raise BuildError(str(error)) from error
    finally:
        if os.path.exists(scratch):
            os.unlink(scratch)
