# -*- Python -*-
# The lit suite of mhac: FileCheck tests of the compiler's text stages, error tests, and bounded
# fuzzer runs. Unit tests (GoogleTest) form a second suite in tests/unit.

import os

import lit.formats
from lit.llvm import llvm_config
from lit.llvm.subst import ToolSubst

# The whole suite with the MLIR backend (tests/lit), or one folder of it with another backend
# (tests/e2e-halide: the end-to-end numerics through the Halide backend); RUN lines that compile
# for either write `mhac compile %backend ...`.
suffix = "" if config.mhac_backend == "mlir" else "-" + config.mhac_backend
config.name = "mhac" + ("-" + config.mhac_test_subdir if config.mhac_test_subdir else "") + suffix
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mha", ".mlir", ".sched", ".test"]
config.excludes = ["lit.cfg.py", "lit.site.cfg.py", "Inputs"]
config.test_source_root = os.path.join(os.path.dirname(__file__), config.mhac_test_subdir)
config.test_exec_root = os.path.join(config.mhac_obj_root, "tests",
                                     (config.mhac_test_subdir or "lit") + suffix)
config.substitutions.append(("%backend", "--backend " + config.mhac_backend))
# The backend the suite runs, for tests of what one backend compiles and the other refuses.
config.available_features.add("backend-" + config.mhac_backend)
# The Halide backend's generator, built when CMake found Halide 21.
if os.path.exists(os.path.join(config.mhac_tools_dir, "mhac-halide")):
    config.available_features.add("halide-generator")
if config.mhac_backend == "halide":
    if "halide-generator" not in config.available_features:
        config.unsupported = True
        lit_config.note("mhac was built without Halide (no mhac-halide): the Halide backend's "
                        "tests are skipped")

llvm_config.use_default_substitutions()
config.substitutions.append(("%mhac_src", config.mhac_src_root))
config.substitutions.append(("%mhac_obj_root", config.mhac_obj_root))
config.substitutions.append(("%mha_run", os.path.join(config.mhac_tools_dir, "mha-run")))
config.substitutions.append(("%fuzz_seconds", str(config.fuzz_seconds)))
config.substitutions.append(("%mhac_lib_dir", os.path.join(config.mhac_obj_root, "lib")))

if config.fuzzers_enabled:
    config.available_features.add("fuzzers")

# The slow tier (`scripts/test.sh --slow`, or `lit --param slow=1`): the long sweeps of random
# layers and schedules, over more seeds than the default run can afford.
if lit_config.params.get("slow", "0") not in ("", "0"):
    config.available_features.add("slow")

# CPU features, for tests that run code compiled for a target other than the host.
try:
    with open("/proc/cpuinfo") as cpuinfo:
        flags = next((line.split(":", 1)[1].split() for line in cpuinfo
                      if line.startswith("flags")), [])
    if {"avx2", "fma", "f16c", "bmi2"} <= set(flags):
        config.available_features.add("x86-64-v3")
        if {"avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl"} <= set(flags):
            config.available_features.add("x86-64-v4")
            if "avx512_bf16" in flags:
                config.available_features.add("avx512bf16")
                # AMX as Linux reports it (the kernel lists it only where it manages the tiles).
                if {"amx_bf16", "amx_tile"} <= set(flags):
                    config.available_features.add("amx")
except OSError:
    pass

# CUDA: ptxas, for the compile-only checks of device code (the toolkit mhac itself finds:
# $CUDA_HOME, PATH, /usr/local/cuda), and a GPU with its driver, for the tests that run CUDA
# layers; without them those tests are reported unsupported.
import shutil
ptxas = next((path for path in
              [os.path.join(os.environ[v], "bin", "ptxas") for v in ("CUDA_HOME", "CUDA_PATH")
               if v in os.environ] + [shutil.which("ptxas") or "", "/usr/local/cuda/bin/ptxas"]
              if path and os.access(path, os.X_OK)), None)
if ptxas:
    config.available_features.add("ptxas")
    config.substitutions.append(("%ptxas", ptxas))
try:
    import ctypes
    driver = ctypes.CDLL("libcuda.so.1")
    count = ctypes.c_int(0)
    if driver.cuInit(0) == 0 and driver.cuDeviceGetCount(ctypes.byref(count)) == 0 and count.value:
        config.available_features.add("cuda-gpu")
except OSError:
    pass
if "cuda-gpu" not in config.available_features and config.mhac_backend == "mlir":
    lit_config.note("no CUDA GPU here: the tests that run CUDA layers are skipped "
                    "(scripts/gpu-check.sh runs them on a GPU machine)")

# PyTorch, for comparisons with nn.MultiheadAttention: Debian's python3-torch belongs to the
# system Python, which may not be the first python3 on PATH.
import subprocess
for python in ["/usr/bin/python3", "python3"]:
    try:
        if subprocess.run([python, "-c", "import torch, numpy"], capture_output=True).returncode == 0:
            config.available_features.add("torch")
            config.substitutions.append(("%torch_python", python))
            break
    except OSError:
        pass

# A private mount namespace (unshare -m; root, or a kernel that lets users make one): the
# installation tests hide the source and build trees behind empty folders in one.
try:
    if subprocess.run(["unshare", "-m", "true"], capture_output=True).returncode == 0:
        config.available_features.add("mount-namespace")
except OSError:
    pass

# NumPy, for the decoder layers' independent reference (tests/lit/Inputs/decoder_reference.py):
# Debian's python3-numpy, of the system Python (scripts/setup.sh installs it).
for python in ["/usr/bin/python3", "python3"]:
    try:
        if subprocess.run([python, "-c", "import numpy"], capture_output=True).returncode == 0:
            config.available_features.add("numpy")
            config.substitutions.append(("%numpy_python", python))
            break
    except OSError:
        pass

# mhac's Python package, installed into the build's virtual environment (python/CMakeLists.txt),
# driving the build's mhac.
package_python = os.path.join(config.mhac_obj_root, "python", "bin", "python")
if os.path.exists(package_python):
    config.available_features.add("python-package")
    config.substitutions.append(("%mhac_python", package_python))
    config.environment["MHAC_PREFIX"] = config.mhac_obj_root

llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)
tools = ["mhac", "mhac-opt", "mha-run", "schedule-sampler"] + [
    ToolSubst(fuzzer, unresolved="ignore")
    for fuzzer in ["frontend-fuzzer", "npy-fuzzer", "safetensors-fuzzer", "schedule-fuzzer"]
]
llvm_config.add_tool_substitutions(tools, [config.mhac_tools_dir])
