"""The build_ext command: compile native/core on its own, without MPI, into a static library;
compile the runtime and bindings with MPI's flags into mpirep._core, linked with that library;
record which libmpi it uses. The layers and flags come from buildtools/native.py."""

import os

from pybind11.setup_helpers import ParallelCompile
from pybind11.setup_helpers import build_ext as pybind11_build_ext

from buildtools.mpi import HOW_TO_GET_MPI, MPINotFound, find_mpi
from buildtools.native import CORE_LIBRARY, ROOT, headers, sources

NATIVE_HEADERS = [os.path.join(ROOT, path) for path in headers()]

LIBRARY_MODULE = "_mpi_library.py"
LIBRARY_MODULE_HEADER = """\
# Generated when mpirep._core was built: the MPI library the extension is linked against.
# mpirep hands it to mpi4py (MPI4PY_LIBMPI) so that both load the same libmpi.
"""


def _object_is_stale(obj: str, src: str) -> bool:
    """Recompile a .cc when it or any native header is newer than its object file."""
    built = os.path.getmtime(obj)
    return any(os.path.getmtime(dep) > built for dep in [src, *NATIVE_HEADERS])


# Compile the .cc files in parallel (MPIREP_BUILD_JOBS, default: all cores), and only the stale ones.
ParallelCompile("MPIREP_BUILD_JOBS", needs_recompile=_object_is_stale).install()


class BuildExt(pybind11_build_ext):
    def finalize_options(self):
        super().finalize_options()
        # run() clears inplace while it builds, so remember where the extension will live
        self.in_source = self.inplace  # editable installs and build_ext --inplace
        if self.in_source:
            # pip gives editable builds a fresh temporary directory; keep the objects instead,
            # so that a rebuild after an edit compiles only what changed.
            self.build_temp = os.path.join(ROOT, "build", "temp-in-source")

    def build_extensions(self):
        mpi = find_mpi()
        if mpi is None:
            raise MPINotFound(HOW_TO_GET_MPI)
        shipped_by = f", from the {mpi.wheel.metadata['Name']} {mpi.wheel.version} wheel" \
            if mpi.wheel else ""
        print(f"mpirep: building against the MPI of {mpi.wrapper}{shipped_by}, because "
              f"{mpi.reason}")
        rpaths = mpi.runtime_rpaths(self.in_source)
        for ext in self.extensions:
            self._build_core_library(ext)
            ext.library_dirs.append(self.build_temp)
            ext.libraries.insert(0, CORE_LIBRARY)
            ext.include_dirs += mpi.include_dirs
            ext.library_dirs += mpi.library_dirs
            ext.libraries += mpi.libraries
            ext.extra_compile_args += mpi.compile_args
            ext.extra_link_args += mpi.link_args + [f"-Wl,-rpath,{path}" for path in rpaths]
        super().build_extensions()
        self._write_library_module(mpi.runtime_libmpi(self.in_source))

    def _build_core_library(self, ext):
        """native/core with the extension's own flags, before MPI's are added to them: no MPI
        include directory, so an MPI include there fails to compile."""
        objects = self.compiler.compile(sources("core"), output_dir=self.build_temp,
                                        extra_postargs=list(ext.extra_compile_args),
                                        depends=headers())
        self.compiler.create_static_lib(objects, CORE_LIBRARY, output_dir=self.build_temp)

    def copy_extensions_to_source(self):
        super().copy_extensions_to_source()
        package_dir = self.get_finalized_command("build_py").get_package_dir("mpirep")
        self.copy_file(self._built_library_module(), os.path.join(package_dir, LIBRARY_MODULE))

    def _built_library_module(self) -> str:
        return os.path.join(self.build_lib, "mpirep", LIBRARY_MODULE)

    def _write_library_module(self, libmpi) -> None:
        if libmpi is None:
            body = "LIBMPI = None  # not found at build time; mpi4py searches as usual\n"
        elif libmpi.startswith("$ORIGIN/"):
            relative = libmpi[len("$ORIGIN/"):]
            body = ("import os\n\nLIBMPI = os.path.normpath(os.path.join(os.path.dirname(__file__), "
                    f"{relative!r}))\n")
        else:
            body = f"LIBMPI = {libmpi!r}\n"
        with open(self._built_library_module(), "w") as f:
            f.write(LIBRARY_MODULE_HEADER + "\n" + body)
