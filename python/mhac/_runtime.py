"""The runtime's stable C API (mhac/runtime.h), through ctypes.

ctypes rather than a compiled extension: the package then has nothing to build, works with any
CPython 3 and any NumPy or PyTorch, and binds only to the plain C ABI that the runtime keeps
stable for every language. A layer call costs a few microseconds of ctypes overhead, far below the
cost of the layer itself; ctypes releases the GIL for the call, so other Python threads run while
a layer does.
"""

import ctypes
import os
import shutil
import threading

from ._errors import Error, RunError

#: MHAC_ABI_VERSION of mhac/runtime.h: the layout of `LayerInfo` below.
ABI_VERSION = 6
DYNAMIC = -1
DTYPE_F32 = 0
DTYPE_BF16 = 1

class RopeInfo(ctypes.Structure):
    """struct mhac_rope, field for field."""

    _fields_ = [
        ("kind", ctypes.c_int32),
        ("scaling", ctypes.c_int32),
        ("dim", ctypes.c_int64),
        ("original_max", ctypes.c_int64),
        ("base", ctypes.c_double),
        ("factor", ctypes.c_double),
        ("low_freq_factor", ctypes.c_double),
        ("high_freq_factor", ctypes.c_double),
        ("beta_fast", ctypes.c_double),
        ("beta_slow", ctypes.c_double),
        ("attention_factor", ctypes.c_double),
        ("truncate", ctypes.c_int32),
    ]


class LayerInfo(ctypes.Structure):
    """struct mhac_layer, field for field."""

    _fields_ = [
        ("abi_version", ctypes.c_int32),
        ("name", ctypes.c_char_p),
        ("dtype", ctypes.c_int32),
        ("model_dim", ctypes.c_int64),
        ("heads", ctypes.c_int64),
        ("head_dim", ctypes.c_int64),
        ("kv_heads", ctypes.c_int64),
        ("kv_dim", ctypes.c_int64),
        ("batch", ctypes.c_int64),
        ("seq", ctypes.c_int64),
        ("kv_seq", ctypes.c_int64),
        ("cross", ctypes.c_int32),
        ("causal", ctypes.c_int32),
        ("kv_lens", ctypes.c_int32),
        ("bias", ctypes.c_int32),
        ("scale", ctypes.c_float),
        ("num_tensors", ctypes.c_int32),
        ("run_packed", ctypes.c_void_p),
        ("prepared_bytes", ctypes.c_int64),
        ("prepare_packed", ctypes.c_void_p),
        ("run_prepared_packed", ctypes.c_void_p),
        ("cpu_features", ctypes.c_char_p),
        ("schedule", ctypes.c_char_p),
        ("device", ctypes.c_char_p),
        ("rope", RopeInfo),
        ("kv_cache", ctypes.c_int64),
        ("window", ctypes.c_int64),
        ("softcap", ctypes.c_double),
        ("qk_norm", ctypes.c_int32),
        ("qk_norm_eps", ctypes.c_double),
        ("sinks", ctypes.c_int32),
    ]


class Sizes(ctypes.Structure):
    """struct mhac_sizes."""

    _fields_ = [("batch", ctypes.c_int64), ("seq", ctypes.c_int64), ("kv_seq", ctypes.c_int64)]


def find_prefix():
    """The installation (or build) folder of mhac: `$MHAC_PREFIX`, or the folder above the `bin`
    holding the `mhac` found on PATH."""
    prefix = os.environ.get("MHAC_PREFIX")
    if prefix:
        if not os.path.isfile(os.path.join(prefix, "bin", "mhac")):
            raise Error(f"MHAC_PREFIX is {prefix!r}, which has no bin/mhac")
        return os.path.abspath(prefix)
    found = shutil.which("mhac")
    if not found:
        raise Error("cannot find the mhac compiler: put its bin folder on PATH, or set "
                    "MHAC_PREFIX to the folder it is installed (or built) in")
    return os.path.dirname(os.path.dirname(os.path.realpath(found)))


class Runtime:
    """libmhac_runtime.so.0, loaded once per process: every module opened through it shares its
    thread pool, as every layer library loaded in the process does."""

    def __init__(self, prefix):
        self.prefix = prefix
        path = os.path.join(prefix, "lib", "libmhac_runtime.so.0")
        try:
            # RTLD_GLOBAL: the layer libraries opened later find this copy by its soname.
            lib = ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
        except OSError as error:
            raise Error(f"cannot load mhac's runtime: {error}") from None
        self.lib = lib
        layer_p = ctypes.POINTER(LayerInfo)
        void_pp = ctypes.POINTER(ctypes.c_void_p)
        signatures = {
            "mhac_status_string": (ctypes.c_char_p, [ctypes.c_int32]),
            "mhac_module_open": (ctypes.c_void_p,
                                 [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_size_t]),
            "mhac_module_close": (None, [ctypes.c_void_p]),
            "mhac_module_num_layers": (ctypes.c_int32, [ctypes.c_void_p]),
            "mhac_module_layer": (layer_p, [ctypes.c_void_p, ctypes.c_int32]),
            "mhac_layer_missing_cpu_feature": (ctypes.c_char_p, [layer_p]),
            "mhac_layer_prepare": (ctypes.c_int32, [layer_p, void_pp, void_pp]),
            "mhac_layer_run_prepared": (ctypes.c_int32,
                                        [layer_p, void_pp, ctypes.c_void_p,
                                         ctypes.POINTER(Sizes)]),
            "mhac_layer_flops": (ctypes.c_double, [layer_p, ctypes.POINTER(Sizes)]),
            "mhac_free": (None, [ctypes.c_void_p]),
            "mhac_set_num_threads": (ctypes.c_int32, [ctypes.c_int32]),
            "mhac_get_num_threads": (ctypes.c_int32, []),
        }
        for name, (restype, argtypes) in signatures.items():
            function = getattr(lib, name)
            function.restype = restype
            function.argtypes = argtypes

    def status_string(self, status):
        return self.lib.mhac_status_string(status).decode()

    def check(self, status, what):
        if status != 0:
            raise RunError(status, f"{what}: {self.status_string(status)}")


_runtime = None
_runtime_lock = threading.Lock()


def runtime():
    """The process's runtime, loaded on first use."""
    global _runtime
    with _runtime_lock:
        if _runtime is None:
            _runtime = Runtime(find_prefix())
        return _runtime


def set_num_threads(count):
    """Threads of the runtime's pool, the caller included (0: MHAC_NUM_THREADS or all CPUs).
    Not to be called while a layer runs."""
    rt = runtime()
    rt.check(rt.lib.mhac_set_num_threads(int(count)), "set_num_threads")


def get_num_threads():
    """The number of threads layers run on."""
    return runtime().lib.mhac_get_num_threads()
