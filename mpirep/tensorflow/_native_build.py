"""Builds the TensorFlow op library (native/bindings/tensorflow) against the installed TensorFlow,
once, into a cache directory keyed by the TensorFlow version and a hash of the sources and flags.

Installing mpirep never compiles it: the first use does, and a failure only makes the caller
fall back to the numpy_function bridge. Ranks starting together take a file lock, so one rank
compiles while the others wait for its result.
"""

import fcntl
import hashlib
import os
import subprocess
import sysconfig
import tempfile
from pathlib import Path

import tensorflow as tf

from mpirep._native_sources import native_dir

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


def _command(sources, output):
    compiler = os.environ.get("CXX") or sysconfig.get_config_var("CXX") or "g++"
    return (compiler.split()
            + ["-shared", "-fPIC", "-O2", "-Wno-deprecated-declarations", f"-I{sources}"]
            + tf.sysconfig.get_compile_flags()
            + [str(sources / _SOURCE_NAMES[0]), "-o", str(output)]
            + tf.sysconfig.get_link_flags())


def library_path():
    """The path of the built library, compiling it first if the cache lacks it."""
    sources = _source_dir()
    digest = hashlib.sha256()
    for name in _SOURCE_NAMES:
        digest.update((sources / name).read_bytes())
    digest.update(" ".join(_command(sources, "out")).encode())
    directory = _cache_root() / f"tf-{tf.__version__}-{digest.hexdigest()[:16]}"
    library = directory / "mpirep_tf_ops.so"
    if library.is_file():
        return library
    directory.mkdir(parents=True, exist_ok=True)
    with open(directory / "build.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not library.is_file():
            _compile(sources, directory, library)
    return library


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
