"""Writing a backup so that it is either the old one or the new one, never a mixture: the new
one goes to a temporary name in the same directory, is flushed to disk, and takes the final
name by a rename, which POSIX makes atomic."""

import contextlib
import os
import tempfile

#: A test hook, None in use: when set, ``atomic_write`` calls it with the temporary file's name
#: and the final path once the new content is on disk and before it replaces the old, so that
#: a test can hold a save open at exactly that point (tests/cluster/preemption_job.py).
before_replace = None


def _fsync_directory(path):
    descriptor = os.open(path, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


@contextlib.contextmanager
def atomic_write(path):
    """Yields a temporary file name next to ``path``; when the block ends without an exception
    that file replaces ``path``, and otherwise it is removed."""
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    descriptor, temporary = tempfile.mkstemp(prefix=".partial-", dir=directory,
                                             suffix=os.path.splitext(path)[1])
    os.close(descriptor)
    try:
        yield temporary
        with open(temporary, "rb+") as written:
            os.fsync(written.fileno())
        if before_replace is not None:
            before_replace(temporary, path)
        os.replace(temporary, path)
        _fsync_directory(directory)
    finally:
        if os.path.exists(temporary):
            os.remove(temporary)
