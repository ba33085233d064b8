# SPDX-License-Identifier: Apache-2.0
"""The package's build backend (PEP 517; pyproject.toml names it), of the standard library alone,
so `pip install ./bindings/python` downloads nothing and needs neither setuptools nor wheel.

The wheel holds keybay/ and keybay/_installed.py naming the libkeybay.so.1 to load: PREFIX/lib's,
PREFIX from `--config-settings prefix=PREFIX`, else KEYBAY_PREFIX, else the prefix the last
`make install` of this checkout recorded (_build/installed-prefix), else pkg-config's keybay.pc
(`make install` writes PREFIX/lib/pkgconfig/keybay.pc; put that directory on PKG_CONFIG_PATH).
Without any of them, or without the library there, the build is refused. docs/python.md,
"Installing"."""
import base64
import hashlib
import io
import os
import subprocess
import sys
import tarfile
import zipfile

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # bindings/python
SONAME = "libkeybay.so.1"
RECORDED = os.path.join(HERE, "_build", "installed-prefix")  # written by `make install` (no DESTDIR)
HOW_TO = ("give the PREFIX of `make install` as KEYBAY_PREFIX=PREFIX (or --config-settings prefix=PREFIX), "
          "or put PREFIX/lib/pkgconfig on PKG_CONFIG_PATH (docs/python.md, \"Installing\")")


class RefusedBuild(SystemExit):
    pass


def _project():
    try:
        import tomllib
    except ImportError:  # Python before 3.11
        try:
            import tomli as tomllib
        except ImportError:
            raise RefusedBuild("keybay: building the package needs Python 3.11 (tomllib) or tomli") from None
    with open(os.path.join(HERE, "pyproject.toml"), "rb") as f:
        return tomllib.load(f)["project"]


def _version():
    scope = {}
    with open(os.path.join(HERE, "keybay", "_version.py"), encoding="utf-8") as f:
        exec(f.read(), scope)  # one assignment: the library's release
    return scope["__version__"]


def _libdir(config_settings):
    prefix = (config_settings or {}).get("prefix")
    if prefix:
        return os.path.join(prefix, "lib"), f"--config-settings prefix={prefix}"
    prefix = os.environ.get("KEYBAY_PREFIX")
    if prefix:
        return os.path.join(prefix, "lib"), f"KEYBAY_PREFIX={prefix}"
    try:
        with open(RECORDED, encoding="utf-8") as f:
            prefix = f.read().strip()
    except FileNotFoundError:
        prefix = None
    if prefix:
        return os.path.join(prefix, "lib"), f"the prefix the last `make install` of this checkout recorded ({RECORDED}: {prefix})"
    try:
        found = subprocess.run(["pkg-config", "--variable=libdir", "keybay"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as error:
        raise RefusedBuild(f"keybay: cannot find libkeybay: KEYBAY_PREFIX is not set and pkg-config did not run ({error}); {HOW_TO}")
    if found.returncode != 0 or not found.stdout.strip():
        raise RefusedBuild(f"keybay: cannot find libkeybay: KEYBAY_PREFIX is not set and pkg-config finds no keybay.pc; {HOW_TO}")
    return found.stdout.strip(), "pkg-config keybay (keybay.pc)"


def installed_library(config_settings=None):
    """(PREFIX/lib/libkeybay.so.1, how PREFIX was found); refuses a library that is not there."""
    libdir, how = _libdir(config_settings)
    library = os.path.join(libdir, SONAME)
    if not os.path.isabs(library) or not os.path.isfile(library):
        raise RefusedBuild(f"keybay: no {SONAME} at {library} (found through {how}); install the library first "
                           f"(make install PREFIX=...), or {HOW_TO}")
    return library, how


def _metadata(project, version):
    lines = [f"Metadata-Version: 2.1", f"Name: {project['name']}", f"Version: {version}",
             f"Summary: {project['description']}", f"Requires-Python: {project['requires-python']}",
             f"License: {project['license']['text']}"]
    lines += [f"Classifier: {c}" for c in project.get("classifiers", [])]
    for extra, requirements in project.get("optional-dependencies", {}).items():
        lines.append(f"Provides-Extra: {extra}")
        lines += [f'Requires-Dist: {r}; extra == "{extra}"' for r in requirements]
    lines.append("Description-Content-Type: text/markdown")
    with open(os.path.join(HERE, project["readme"]), encoding="utf-8") as f:
        return "\n".join(lines) + "\n\n" + f.read()


def _entry_points(project):
    out = []
    for group, entries in project.get("entry-points", {}).items():
        out.append(f"[{group}]")
        out += [f"{name} = {target}" for name, target in entries.items()]
    return "\n".join(out) + "\n"


def _dist_info(project, version):
    return f"{project['name']}-{version}.dist-info"


def _metadata_files(project, version):
    return {"METADATA": _metadata(project, version), "entry_points.txt": _entry_points(project),
            "top_level.txt": "keybay\n",
            "WHEEL": "Wheel-Version: 1.0\nGenerator: keybay_build\nRoot-Is-Purelib: true\nTag: py3-none-any\n"}


def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    project, version = _project(), _version()
    directory = os.path.join(metadata_directory, _dist_info(project, version))
    os.makedirs(directory, exist_ok=True)
    for name, text in _metadata_files(project, version).items():
        with open(os.path.join(directory, name), "w", encoding="utf-8") as f:
            f.write(text)
    return os.path.basename(directory)


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    project, version = _project(), _version()
    library, how = installed_library(config_settings)
    files = {}
    package = os.path.join(HERE, "keybay")
    for name in sorted(os.listdir(package)):
        if name.endswith(".py") and name != "_installed.py":
            with open(os.path.join(package, name), "rb") as f:
                files[f"keybay/{name}"] = f.read()
    files["keybay/_installed.py"] = ("# Written by pip install (bindings/python/_build/keybay_build.py): the library "
                                     f"this package loads.\nLIBRARY = {library!r}\nFOUND_BY = {how!r}\n").encode()
    info = _dist_info(project, version)
    for name, text in _metadata_files(project, version).items():
        files[f"{info}/{name}"] = text.encode()
    record = [f"{path},sha256={base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b'=').decode()},{len(data)}"
              for path, data in files.items()]
    files[f"{info}/RECORD"] = ("\n".join(record + [f"{info}/RECORD,,"]) + "\n").encode()
    wheel = f"{project['name']}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(os.path.join(wheel_directory, wheel), "w", zipfile.ZIP_DEFLATED) as archive:
        for path, data in files.items():
            archive.writestr(path, data)
    # pip shows this with -v: where the package will look.
    print(f"keybay: the package loads {library} (found through {how})", file=sys.stderr)
    return wheel


def build_sdist(sdist_directory, config_settings=None):
    project, version = _project(), _version()
    base = f"{project['name']}-{version}"
    sdist = f"{base}.tar.gz"
    names = ["pyproject.toml", "README.md", "_build/keybay_build.py"]
    names += [f"keybay/{n}" for n in sorted(os.listdir(os.path.join(HERE, "keybay")))
              if n.endswith(".py") and n != "_installed.py"]
    with tarfile.open(os.path.join(sdist_directory, sdist), "w:gz", format=tarfile.PAX_FORMAT) as archive:
        for name in names:
            archive.add(os.path.join(HERE, name), arcname=f"{base}/{name}")
        info = tarfile.TarInfo(f"{base}/PKG-INFO")
        data = _metadata(project, version).encode()
        info.size = len(data)
        archive.addfile(info, io.BytesIO(data))
    return sdist
