"""Where mpirep's native sources are: native/ in a source tree, or the copy that an installed
mpirep ships as package data (mpirep/_native_src). Read by the settings table and by the build
of the TensorFlow op library; neither loads the native core."""

from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent
_CANDIDATES = (_PACKAGE / "_native_src", _PACKAGE.parent / "native")


def native_dir(*required):
    """The first candidate directory holding every path of ``required`` (relative to native/)."""
    for candidate in _CANDIDATES:
        if all((candidate / name).is_file() for name in required):
            return candidate
    raise FileNotFoundError(f"mpirep's native sources ({', '.join(required)}) were not found under "
                            f"{' or '.join(str(c) for c in _CANDIDATES)}")
