"""The package's PEP 517 build backend: builds the wheel (or sdist) of this pure-Python package
straight into the directory pip names, writing nothing into the source tree.

setuptools builds in the tree it is given (`build/`, `mhac.egg-info/` beside pyproject.toml),
so `pip install ./python` left build outputs in the checkout. The package is a handful of .py
files with no build step, which a wheel holds as they are: this backend zips them with the
metadata of pyproject.toml's [project] table (PEP 621), and `pip install -e` gets a wheel whose
.pth file points at the source folder (PEP 660).
"""

import base64
import hashlib
import io
import os
import sys
import tarfile
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGE = "mhac"


def _project():
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # get_requires_for_build_* asks for it
        import tomli as tomllib
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as file:
        return tomllib.load(file)["project"]


def _metadata():
    project = _project()
    lines = ["Metadata-Version: 2.1", f"Name: {project['name']}",
             f"Version: {project['version']}", f"Summary: {project['description']}",
             f"Requires-Python: {project['requires-python']}",
             f"License: {project['license']['text']}"]
    lines += [f"Requires-Dist: {d}" for d in project.get("dependencies", [])]
    for extra, requirements in project.get("optional-dependencies", {}).items():
        lines.append(f"Provides-Extra: {extra}")
        lines += [f"Requires-Dist: {r}; extra == \"{extra}\"" for r in requirements]
    lines.append("Description-Content-Type: text/markdown")
    with open(os.path.join(ROOT, project["readme"]), encoding="utf-8") as file:
        return "\n".join(lines) + "\n\n" + file.read(), project


def _sources():
    folder = os.path.join(ROOT, PACKAGE)
    return sorted(os.path.join(PACKAGE, name) for name in os.listdir(folder)
                  if name.endswith(".py"))


class _Wheel:
    """A wheel being written, with its RECORD."""

    def __init__(self, directory, project):
        self.dist_info = f"{project['name']}-{project['version']}.dist-info"
        self.name = f"{project['name']}-{project['version']}-py3-none-any.whl"
        self.zip = zipfile.ZipFile(os.path.join(directory, self.name), "w",
                                   zipfile.ZIP_DEFLATED)
        self.records = []

    def add(self, name, data):
        data = data.encode() if isinstance(data, str) else data
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        self.zip.writestr(name, data)
        self.records.append(f"{name},sha256={digest},{len(data)}")

    def close(self, metadata):
        self.add(f"{self.dist_info}/METADATA", metadata)
        self.add(f"{self.dist_info}/WHEEL", "Wheel-Version: 1.0\nGenerator: mhac_wheel\n"
                 "Root-Is-Purelib: true\nTag: py3-none-any\n")
        record = f"{self.dist_info}/RECORD"
        self.zip.writestr(record, "\n".join(self.records + [f"{record},,"]) + "\n")
        self.zip.close()
        return self.name


def get_requires_for_build_wheel(config_settings=None):
    return [] if sys.version_info >= (3, 11) else ["tomli"]


get_requires_for_build_sdist = get_requires_for_build_editable = get_requires_for_build_wheel


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    metadata, project = _metadata()
    wheel = _Wheel(wheel_directory, project)
    for source in _sources():
        with open(os.path.join(ROOT, source), "rb") as file:
            wheel.add(source.replace(os.sep, "/"), file.read())
    return wheel.close(metadata)


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    metadata, project = _metadata()
    wheel = _Wheel(wheel_directory, project)
    wheel.add(f"__editable__.{PACKAGE}.pth", ROOT + "\n")
    return wheel.close(metadata)


def build_sdist(sdist_directory, config_settings=None):
    metadata, project = _metadata()
    base = f"{project['name']}-{project['version']}"
    name = f"{base}.tar.gz"
    with tarfile.open(os.path.join(sdist_directory, name), "w:gz") as archive:
        for source in _sources() + ["pyproject.toml", "README.md",
                                    os.path.join("_backend", "mhac_wheel.py")]:
            archive.add(os.path.join(ROOT, source), f"{base}/{source}")
        info = tarfile.TarInfo(f"{base}/PKG-INFO")
        data = metadata.encode()
        info.size = len(data)
        archive.addfile(info, io.BytesIO(data))
    return name
