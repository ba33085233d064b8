# SPDX-License-Identifier: Apache-2.0
"""`pip install ./bindings/python` into a fresh venv, run against a `make install` prefix."""
import os
import pathlib
import shutil
import subprocess
import sys

import pytest

import keybay
from conftest import PACKAGE, REPOSITORY

SEQUENCE = r"""
import keybay, sys
class Asker:
    def __init__(self): self.asked = 0
    def ask_secret(self, prompt, is_confirmation): self.asked += 1; return "installed passphrase"
assert keybay.__file__.startswith(sys.prefix), keybay.__file__  # the installed copy, not the source tree
asker = Asker()
with keybay.open("org.keybay.pytest.installed") as store:
    store.set("api/token", "s3cr3t")
    method = store.enroll("passphrase", interaction=asker, memory_kib=8192, iterations=1, lanes=1)
with keybay.open("org.keybay.pytest.installed", method=method, interaction=asker) as store:
    assert store["api/token"] == b"s3cr3t" and asker.asked == 3
try:
    keybay.open("org.keybay.pytest.installed", method=method)
    raise SystemExit("opened without an interaction")
except keybay.InteractionRequired as error:
    assert error.code == "interaction-required"
keybay.reset("org.keybay.pytest.installed")
print("installed-ok", keybay.library_version())
"""


