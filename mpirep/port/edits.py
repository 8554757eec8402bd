"""Source edits located by ``ast`` positions and applied to the exact text, so that everything
outside an edited span (comments, blank lines, quoting, layout) stays byte for byte."""
import ast
from dataclasses import dataclass


@dataclass(frozen=True)
class Edit:
    start: int          # character offsets into the source
    end: int
    text: str           # what replaces source[start:end]
    line: int
    what: str           # one line for the report


@dataclass(frozen=True)
class Flag:
    line: int
    reason: str
    fix: str


class Source:
    """The text of a script and the character offset of every ``ast`` position in it."""

    def __init__(self, text):
        self.text = text
        self.lines = text.splitlines(keepends=True)
        self._line_starts = [0]
        for line in self.lines:
            self._line_starts.append(self._line_starts[-1] + len(line))

    def offset(self, lineno, col_offset):
        """ast's columns count UTF-8 bytes; the edits count characters."""
        line = self.lines[lineno - 1] if lineno <= len(self.lines) else ""
        return self._line_starts[lineno - 1] + len(line.encode()[:col_offset].decode(errors="ignore"))

    def start(self, node):
        return self.offset(node.lineno, node.col_offset)

    def end(self, node):
        return self.offset(node.end_lineno, node.end_col_offset)

    def segment(self, node):
        return self.text[self.start(node):self.end(node)]

    def replace(self, node, text, what):
        return Edit(self.start(node), self.end(node), text, node.lineno, what)

    def remove_keyword(self, call, keyword, what):
        """An edit that removes ``keyword`` from ``call``'s arguments with one of the commas
        around it, and the blank space it leaves on its own line."""
        arguments = sorted([*call.args, *call.keywords], key=lambda n: (n.lineno, n.col_offset))
        index = arguments.index(keyword)
        start, end = self.start(keyword), self.end(keyword)
        if index > 0 and "#" in self.text[self.end(arguments[index - 1]):start]:
            # a comment between: keep it, and take the keyword's own line
            start = self._line_start(start)
            end = self._past_line_end(self._past_trailing_comma(end))
        elif index > 0:  # from the end of the argument before: ", kw=value"
            start = self.end(arguments[index - 1])
        elif len(arguments) > 1:  # the first of several: "kw=value, "
            end = self.start(arguments[1])
        else:  # the only one; a trailing comma goes too
            end = self._past_trailing_comma(end)
        return Edit(start, end, "", keyword.lineno, what)

    def _line_start(self, position):
        return self.text.rfind("\n", 0, position) + 1

    def _past_line_end(self, position):
        rest = self.text[position:]
        stripped = rest.lstrip(" \t")
        return position + len(rest) - len(stripped) + (1 if stripped.startswith("\n") else 0)

    def _past_trailing_comma(self, position):
        rest = self.text[position:]
        stripped = rest.lstrip(" \t")
        if stripped.startswith(","):
            return position + len(rest) - len(stripped) + 1
        return position


def dotted_name(node):
    """``a.b.c`` for an attribute chain on a name, else None."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


def apply(text, edits):
    """The text with the edits made; edits nested in a wider one are dropped."""
    result, position = [], 0
    for edit in sorted(edits, key=lambda e: (e.start, -e.end)):
        if edit.start < position:
            continue
        result.append(text[position:edit.start])
        result.append(edit.text)
        position = edit.end
    result.append(text[position:])
    return "".join(result)
