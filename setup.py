"""Build of the nbodyh extension: one C file over nbody.h, a C compiler and nothing else.

Features are probed with the compiler setuptools chose (docs/python.md, "Building"):
  OpenMP   when the compiler accepts -fopenmp (/openmp with MSVC);
  OpenCL   when CL/cl.h compiles and -lOpenCL links (NBODYH_WITH_OPENCL=0/1 forces);
  CUDA     when nvcc is on PATH (NBODYH_WITH_CUDA=0/1 forces; NBODYH_NVFLAGS, default
           "-O3 -arch=sm_90", are nvcc's flags for nbody_cuda.cu).
Engines left out still exist and raise nbodyh.UnavailableError with the library's reason.
"""
import os
import shutil
import subprocess
import sys
import tempfile

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = os.path.dirname(os.path.abspath(__file__))


def _env_switch(name):
    """'1' -> True, '0' -> False, unset or empty -> None (probe)."""
    v = os.environ.get(name, "").strip()
    return None if v == "" else v not in ("0", "no", "off", "false")


class BuildExt(build_ext):
    def _compiles(self, source, extra_compile=(), libraries=()):
        """True when `source` compiles and links with the chosen compiler and flags."""
        tmp = tempfile.mkdtemp(prefix="nbodyh-probe-")
        try:
            src = os.path.join(tmp, "probe.c")
            with open(src, "w") as f:
                f.write(source)
            with open(os.devnull, "w") as null:
                saved = os.dup(2)
                os.dup2(null.fileno(), 2)      # the compiler's complaints are not errors here
                try:
                    objs = self.compiler.compile([src], output_dir=tmp, extra_postargs=list(extra_compile))
                    self.compiler.link_executable(objs, os.path.join(tmp, "probe"), libraries=list(libraries),
                                                  extra_postargs=list(extra_compile))
                finally:
                    os.dup2(saved, 2)
                    os.close(saved)
            return True
        except Exception:
            return False
        finally:
            shutil.rmtree(tmp, ignore_errors=True)

    def _openmp_flags(self):
        if self.compiler.compiler_type == "msvc":
            return ["/openmp"], []
        probe = "#include <omp.h>\nint main(void){return omp_get_max_threads() < 1;}\n"
        if self._compiles(probe, ["-fopenmp"]):
            return ["-fopenmp"], ["-fopenmp"]
        return [], []

    def _opencl(self):
        want = _env_switch("NBODYH_WITH_OPENCL")
        if want is False:
            return False
        probe = ("#define CL_TARGET_OPENCL_VERSION 120\n#include <CL/cl.h>\n"
                 "int main(void){cl_uint n; return (int)clGetPlatformIDs(0, 0, &n);}\n")
        ok = self._compiles(probe, libraries=["OpenCL"])
        if want and not ok:
            raise RuntimeError("NBODYH_WITH_OPENCL=1 but CL/cl.h with -lOpenCL does not build")
        return ok

    def _cuda_object(self, ext):
        """nbody_cuda.cu compiled by nvcc, or None."""
        want = _env_switch("NBODYH_WITH_CUDA")
        nvcc = shutil.which("nvcc")
        if want is False or (want is None and not nvcc):
            return None
        if not nvcc:
            raise RuntimeError("NBODYH_WITH_CUDA=1 but nvcc is not on PATH")
        out = os.path.join(self.build_temp, "nbody_cuda.o")
        os.makedirs(self.build_temp, exist_ok=True)
        flags = os.environ.get("NBODYH_NVFLAGS", "-O3 -arch=sm_90").split()
        cmd = [nvcc] + flags + ["-Xcompiler", "-fPIC", "-I", ROOT, "-c", os.path.join(ROOT, "nbody_cuda.cu"), "-o", out]
        print("nbodyh: " + " ".join(cmd))
        subprocess.check_call(cmd)
        cuda_lib = os.path.join(os.path.dirname(os.path.dirname(nvcc)), "lib64")
        ext.library_dirs.append(cuda_lib)
        ext.runtime_library_dirs.append(cuda_lib)
        ext.libraries += ["cudart", "stdc++"]
        return out

    def build_extensions(self):
        ext = self.extensions[0]
        compile_flags, link_flags = self._openmp_flags()
        features = ["openmp"] if compile_flags else []
        if self.compiler.compiler_type != "msvc":
            # the library's own build: no FMA contraction of scalar code, so that results
            # equal the C programs' bit for bit (docs/tree.md); warnings of the library's
            # unused static helpers are not the package's business
            compile_flags += ["-ffp-contract=off", "-Wno-unused-function"]
        if self._opencl():
            ext.define_macros.append(("NBODY_WITH_OPENCL", "1"))
            ext.libraries.append("OpenCL")
            features.append("opencl")
        cuda = self._cuda_object(ext)
        if cuda:
            ext.define_macros.append(("NBODY_WITH_CUDA", "1"))
            ext.extra_objects.append(cuda)
            features.append("cuda")
        ext.extra_compile_args += compile_flags
        ext.extra_link_args += link_flags
        ext.define_macros.append(("NBODYH_FEATURES", '"%s"' % ",".join(features)))
        print("nbodyh: building with " + (", ".join(features) or "no optional features"))
        super().build_extensions()


def _numpy_include():
    import numpy  # a build requirement (pyproject.toml)
    return numpy.get_include()


setup(
    ext_modules=[Extension("nbodyh._nbodyh", sources=["python/nbodyh/_nbodyh.c"],
                           include_dirs=[".", _numpy_include()], depends=["nbody.h", "nbody_cl.h"],
                           libraries=[] if sys.platform == "win32" else ["m"])],
    cmdclass={"build_ext": BuildExt},
)
