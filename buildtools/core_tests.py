"""Builds the C++ unit tests of native/core (native/tests) and runs them:
`python -m buildtools.core_tests [BUILD_DIR]` from the checkout's root.

core/ and the tests are compiled with AddressSanitizer and UBSan, with native/ as the only
include directory and no MPI flags, and linked without libmpi: the unit tests are also the
proof that core/ needs no MPI. The binary is cached in BUILD_DIR under a hash of every native
source and header, so an unchanged tree is not rebuilt.
"""

import hashlib
import os
import subprocess
import sys
import tempfile

from buildtools.native import CXX_STANDARD, INCLUDE_DIR, ROOT, headers, sources

FLAGS = [f"-std=c++{CXX_STANDARD}", "-O0", "-g", "-fsanitize=address,undefined",
         "-fno-sanitize-recover=undefined"]


def _sources():
    return sources("tests") + sources("core")


def build(directory):
    """Compiles each source in parallel and links; returns the binary's path."""
    digest = hashlib.sha256()
    for path in headers() + _sources():
        digest.update(path.encode())
        with open(os.path.join(ROOT, path), "rb") as f:
            digest.update(f.read())
    binary = os.path.join(directory, f"core_tests-{digest.hexdigest()[:16]}")
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
        sys.exit("\n".join(errors))
    subprocess.run([compiler, *FLAGS, *objects, "-o", binary, "-lpthread"], check=True)
    return binary


def main():
    directory = sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp(prefix="mpirep-core-tests-")
    os.makedirs(directory, exist_ok=True)
    sys.exit(subprocess.run([build(directory)]).returncode)


if __name__ == "__main__":
    main()
