"""Guards of the tree's shape, read from the sources without building anything:

- collectives are told apart only by their traits: outside the traits table (native/core/common.h
  and its name switch in common.cc) and the files of each collective
  (native/core/collective_<name>.cc), no code compares a collective with a named one, in C++
  (``== Collective::X``, ``case Collective::X``) or in Python (``collective == "allreduce"``);
- every path that docs/architecture.md names exists."""
import re

from mpijob import REPO

TRAIT_FILES = {"native/core/common.h", "native/core/common.cc"}
NAMED = r"(?:mpirep::)?Collective::"
CPP_COMPARISON = re.compile(rf"[=!]=\s*{NAMED}\w+|{NAMED}\w+\s*[=!]=|case\s+{NAMED}")
PY_COMPARISON = re.compile(r"\bcollective\s*(?:[=!]=|(?:not\s+)?in)\s*[(\[{'\"]")


def _allowed(path):
    return path in TRAIT_FILES or re.fullmatch(r"native/core/collective_\w+\.cc", path) is not None


def collective_comparisons(root):
    """'path:line: text' for each comparison with a named collective outside the allowed files;
    the tests (native/tests, tests/) build requests of named collectives and are not scanned."""
    found = []
    sources = [p for p in root.joinpath("native").rglob("*") if p.suffix in (".h", ".cc")]
    sources += list(root.joinpath("mpirep").rglob("*.py"))
    for path in sorted(sources):
        relative = path.relative_to(root).as_posix()
        if relative.startswith("native/tests/") or _allowed(relative):
            continue
        pattern = PY_COMPARISON if path.suffix == ".py" else CPP_COMPARISON
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if pattern.search(line):
                found.append(f"{relative}:{number}: {line.strip()}")
    return found


def test_collectives_are_told_apart_only_by_their_traits():
    found = collective_comparisons(REPO)
    assert not found, ("compare a collective's traits (common.h, MPIREP_COLLECTIVES) instead, or "
                       "put the code in its collective_<name>.cc:\n" + "\n".join(found))


PATH_TOKEN = re.compile(r"^[\w./-]+(?:\.(?:h|cc|py|def|md|toml|sh)|/)$")


def named_paths(page):
    """The paths a page names: in backticks (the first word, without a trailing colon) and as
    relative links."""
    text = re.sub(r"```.*?```", "", page.read_text(), flags=re.S)  # diagrams
    names = set()
    for code in re.findall(r"`([^`]+)`", text):
        word = code.split()[0].rstrip(":,")
        if PATH_TOKEN.match(word) and not word.startswith("."):
            names.add(word)
    for link in re.findall(r"\]\(([^)#:]+)(?:#[^)]*)?\)", text):
        names.add(link)
    return names


def _exists(name, page):
    """A path names a file relative to the page, the checkout, native/ or (a bare file name) one
    of the project's folders."""
    bases = [page.parent, REPO, REPO / "native"]
    if any((base / name).exists() for base in bases):
        return True
    if "/" not in name:
        return any(REPO.joinpath(top).rglob(name) for top in ("native", "mpirep", "docs", "launch"))
    return False


def test_every_path_the_architecture_page_names_exists():
    page = REPO / "docs" / "architecture.md"
    names = named_paths(page)
    assert len(names) > 30, sorted(names)  # the page names many: a parse that finds few is broken
    missing = sorted(n for n in names if not _exists(n, page))
    assert not missing, f"docs/architecture.md names paths that do not exist: {missing}"
