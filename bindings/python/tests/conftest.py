# SPDX-License-Identifier: Apache-2.0
"""Every test runs against the real libkeybay (KEYBAY_LIBRARY, else this checkout's debug build)
with its store in a temporary home, never the user's own."""
import atexit
import os
import pathlib
import shutil
import sys
import tempfile

import pytest

REPOSITORY = pathlib.Path(__file__).resolve().parents[3]
PACKAGE = REPOSITORY / "bindings" / "python"

# Before `import keybay` (which loads the library): fail loudly when there is no library.
if not os.environ.get("KEYBAY_LIBRARY"):
    os.environ["KEYBAY_LIBRARY"] = str(REPOSITORY / ".build" / "debug" / "libkeybay.so")
os.environ["KEYBAY_LIBRARY"] = os.path.abspath(os.environ["KEYBAY_LIBRARY"])
if not os.path.isfile(os.environ["KEYBAY_LIBRARY"]):
    raise pytest.UsageError(f"no library at KEYBAY_LIBRARY={os.environ['KEYBAY_LIBRARY']}: run `swift build` first")
# The home is set before the library is loaded, for the whole session.
HOME = tempfile.mkdtemp(prefix="keybay-python-")
atexit.register(shutil.rmtree, HOME, ignore_errors=True)
for variable, sub in [("HOME", ""), ("XDG_DATA_HOME", "data"), ("XDG_STATE_HOME", "state")]:
    os.environ[variable] = os.path.join(HOME, sub)
os.environ.pop("KEYBAY_ROOT", None)  # file-root, in the temporary home
os.environ.pop("XDG_RUNTIME_DIR", None)  # never the user's keybay agent
sys.path.insert(0, str(PACKAGE))

import keybay  # noqa: E402


@pytest.fixture
def app_id(request):
    """A fresh application id per test; its store lives under the temporary home."""
    name = "org.keybay.pytest." + request.node.name.replace("_", "-")[:80]
    yield name
    keybay.reset(name)


@pytest.fixture
def home():
    return pathlib.Path(HOME)


class Asker:
    """An interaction answering every ask_secret with `answer` and recording what it was asked."""

    def __init__(self, answer):
        self.answer = answer
        self.asked = []
        self.shown = []

    def ask_secret(self, prompt, is_confirmation):
        self.asked.append(is_confirmation)
        return self.answer

    def show_secret(self, label, secret):
        self.shown.append((label, secret))


FAST = {"memory_kib": 8192, "iterations": 1, "lanes": 1}