def run(arguments, environment, cwd):
    result = subprocess.run(arguments, env=environment, cwd=cwd, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, f"{arguments}: exit {result.returncode}\n{result.stdout}\n{result.stderr}"
    return result.stdout


def bare(environment):
    """The environment without anything that says where the library is."""
    return {k: v for k, v in environment.items()
            if k not in ("KEYBAY_LIBRARY", "KEYBAY_PLUGIN_PATH", "PYTHONPATH", "LD_LIBRARY_PATH", "KEYBAY_PREFIX",
                         "PKG_CONFIG_PATH")}


def pip_install(venv, source, environment, top):
    """pip install of the copy, offline (no index; the backend needs nothing to be installed)."""
    return subprocess.run([str(venv / "bin" / "pip"), "install", "-v", "--no-index",
                           "--disable-pip-version-check", str(source)], env=environment, cwd=top,
                          capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    top = tmp_path_factory.mktemp("install")
    build = pathlib.Path(os.environ["KEYBAY_LIBRARY"]).parent
    prefix, venv = top / "prefix", top / "venv"
    # PREFIX_RECORD=: the checkout is never written (test_pip_finds_what_make_install_recorded records into a copy).
    run(["make", "-s", "install", f"BIN={build}", f"PREFIX={prefix}", "PREFIX_RECORD="], dict(os.environ), REPOSITORY)
    # --system-site-packages: keyring comes from this Python (nothing is downloaded).
    run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)], dict(os.environ), top)
    # A copy of bindings/python, so setuptools' build/ and egg-info never land in the checkout.
    source = top / "python"
    shutil.copytree(PACKAGE, source, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__", "tests"))
    environment = bare(os.environ)
    # No keybay.pc of this machine's: only what the test names.
    environment["PKG_CONFIG_LIBDIR"] = str(top / "no-pkgconfig")
    pipped = pip_install(venv, source, dict(environment, KEYBAY_PREFIX=str(prefix)), top)
    assert pipped.returncode == 0, pipped.stdout + pipped.stderr
    assert f"keybay: the package loads {prefix}/lib/libkeybay.so.1 (found through KEYBAY_PREFIX=" in pipped.stdout + pipped.stderr
    home = top / "home"
    environment.update(HOME=str(home), XDG_DATA_HOME=str(home / "data"), XDG_STATE_HOME=str(home / "state"))
    return prefix, venv, environment, top


def test_the_installed_package_runs_on_the_installed_library(installed):
    """No KEYBAY_LIBRARY, no LD_LIBRARY_PATH, no ldconfig: the library pip was told of."""
    prefix, venv, environment, top = installed
    out = run([str(venv / "bin" / "python"), "-c", SEQUENCE + LOADED], environment, top)
    assert out.startswith("installed-ok ")
    assert out.split("\n")[1:3] == [str(prefix / "lib" / "libkeybay.so.1"), "ctypes.util not imported"], out
    version = run([str(prefix / "bin" / "keybay-methods"), "--version"], environment, top).split()[1]
    assert out.split("\n")[3] == f"version {version} {version} {version}", out


LOADED = r"""
import importlib.metadata
print(keybay._lib._name)
print("ctypes.util imported" if "ctypes.util" in sys.modules else "ctypes.util not imported")
print("version", keybay.__version__, keybay.library_version(), importlib.metadata.version("keybay"))
"""


def test_the_keyring_backend_gets_through_the_installed_library(installed):
    prefix, venv, environment, top = installed
    environment = dict(environment, PYTHON_KEYRING_BACKEND="keybay.keyring_backend.KeybayKeyring")
    run([str(venv / "bin" / "python"), "-c", "import keyring; keyring.set_password('svc.example', 'alice', 'hunter2')"],
        environment, top)
    got = run([str(venv / "bin" / "python"), "-m", "keyring", "get", "svc.example", "alice"], environment, top)
    assert got == "hunter2\n"


def test_make_install_alone_records_the_library(installed):
    """The package make install put under PREFIX (no pip) loads PREFIX/lib/libkeybay.so.1 too."""
    prefix, venv, environment, top = installed
    installed_file = next(prefix.glob("lib/python3*/*-packages/keybay/_installed.py"))
    assert f"LIBRARY = '{prefix}/lib/libkeybay.so.1'" in installed_file.read_text()
    environment = dict(environment, PYTHONPATH=str(installed_file.parent.parent))
    out = run([sys.executable, "-c", "import keybay; print(keybay.__file__); print(keybay._lib._name)"], environment, top)
    assert out.split("\n")[:2] == [str(installed_file.parent / "__init__.py"), str(prefix / "lib" / "libkeybay.so.1")]


def test_pip_finds_the_prefix_through_pkg_config_or_refuses(installed, tmp_path):
    prefix, _, environment, top = installed
    source = top / "python"
    venv = tmp_path / "venv"
    run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)], environment, tmp_path)
    refused = pip_install(venv, source, environment, tmp_path)
    assert refused.returncode != 0
    assert "KEYBAY_PREFIX is not set and pkg-config finds no keybay.pc" in refused.stdout + refused.stderr
    missing = pip_install(venv, source, dict(environment, KEYBAY_PREFIX=str(tmp_path / "nothing")), tmp_path)
    assert missing.returncode != 0 and f"no libkeybay.so.1 at {tmp_path}/nothing/lib/libkeybay.so.1" in missing.stdout + missing.stderr
    pipped = pip_install(venv, source, dict(environment, PKG_CONFIG_PATH=str(prefix / "lib" / "pkgconfig")), tmp_path)
    assert pipped.returncode == 0, pipped.stdout + pipped.stderr
    assert "(found through pkg-config keybay (keybay.pc))" in pipped.stdout + pipped.stderr
    out = run([str(venv / "bin" / "python"), "-c", "import keybay; print(keybay._lib._name)"], environment, tmp_path)
    assert out.strip() == str(prefix / "lib" / "libkeybay.so.1")
    told = subprocess.run([str(venv / "bin" / "pip"), "install", "-v", "--no-index", "--force-reinstall",
                           "--config-settings", f"prefix={prefix}", str(source)], env=environment, cwd=tmp_path,
                          capture_output=True, text=True, timeout=300)
    assert told.returncode == 0 and f"(found through --config-settings prefix={prefix})" in told.stderr, told.stderr


