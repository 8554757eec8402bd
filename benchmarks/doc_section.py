"""Rewriting one "## " section of a Markdown file, as the benchmarks do with docs/benchmarks.md."""


def replace_section(doc, heading, new):
    """``doc`` with the section that starts at the line ``heading`` replaced by ``new`` (up to
    the next "## " heading), or with ``new`` appended when there is no such section."""
    start = doc.find(heading + "\n")
    if start < 0:
        return doc.rstrip("\n") + "\n\n" + new
    end = doc.find("\n## ", start + len(heading))
    tail = doc[end + 1:] if end >= 0 else ""
    return doc[:start] + new + ("\n" + tail if tail else "")
