"""The build_ext command: compile native/core on its own, without MPI, into a static library;
compile the runtime and bindings with MPI's flags into mpirep._core, linked with that library;
check that the core was built against that MPI (buildtools/mpi_checks.py) and record which MPI
and libmpi it uses. The layers and flags come from buildtools/native.py.

Objects compiled with MPI's flags are kept per MPI, in a build directory named by a hash of the
wrapper, its flags and its libmpi, and the core is linked on every build: a checkout built
against one MPI and then another never reuses objects or a core of the first. native/core,
compiled without MPI, is shared by all. Sources are compiled in parallel
(MPIREP_BUILD_JOBS, default: all cores), and only those whose object is older than the source
or than any native header."""

import os
from concurrent.futures import ThreadPoolExecutor

from setuptools.command.build_ext import build_ext

from buildtools import mpi_checks
from buildtools.mpi import HOW_TO_GET_MPI, MPINotFound, find_mpi
from buildtools.native import CORE_LIBRARY, ROOT, headers, sources

NATIVE_HEADERS = [os.path.join(ROOT, path) for path in headers()]

LIBRARY_MODULE = "_mpi_library.py"
LIBRARY_MODULE_HEADER = """\
# Generated when mpirep._core was built: the MPI library the extension is linked against.
# mpirep hands it to mpi4py (MPI4PY_LIBMPI) so that both load the same libmpi.
# BUILT_WITH: the MPI the build used and checked (`mpirep-run --check-build` shows it).
"""


def _object_is_stale(obj: str, src: str) -> bool:
    """Recompile a .cc when it or any native header is newer than its object file."""
    if not os.path.exists(obj):
        return True
    built = os.path.getmtime(obj)
    return any(os.path.getmtime(dep) > built for dep in [src, *NATIVE_HEADERS])


def _compile_stale_in_parallel(compiler):
    """Replaces ``compiler.compile`` (the distutils CCompiler method, whose steps it reuses) by
    one that compiles the stale sources only, on a thread per job."""
    jobs = int(os.environ.get("MPIREP_BUILD_JOBS") or os.cpu_count() or 1)

    def compile(sources, output_dir=None, macros=None, include_dirs=None, debug=0,
                extra_preargs=None, extra_postargs=None, depends=None):
        macros, objects, extra_postargs, pp_opts, build = compiler._setup_compile(
            output_dir, macros, include_dirs, sources, depends, extra_postargs)
        cc_args = compiler._get_cc_args(pp_opts, debug, extra_preargs)
        stale = [obj for obj in objects if obj in build and _object_is_stale(obj, build[obj][0])]

        def compile_one(obj):
            src, ext = build[obj]
            compiler._compile(obj, src, ext, cc_args, extra_postargs, pp_opts)

        with ThreadPoolExecutor(max_workers=jobs) as pool:
            list(pool.map(compile_one, stale))  # list(): raises the first compile error
        return objects

    compiler.compile = compile


class BuildExt(build_ext):
    def finalize_options(self):
        super().finalize_options()
        # run() clears inplace while it builds, so remember where the extension will live
        self.in_source = self.inplace  # editable installs and build_ext --inplace
        if self.in_source:
            # pip gives editable builds a fresh temporary directory; keep the objects instead,
            # so that a rebuild after an edit compiles only what changed.
            self.build_temp = os.path.join(ROOT, "build", "temp-in-source")

    def build_extensions(self):
        _compile_stale_in_parallel(self.compiler)
        mpi = find_mpi()
        if mpi is None:
            raise MPINotFound(HOW_TO_GET_MPI)
        shipped_by = f", from the {mpi.wheel_name()} wheel" if mpi.wheel else ""
        print(f"mpirep: building against the MPI of {mpi.wrapper}{shipped_by}, because "
              f"{mpi.reason}")
        core_temp = self.build_temp
        self.build_temp = os.path.join(core_temp, "mpi-" + mpi.flags_digest()[:16])
        self.force = True  # link anew: the core in build_lib may be another MPI's
        rpaths = mpi.runtime_rpaths(self.in_source)
        compiled = None
        for ext in self.extensions:
            core_args = list(ext.extra_compile_args)
            ext.library_dirs.append(core_temp)
            ext.libraries.insert(0, CORE_LIBRARY)
            ext.include_dirs += mpi.include_dirs
            ext.library_dirs += mpi.library_dirs
            ext.libraries += mpi.libraries
            ext.extra_compile_args += mpi.compile_args
            ext.extra_link_args += mpi.link_args + [f"-Wl,-rpath,{path}" for path in rpaths]
            compiled = self._check_header(ext, mpi)
            self._build_core_library(core_args, core_temp)
        super().build_extensions()
        built_with = mpi_checks.check_library(self.get_ext_fullpath("mpirep._core"), mpi, compiled)
        print(f"mpirep: the core links {built_with['libmpi']} ({built_with['library_version']}) "
              f"and was compiled with {built_with['mpi_h']}")
        self._write_library_module(mpi.runtime_libmpi(self.in_source), built_with)

    def _check_header(self, ext, mpi):
        """The mpi.h that the extension's flags lead the compiler to, checked to be the MPI's.
        The compiler searches the extension's include directories, then Python's (a venv's
        include/ among them, where an MPI wheel puts its mpi.h)."""
        macros = [f"-D{name}={value}" for name, value in ext.define_macros]
        found = mpi_checks.header(self.compiler.compiler_so,
                                  ext.include_dirs + (self.compiler.include_dirs or []), macros)
        mpi_checks.check_header(mpi, found)
        return found

    def _build_core_library(self, compile_args, directory):
        """native/core with the extension's own flags (``compile_args``), not MPI's: no MPI
        include directory, so an MPI include there fails to compile. Being free of MPI, it is
        kept outside the MPI's own build directory, for every MPI."""
        objects = self.compiler.compile(sources("core"), output_dir=directory,
                                        extra_postargs=compile_args,
                                        depends=headers())
        self.compiler.create_static_lib(objects, CORE_LIBRARY, output_dir=directory)

    def copy_extensions_to_source(self):
        super().copy_extensions_to_source()
        package_dir = self.get_finalized_command("build_py").get_package_dir("mpirep")
        self.copy_file(self._built_library_module(), os.path.join(package_dir, LIBRARY_MODULE))

    def _built_library_module(self) -> str:
        return os.path.join(self.build_lib, "mpirep", LIBRARY_MODULE)

    def _write_library_module(self, libmpi, built_with) -> None:
        if libmpi is None:
            body = "LIBMPI = None  # not found at build time; mpi4py searches as usual\n"
        elif libmpi.startswith("$ORIGIN/"):
            relative = libmpi[len("$ORIGIN/"):]
            body = ("import os\n\nLIBMPI = os.path.normpath(os.path.join(os.path.dirname(__file__), "
                    f"{relative!r}))\n")
        else:
            body = f"LIBMPI = {libmpi!r}\n"
        body += f"BUILT_WITH = {built_with!r}\n"
        with open(self._built_library_module(), "w") as f:
            f.write(LIBRARY_MODULE_HEADER + "\n" + body)