def test_pip_finds_what_make_install_recorded(installed, tmp_path):
    """`make install PREFIX=P` then a plain `pip install ./bindings/python`: the prefix the install
    recorded in the checkout (here a copy of it) is found, and pip says so."""
    prefix, _, environment, top = installed
    source = tmp_path / "python"
    shutil.copytree(top / "python", source)
    build = pathlib.Path(os.environ["KEYBAY_LIBRARY"]).parent
    run(["make", "-s", "install", f"BIN={build}", f"PREFIX={prefix}", f"PREFIX_RECORD={source}/_build/installed-prefix"],
        dict(os.environ), REPOSITORY)
    assert (source / "_build" / "installed-prefix").read_text() == f"{prefix}\n"
    venv = tmp_path / "venv"
    run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)], environment, tmp_path)
    pipped = pip_install(venv, source, environment, tmp_path)
    assert pipped.returncode == 0, pipped.stdout + pipped.stderr
    assert f"recorded ({source}/_build/installed-prefix: {prefix}))" in pipped.stdout + pipped.stderr
    out = run([str(venv / "bin" / "python"), "-c", "import keybay; print(keybay._lib._name, keybay.__version__)"], environment, tmp_path)
    version = run([str(prefix / "bin" / "keybay-methods"), "--version"], environment, tmp_path).split()[1]
    assert out.split() == [str(prefix / "lib" / "libkeybay.so.1"), version]


def test_the_soname_is_found_without_keybay_library(installed):
    """The source tree (no _installed.py): the soname, through LD_LIBRARY_PATH."""
    prefix, venv, environment, top = installed
    environment = dict(environment, LD_LIBRARY_PATH=str(prefix / "lib"), PYTHONPATH=str(top / "python"))
    out = run([sys.executable, "-c", "import keybay; print(keybay._lib._name)"], environment, top)
    assert out.strip() == "libkeybay.so.1"


def test_a_missing_keybay_library_fails_closed(installed):
    prefix, venv, environment, top = installed
    # The installed library and the soname are loadable here, but the named file is insisted on.
    environment = dict(environment, LD_LIBRARY_PATH=str(prefix / "lib"), KEYBAY_LIBRARY=str(top / "no-such.so"))
    probe = "try:\n import keybay\nexcept ImportError:\n raise SystemExit(7)"
    result = subprocess.run([str(venv / "bin" / "python"), "-c", probe], env=environment, cwd=top,
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 7, result.stderr


def test_the_package_version_is_the_librarys():
    """keybay/_version.py (pyproject.toml's version) is KeybayVersion.release, debian/changelog's
    and the loaded library's."""
    import re
    from keybay import _version
    swift = (REPOSITORY / "Sources" / "Keybay" / "API" / "KeybayVersion.swift").read_text()
    release = re.search(r'static let release = "([^"]+)"', swift).group(1)
    changelog = re.match(r"keybay \(([^)]+)\)", (REPOSITORY / "debian" / "changelog").read_text()).group(1)
    assert _version.__version__ == release == changelog == keybay.library_version() == keybay.__version__
    pyproject = (PACKAGE / "pyproject.toml").read_text()
    assert 'dynamic = ["version"]' in pyproject
    assert not re.search(r"(?m)^version\s*=\s*\"", pyproject)  # no second, static version


def test_ldconfig_runs_only_for_a_system_prefix_without_destdir(tmp_path):
    """make -n: the commands install would run, as root (the test's user)."""
    build = pathlib.Path(os.environ["KEYBAY_LIBRARY"]).parent

    def commands(*arguments):
        return run(["make", "-n", "install", f"BIN={build}", "LDCONFIG=ldconfig-marker", *arguments], dict(os.environ),
                   REPOSITORY)
    assert "ldconfig-marker" in commands("PREFIX=/usr/local")
    assert "ldconfig-marker" in commands("PREFIX=/usr")
    assert "ldconfig-marker" not in commands("PREFIX=/usr", f"DESTDIR={tmp_path}/stage")
    assert "ldconfig-marker" not in commands(f"PREFIX={tmp_path}/prefix")
