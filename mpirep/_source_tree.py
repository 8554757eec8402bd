"""Finds mpirep's native source files: native/ in a checkout, or the copy of the files an
installed mpirep needs that its wheel ships as package data (mpirep/_native_copy: the settings
table, and the TensorFlow op library's sources with the headers they include). Used by the
settings table and by the op library's build; neither loads the native core."""

from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent
_CANDIDATES = (_PACKAGE / "_native_copy", _PACKAGE.parent / "native")


def native_dir(*required):
    """The first candidate directory holding every path of ``required`` (relative to native/)."""
    for candidate in _CANDIDATES:
        if all((candidate / name).is_file() for name in required):
            return candidate
    raise FileNotFoundError(f"mpirep's native sources ({', '.join(required)}) were not found under "
                            f"{' or '.join(str(c) for c in _CANDIDATES)}")
