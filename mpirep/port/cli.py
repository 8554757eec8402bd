"""The command line of mpirep-port (also ``python -m mpirep.port``)."""
import argparse
import difflib
import os
import sys
from pathlib import Path

from mpirep.keras2_hint import install_command
from mpirep.port import PortError, port_source

BACKUP_SUFFIX = ".bak"
TF_KERAS_HOWTO = """\
To run on tf_keras, where the script's Keras 2 APIs work unchanged:
  {install}
  mpirep-run --keras2 -np 2 python {script}
  (under mpirun or srun, set TF_USE_LEGACY_KERAS=1 for every rank: mpirun -x TF_USE_LEGACY_KERAS=1 ...)"""


def build_parser():
    p = argparse.ArgumentParser(
        prog="mpirep-port",
        description="Port Horovod TensorFlow scripts to mpirep: Horovod's imports become "
                    "mpirep's and, for Keras 3, the Keras 2 APIs they use are rewritten. "
                    "Prints a unified diff and a report of every change and of every spot to "
                    "check by hand (docs/porting.md).")
    p.add_argument("scripts", nargs="+", metavar="SCRIPT", help="Python files to port")
    p.add_argument("--in-place", action="store_true",
                   help=f"write the ported scripts, keeping each original as SCRIPT{BACKUP_SUFFIX}")
    p.add_argument("--keras2", action="store_true",
                   help="port the imports only, for running on tf_keras (TF_USE_LEGACY_KERAS=1)")
    return p


def _is_python(path, text):
    first_line = text.split("\n", 1)[0]
    return path.suffix in (".py", ".pyw") or (first_line.startswith("#!") and "python" in first_line)


def _read(path):
    if not path.is_file():
        raise PortError(f"{path}: no such file")
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise PortError(f"{path} is not a Python script (it is not UTF-8 text)") from None
    if not _is_python(path, text):
        raise PortError(f"{path} is not a Python script (its name does not end in .py and it "
                        "has no python #! line)")
    return text


def report(path, ported):
    entries = list({(c.line, 0, f"  line {c.line}: {c.what}") for c in ported.changes})
    entries += [(f.line, 1, f"  line {f.line}: CHECK: {f.reason}\n"
                            f"  {' ' * len(str(f.line))}       fix: {f.fix}") for f in ported.flags]
    changes = sum(1 for _, kind, _ in entries if kind == 0)
    heading = f"{path}: {changes} change(s), {len(ported.flags)} to check by hand"
    return "\n".join([heading] + [text for _, _, text in sorted(entries)])


def _write(path, text, original):
    backup = path.with_name(path.name + BACKUP_SUFFIX)
    if backup.exists():
        raise PortError(f"{path}: the backup {backup} exists already; move it away first")
    backup.write_text(original, encoding="utf-8")
    tmp = path.with_name(f".{path.name}.mpirep-port")
    tmp.write_text(text, encoding="utf-8")
    os.chmod(tmp, path.stat().st_mode)
    tmp.replace(path)


def port_file(path, args, out, err):
    original = _read(path)
    ported = port_source(original, keras2_only=args.keras2, name=str(path))
    if args.in_place:
        if ported.text != original:
            _write(path, ported.text, original)
    else:
        out.writelines(difflib.unified_diff(original.splitlines(keepends=True),
                                            ported.text.splitlines(keepends=True),
                                            f"{path}", f"{path} (ported)"))
    print(report(path, ported), file=err)
    return ported


def main(argv=None):
    args = build_parser().parse_args(argv)
    out, err = sys.stdout, sys.stderr
    refused = 0
    for name in args.scripts:
        try:
            port_file(Path(name), args, out, err)
        except PortError as error:
            print(f"mpirep-port: error: {error}", file=err)
            refused += 1
    if args.keras2 and refused < len(args.scripts):
        print(TF_KERAS_HOWTO.format(install=install_command(), script=args.scripts[0]), file=err)
    return 2 if refused else 0
