# SPDX-License-Identifier: Apache-2.0
"""The credential helpers as users get them: `make install` of this build into a temporary
prefix (the helpers compiled there with -Werror), then run as processes (by real git, or as the
Docker protocol runs them) with HOME and the XDG directories in a temporary directory per test."""
import os
import pathlib
import subprocess
import sys

import pytest

REPOSITORY = pathlib.Path(__file__).resolve().parents[2]
BUILD = pathlib.Path(os.environ.get("KEYBAY_BUILD", REPOSITORY / ".build" / "debug")).resolve()
if not (BUILD / "libkeybay.so").is_file():
    raise pytest.UsageError(f"no libkeybay.so in KEYBAY_BUILD={BUILD}: run `swift build` first")
# The Python package (for reading records back) loads this build's library.
os.environ.setdefault("KEYBAY_LIBRARY", str(BUILD / "libkeybay.so"))
sys.path.insert(0, str(REPOSITORY / "bindings" / "python"))

STRICT_CFLAGS = "-std=c11 -O2 -g -Wall -Wextra -Werror -D_DEFAULT_SOURCE -D_FORTIFY_SOURCE=2 -fstack-protector-strong"
# git's own askpass of t/lib-credential.sh, in effect: the prompt on stderr, "askpass-<word>" as the answer.
ASKPASS = """#!/bin/sh
echo >&2 askpass: $*
what=$(echo $1 | cut -d" " -f1 | tr A-Z a-z | tr -cd a-z)
echo "askpass-$what"
"""


@pytest.fixture(scope="session")
def prefix(tmp_path_factory):
    """PREFIX after `make install BIN=<this build>`: bin/ holds the helpers and keybay-methods."""
    top = tmp_path_factory.mktemp("prefix")
    result = subprocess.run(["make", "-s", "-C", str(REPOSITORY), "install", f"BIN={BUILD}", f"PREFIX={top}", "PREFIX_RECORD=",
                             f"INTEGRATION_CFLAGS={STRICT_CFLAGS}"], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, f"make install: {result.stdout}\n{result.stderr}"
    return top


class Home:
    """A temporary HOME with its own XDG directories and git configuration, and the installed
    prefix first on PATH."""

    def __init__(self, root, prefix):
        self.root = root
        self.prefix = prefix
        self.bin = prefix / "bin"
        askpass = root / "askpass"
        askpass.write_text(ASKPASS)
        askpass.chmod(0o755)
        self.env = {
            "PATH": f"{self.bin}:/usr/bin:/bin",
            "HOME": str(root),
            "XDG_DATA_HOME": str(root / "data"),
            "XDG_STATE_HOME": str(root / "state"),
            "XDG_CONFIG_HOME": str(root / "config"),
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_ASKPASS": str(askpass),
            "LC_ALL": "C",
            "KEYBAY_PINENTRY": "none",  # no pinentry of this machine's answers for keybay-methods here
        }

    def run(self, argv, stdin=b"", env=None, timeout=60):
        """Runs argv (bytes in, bytes out) in this home, in a session of its own: no terminal."""
        return subprocess.run(argv, input=stdin, capture_output=True, env=dict(self.env, **(env or {})),
                              cwd=self.root, timeout=timeout, start_new_session=True)

    def cli(self, *arguments, stdin=b""):
        """keybay-methods of the installed prefix."""
        return self.run([str(self.bin / "keybay-methods"), *arguments], stdin=stdin)

    def protect_with_passphrase(self, app):
        """Enrolls a passphrase (cheap Argon2 parameters) in `app`'s store, made if absent."""
        secret = b"a passphrase nobody types here\n"
        made = self.cli("--app", app, "set", "integration/setup", "1")
        assert made.returncode == 0, made.stderr
        enrolled = self.cli("--app", app, "enroll", "passphrase", "--opt", "memory-kib=8192", "--opt", "iterations=1",
                            "--opt", "lanes=1", "--passphrase-fd", "0", stdin=secret)
        assert enrolled.returncode == 0, enrolled.stderr
        status = self.cli("--app", app, "--json", "status")
        assert b'"state":"protected"' in status.stdout.replace(b" ", b""), status.stdout


@pytest.fixture
def home(tmp_path, prefix):
    return Home(tmp_path, prefix)
