"""Compiling layers with the `mhac` compiler, and the modules it writes."""

import ctypes
import hashlib
import os
import shutil
import subprocess
import tempfile
import warnings

from ._errors import CompileError, Error
from ._layer import Layer
from ._runtime import ABI_VERSION, runtime


class CompileWarning(UserWarning):
    """A warning of `mhac compile` (a causal cross layer whose first rows see no key, ...)."""


CompileWarning.__module__ = "mhac"


class Module:
    """A shared library written by `mhac compile --shared`, opened: its layers by name, as
    `module["bert"]` or `module.bert`, in file order by iteration."""

    def __init__(self, path, header=""):
        self._runtime = runtime()
        self.path = os.fspath(path)
        #: The text of the module's C header (NAME.h), when it was compiled here.
        self.header = header
        error = ctypes.create_string_buffer(1024)
        handle = self._runtime.lib.mhac_module_open(self.path.encode(), error, len(error))
        if not handle:
            raise Error(error.value.decode())
        self._handle = handle
        self._layers = {}
        for i in range(self._runtime.lib.mhac_module_num_layers(handle)):
            info = self._runtime.lib.mhac_module_layer(handle, i)
            if info.contents.abi_version != ABI_VERSION:
                self.close()
                raise Error(f"{self.path}: compiled for ABI version {info.contents.abi_version}; "
                            f"this package reads version {ABI_VERSION}")
            layer = Layer(self, info)
            self._layers[layer.name] = layer

    def _check_open(self):
        if self._handle is None:
            raise Error(f"{self.path}: the module is closed")

    def close(self):
        """Releases the layers' prepared weights and closes the library; its layers cannot be
        called afterwards."""
        if getattr(self, "_handle", None) is None:
            return
        for layer in self._layers.values():
            layer._release()
        self._runtime.lib.mhac_module_close(self._handle)
        self._handle = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __getitem__(self, name):
        try:
            return self._layers[name]
        except KeyError:
            raise KeyError(f"{self.path} has no layer {name!r}; it has: "
                           f"{', '.join(self._layers)}") from None

    def __getattr__(self, name):
        layers = self.__dict__.get("_layers", {})
        if name in layers:
            return layers[name]
        raise AttributeError(f"mhac.Module has no attribute or layer {name!r}")

    def __iter__(self):
        return iter(self._layers.values())

    def __len__(self):
        return len(self._layers)

    def __repr__(self):
        return f"<mhac.Module {self.path}: {', '.join(self._layers)}>"


def _cache_root():
    root = os.environ.get("MHAC_CACHE_DIR")
    if not root:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        root = os.path.join(base, "mhac", "modules")  # beside mhac tune's database (tune/)
    return root


def _read_text(value, what):
    """The text of a source or schedule given as text (it has a '{') or as a path."""
    if isinstance(value, os.PathLike) or (isinstance(value, str) and "{" not in value):
        try:
            with open(value, encoding="utf-8") as file:
                return file.read(), os.fspath(value)
        except OSError as error:
            raise Error(f"cannot read the {what} {os.fspath(value)!r}: {error.strerror}") from None
    if not isinstance(value, str):
        raise TypeError(f"the {what} must be text or a path, not {type(value).__name__}")
    return value, None


def compile(source, *, schedule=None, target=None, prefix=None, backend=None, cache=True):
    """Compiles the layers of `source` (the text of a .mha file, or its path) into a Module.

    `schedule` (a schedule file's text or path, or "auto:NAME" for one of Halide's
    autoschedulers), `target`, `prefix` and `backend` ("mlir" or "halide") are `mhac compile`'s
    --schedule, --target, --prefix and --backend. Modules are cached under $MHAC_CACHE_DIR (default
    ~/.cache/mhac/modules), keyed by the compiler, the texts and the options; `cache=False` compiles
    afresh. Errors raise CompileError carrying mhac's located messages; warnings become
    CompileWarning.
    """
    rt = runtime()
    compiler = os.path.join(rt.prefix, "bin", "mhac")
    text, source_path = _read_text(source, "source")
    options = []
    if isinstance(schedule, str) and schedule.startswith("auto:"):
        options += ["--schedule", schedule]
        schedule = None
    schedule_text, schedule_path = (None, None) if schedule is None else _read_text(schedule,
                                                                                    "schedule")
    if target:
        options += ["--target", target]
    if prefix:
        options += ["--prefix", prefix]
    # The programs that make the code: mhac, and the Halide backend's generator beside it.
    programs = [compiler]
    if backend:
        options += ["--backend", backend]
        if backend == "halide":
            programs.append(os.path.join(rt.prefix, "bin", "mhac-halide"))
    stamps = []
    for program in programs:
        try:
            stat = os.stat(program)
            stamps.append((program, stat.st_mtime_ns, stat.st_size))
        except OSError:
            stamps.append((program, None, None))
    key = hashlib.sha256(repr((stamps, text, schedule_text,
                               options)).encode()).hexdigest()[:24]
    root = _cache_root() if cache else None
    if root:
        final = os.path.join(root, key)
        if os.path.isfile(os.path.join(final, "layers.so")):
            return _open(final)
        os.makedirs(root, exist_ok=True)
    work = tempfile.mkdtemp(prefix="mhac-", dir=root)
    try:
        if schedule_text is not None:
            # Paths named inside a schedule file (projection_transform) are resolved against
            # its folder, so a file given by path is passed as it is.
            if schedule_path is None:
                schedule_path = os.path.join(work, "layers.sched")
                with open(schedule_path, "w", encoding="utf-8") as file:
                    file.write(schedule_text)
            options += ["--schedule", schedule_path]
        command = [compiler, "compile", source_path or "-", "--shared",
                   "-o", os.path.join(work, "layers")] + options
        result = subprocess.run(command, input=None if source_path else text.encode(),
                                capture_output=True)
        message = result.stderr.decode(errors="replace").strip()
        if result.returncode != 0:
            raise CompileError(message or f"mhac compile exited with status {result.returncode}")
        for line in message.splitlines():
            if ": warning: " in line:
                warnings.warn(line, CompileWarning, stacklevel=2)
        if not root:
            return _open(work)
        try:
            os.rename(work, final)
        except OSError:  # compiled meanwhile by another process: use that one
            shutil.rmtree(work, ignore_errors=True)
        return _open(final)
    finally:
        if not root or os.path.isdir(work):
            # Without a cache the module stays loaded after its files are gone.
            shutil.rmtree(work, ignore_errors=True)


def _open(folder):
    with open(os.path.join(folder, "layers.h"), encoding="utf-8") as file:
        header = file.read()
    return Module(os.path.join(folder, "layers.so"), header)


def load(path):
    """Opens a shared library written by `mhac compile --shared`."""
    return Module(path)
