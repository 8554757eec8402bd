"""Builds the TensorFlow op libraries (native/bindings/tensorflow) against the installed
TensorFlow, once, into a cache directory keyed by the TensorFlow version and a hash of the sources
and flags: the op library of graph mode, and the XLA kernels (mpirep_tf_xla.cc), which need
TensorFlow's XLA headers and libtensorflow_cc and are optional (docs/tensorflow.md, "XLA and GPU
nodes").

Installing mpirep never compiles them: the first use does (or `python -m mpirep.tensorflow.build`,
ahead of a job). A failure to build the op library only makes the caller fall back to the
numpy_function bridge; one to build the XLA kernels is remembered in the cache entry and said only
when a jit-compiled function holds a collective.
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


class _Library:
    """One library: its source, then every header of ours it includes, and its file's name."""

    def __init__(self, file_name, sources, xla=False):
        self.file_name = file_name
        self.sources = sources
        self.xla = xla


OPS = _Library("mpirep_tf_ops.so", ("bindings/tensorflow/mpirep_tf_ops.cc",
                                    "bindings/tensorflow/tf_compat.h",
                                    "bindings/tensorflow/tf_core_link.h", "bindings/c_api.h",
                                    "core/common.h"))
XLA = _Library("mpirep_tf_xla.so", ("bindings/tensorflow/mpirep_tf_xla.cc",
                                    "bindings/tensorflow/tf_core_link.h", "bindings/c_api.h",
                                    "core/common.h"), xla=True)


class BuildError(RuntimeError):
    """The op library could not be compiled; the message carries the compiler's output."""


def _source_dir(library):
    try:
        return native_dir(*library.sources)
    except FileNotFoundError as error:
        raise BuildError(str(error)) from None


def _cache_root():
    if os.environ.get("MPIREP_CACHE_DIR"):
        return Path(os.environ["MPIREP_CACHE_DIR"])
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "mpirep"


def _compiler():
    return (os.environ.get("CXX") or sysconfig.get_config_var("CXX") or "g++").split()


def _xla_flags():
    """What the XLA kernels need beyond the op library's flags. The XLA headers TensorFlow ships
    include two third-party libraries by paths its own flags do not name, and the tf2xla and
    XLA builder symbols live in libtensorflow_cc, which get_link_flags() leaves out."""
    include = Path(tf.sysconfig.get_include())
    package = Path(tf.sysconfig.get_lib())
    return ([f"-I{include / 'external' / 'highwayhash'}",
             f"-I{include / 'external' / 'farmhash_archive' / 'src'}"],
            [f"-L{package}", "-l:libtensorflow_cc.so.2", f"-Wl,-rpath,{package}",
             "-Wl,--no-undefined"])


def _command(library, sources, output):
    compile_extra, link_extra = _xla_flags() if library.xla else ([], [])
    return (_compiler()
            + ["-shared", "-fPIC", "-O2", "-Wno-deprecated-declarations", f"-I{sources}"]
            + tf.sysconfig.get_compile_flags() + compile_extra
            + [str(sources / library.sources[0]), "-o", str(output)]
            + tf.sysconfig.get_link_flags() + link_extra)


def _location(library):
    """(sources, cache entry, library file). The entry is keyed by the TensorFlow version and a
    hash of the sources and flags, but not of the compiler's name: a library built on a login
    node is found on compute nodes whose CXX differs, or that have no compiler at all."""
    sources = _source_dir(library)
    digest = hashlib.sha256()
    for name in library.sources:
        digest.update((sources / name).read_bytes())
    digest.update(" ".join(_command(library, sources, "out")[len(_compiler()):]).encode())
    directory = _cache_root() / f"tf-{tf.__version__}-{digest.hexdigest()[:16]}"
    return sources, directory, directory / library.file_name


def cached_library(library=OPS):
    """The built library, or None if this TensorFlow's is not built yet. Compiles nothing."""
    path = _location(library)[2]
    return path if path.is_file() else None


def library_path(library=OPS):
    """The path of the built library, compiling it first if the cache lacks it. A failed build
    is remembered in the cache entry, so that each process does not try again."""
    sources, directory, path = _location(library)
    if path.is_file():
        return path
    failed = directory / "build-failed.txt"
    if failed.is_file():
        raise BuildError(failed.read_text())
    directory.mkdir(parents=True, exist_ok=True)
    with open(directory / "build.lock", "w") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:  # another process is compiling it: wait for its result
            fcntl.flock(lock, fcntl.LOCK_EX)
        if failed.is_file():  # the other process failed
            raise BuildError(failed.read_text())
        if not path.is_file():  # not built meanwhile
            _compile_saying_so(library, sources, directory, path)
    return path


def _compile_saying_so(library, sources, directory, path):
    """Compiles, with a line on stderr before and after: without them the first collective
    seems to hang for as long as the compiler runs."""
    what, verb, takes = (("XLA kernels", "are", "a minute") if library.xla
                         else ("op library", "is", "half a minute"))
    print(f"mpirep: compiling the TensorFlow {what} for TensorFlow {tf.__version__} into "
          f"{directory}. This takes about {takes}, once: later runs with this TensorFlow "
          "reuse it (`python -m mpirep.tensorflow.build` builds it ahead of a job).",
          file=sys.stderr, flush=True)
    started = time.monotonic()
    try:
        _compile(library, sources, directory, path)
    except BuildError as error:
        if not library.xla:
            raise
        # Optional: said only when a jit-compiled function needs them (mpirep/tensorflow/_xla.py).
        (directory / "build-failed.txt").write_text(str(error))
        print(f"mpirep: the TensorFlow {what} could not be built; XLA-compiled functions cannot "
              "hold mpirep's collectives with this TensorFlow.", file=sys.stderr, flush=True)
        raise
    print(f"mpirep: the TensorFlow {what} {verb} ready ({time.monotonic() - started:.0f} s).",
          file=sys.stderr, flush=True)


def _compile(library, sources, directory, path):
    fd, scratch = tempfile.mkstemp(suffix=".so", dir=directory)
    os.close(fd)
    try:
        result = subprocess.run(_command(library, sources, scratch), capture_output=True,
                                text=True)
        if result.returncode != 0:
            raise BuildError(result.stderr[-4000:])
        os.replace(scratch, path)  # atomic: no rank ever loads a half-written library
    except OSError as error:
        raise BuildError(str(error)) from error
    finally:
        if os.path.exists(scratch):
            os.unlink(scratch)
