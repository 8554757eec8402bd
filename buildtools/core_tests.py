"""Builds the C++ unit tests of native/core (native/tests) and runs them, from the checkout's root:

    python -m buildtools.core_tests [--build-dir DIR] [--list | SUITE|SUITE.TEST ...]

core/ and the tests are compiled with AddressSanitizer and UBSan, with native/ as the only
include directory and no MPI flags, and linked without libmpi: the unit tests are also the
proof that core/ needs no MPI. The binary is cached in the build directory under a hash of
every native source and header, so an unchanged tree is not rebuilt; a new binary replaces the
older ones there. The binary's own arguments (native/tests/main.cc) select suites or tests, or
list them.
"""

import argparse
import glob
import hashlib
import os
import subprocess
import sys
import tempfile

from buildtools.native import CXX_FLAGS, INCLUDE_DIR, ROOT, headers, sources

# -g1: the line tables a sanitizer report needs, at a fifth less compile time than -g
FLAGS = CXX_FLAGS + ["-O0", "-g1", "-fsanitize=address,undefined", "-fno-sanitize-recover=undefined"]
PREFIX = "core_tests-"


class BuildError(RuntimeError):
    """A test source did not compile; the message holds the compiler's errors."""


def _sources():
    return sources("tests") + sources("core")


def build(directory):
    """Compiles each source in parallel and links; returns the binary's path. Raises BuildError."""
    digest = hashlib.sha256()
    for path in headers() + _sources():
        digest.update(path.encode())
        with open(os.path.join(ROOT, path), "rb") as f:
            digest.update(f.read())
    binary = os.path.join(directory, PREFIX + digest.hexdigest()[:16])
    if os.path.exists(binary):
        return binary
    compiler = os.environ.get("CXX", "g++")
    objects, jobs = [], []
    for source in _sources():
        obj = os.path.join(directory, source.replace(os.sep, "_") + ".o")
        objects.append(obj)
        jobs.append(subprocess.Popen([compiler, *FLAGS, f"-I{INCLUDE_DIR}", "-c", source, "-o", obj],
                                     cwd=ROOT, stderr=subprocess.PIPE, text=True))
    errors = [job.communicate()[1] for job in jobs if job.wait() != 0]
    if errors:
        raise BuildError("\n".join(errors))
    for older in glob.glob(os.path.join(directory, PREFIX + "*")):
        os.unlink(older)
    subprocess.run([compiler, *FLAGS, *objects, "-o", binary, "-lpthread"], check=True)
    return binary


def main():
    parser = argparse.ArgumentParser(prog="python -m buildtools.core_tests",
                                     description="Build and run the C++ unit tests of native/core.")
    parser.add_argument("--build-dir", help="where objects and the binary are kept "
                                            "(default: a new temporary directory)")
    parser.add_argument("--list", action="store_true", help="list the tests, one SUITE.TEST a line")
    parser.add_argument("tests", nargs="*", metavar="SUITE|SUITE.TEST",
                        help="run only these (default: all)")
    args = parser.parse_args()
    directory = args.build_dir or tempfile.mkdtemp(prefix="mpirep-core-tests-")
    os.makedirs(directory, exist_ok=True)
    try:
        binary = build(directory)
    except BuildError as error:
        sys.exit(str(error))
    sys.exit(subprocess.run([binary] + (["--list"] if args.list else args.tests)).returncode)


if __name__ == "__main__":
    main()
