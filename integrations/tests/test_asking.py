# SPDX-License-Identifier: Apache-2.0
"""A protected store as the three integrations meet it with no terminal (each run in a session of
its own): unlocked with `keybay-methods unlock`, all three read it through the agent and ask
nothing (no pinentry may run); locked, they ask through the pinentry KEYBAY_PINENTRY names (the
scripted pinentry of Tests/pinentry, which logs what it is sent), and a cancel there leaves the
store as it was and gives the hint; git's GIT_TERMINAL_PROMPT=0 asks nobody."""
import json
import os
import shutil
import sys

import pytest

from conftest import BUILD, REPOSITORY

PASSPHRASE = b"a passphrase nobody types here"
SCRIPTED_PINENTRY = REPOSITORY / "Tests" / "pinentry" / "scripted_pinentry.py"
STORE_FILE = ("data", "keybay", "{app}", "keybay.v2.store")


@pytest.fixture
def runtime(home, tmp_path_factory):
    """A private XDG_RUNTIME_DIR (0700) for the agent; removing it at the end ends the agent
    (it checks its socket file every second)."""
    directory = tmp_path_factory.mktemp("runtime")
    directory.chmod(0o700)
    home.env["XDG_RUNTIME_DIR"] = str(directory)
    yield directory
    home.cli("lock", "--all")
    shutil.rmtree(directory)


@pytest.fixture
def pinentry(home):
    """The scripted pinentry, run through a link in a directory of its own, answering PASSPHRASE."""
    directory = home.root / "pinentry"
    directory.mkdir()
    (directory / "mode").write_text("answer")
    (directory / "answers").write_text(PASSPHRASE.hex() + "\n")
    (directory / "pinentry").symlink_to(SCRIPTED_PINENTRY)
    return directory


def ran(pinentry):
    """How many times the scripted pinentry was started, and how many GETPINs it answered."""
    log = (pinentry / "log").read_bytes().splitlines() if (pinentry / "log").exists() else []
    return sum(line.startswith(b"RUN ") for line in log), sum(line == b"GETPIN" for line in log)


def git_fill(home, host, extra=None):
    return home.run(["git", "-c", "credential.helper=", "-c", "credential.helper=keybay", "credential", "fill"],
                    stdin=f"protocol=https\nhost={host}\n".encode(), env=extra)


def docker_get(home, url, extra=None):
    return home.run(["docker-credential-keybay", "get"], stdin=url.encode(), env=extra)


def keyring_get(home, service, user, extra=None):
    environment = {"PYTHON_KEYRING_BACKEND": "keybay.keyring_backend.KeybayKeyring",
                   "PYTHONPATH": str(REPOSITORY / "bindings" / "python"),
                   "KEYBAY_LIBRARY": str(BUILD / "libkeybay.so"), **(extra or {})}
    return home.run([sys.executable, "-m", "keyring", "get", service, user], env=environment)


def store_bytes(home, app):
    return (home.root / os.path.join(*STORE_FILE).format(app=app)).read_bytes()


def stored_credentials(home):
    """One credential in each tool's store, then each store protected by a passphrase."""
    git = home.run(["git", "-c", "credential.helper=", "-c", "credential.helper=keybay", "credential", "approve"],
                   stdin=b"protocol=https\nhost=git.example\nusername=alice\npassword=git-secret\n")
    assert git.returncode == 0, git.stderr
    docker = home.run(["docker-credential-keybay", "store"],
                      stdin=json.dumps({"ServerURL": "registry.example", "Username": "bob", "Secret": "docker-secret"}).encode())
    assert docker.returncode == 0, docker.stdout
    keyring = home.run([sys.executable, "-m", "keyring", "set", "pypi.example", "carol"], stdin=b"keyring-secret\n",
                       env={"PYTHON_KEYRING_BACKEND": "keybay.keyring_backend.KeybayKeyring",
                            "PYTHONPATH": str(REPOSITORY / "bindings" / "python"),
                            "KEYBAY_LIBRARY": str(BUILD / "libkeybay.so")})
    assert keyring.returncode == 0, keyring.stderr
    for app in ("git-credential", "docker-credential", "python-keyring"):
        home.protect_with_passphrase(app)


def read_stored(home, tool, asker):
    """The credential stored_credentials gave `tool`, read back through it; the run's result."""
    if tool == "git":
        result = git_fill(home, "git.example", asker)
        assert result.returncode == 0 and b"username=alice\npassword=git-secret\n" in result.stdout, result.stderr
    elif tool == "docker":
        result = docker_get(home, "registry.example", asker)
        assert result.returncode == 0 and json.loads(result.stdout)["Secret"] == "docker-secret", result.stdout
    else:
        result = keyring_get(home, "pypi.example", "carol", asker)
        assert (result.returncode, result.stdout) == (0, b"keyring-secret\n"), result.stderr
    return result


def test_unlocked_stores_need_no_terminal_and_no_prompt(home, runtime, pinentry):
    stored_credentials(home)
    for app in ("git-credential", "docker-credential", "python-keyring"):
        unlocked = home.cli("--app", app, "unlock", "--for", "60", "--passphrase-fd", "0", stdin=PASSPHRASE + b"\n")
        assert unlocked.returncode == 0, unlocked.stderr
    # A pinentry is named, so any question would have reached it: none may.
    asker = {"KEYBAY_PINENTRY": str(pinentry / "pinentry")}
    filled = git_fill(home, "git.example", asker)
    assert filled.returncode == 0 and b"username=alice\npassword=git-secret\n" in filled.stdout, filled.stderr
    got = docker_get(home, "registry.example", asker)
    assert (got.returncode, json.loads(got.stdout)) == (0, {"ServerURL": "registry.example", "Username": "bob", "Secret": "docker-secret"})
    read = keyring_get(home, "pypi.example", "carol", asker)
    assert (read.returncode, read.stdout) == (0, b"keyring-secret\n"), read.stderr
    assert ran(pinentry) == (0, 0)
    # Locked again: each asks the pinentry once more (cancelled here) and gives the hint.
    (pinentry / "mode").write_text("cancel")
    assert home.cli("lock", "--all").returncode == 0
    assert docker_get(home, "registry.example", asker).returncode == 1
    assert ran(pinentry) == (1, 1)


@pytest.mark.parametrize("tool", ["git", "docker", "keyring"])
def test_a_locked_store_is_unlocked_through_pinentry(home, runtime, pinentry, tool):
    stored_credentials(home)
    asker = {"KEYBAY_PINENTRY": str(pinentry / "pinentry")}
    result = read_stored(home, tool, asker)
    assert ran(pinentry) == (1, 1)
    for secret in (b"git-secret", b"docker-secret", b"keyring-secret", PASSPHRASE):
        assert secret not in result.stderr


@pytest.mark.parametrize("tool,app", [("git", "git-credential"), ("docker", "docker-credential"), ("keyring", "python-keyring")])
def test_a_cancel_in_pinentry_changes_nothing_and_gives_the_hint(home, runtime, pinentry, tool, app):
    stored_credentials(home)
    (pinentry / "mode").write_text("cancel")
    before = store_bytes(home, app)
    asker = {"KEYBAY_PINENTRY": str(pinentry / "pinentry")}
    hint = f"keybay-methods --app {app} unlock".encode()
    if tool == "git":
        # git goes on and asks through its askpass.
        result = git_fill(home, "git.example", asker)
        assert result.returncode == 0 and b"password=askpass-password\n" in result.stdout
        assert hint in result.stderr
    elif tool == "docker":
        result = docker_get(home, "registry.example", asker)
        assert result.returncode == 1 and hint in result.stdout
    else:
        result = keyring_get(home, "pypi.example", "carol", asker)
        assert result.returncode != 0 and hint in result.stderr
    assert ran(pinentry) == (1, 1)
    assert store_bytes(home, app) == before


def test_git_terminal_prompt_0_asks_nobody(home, runtime, pinentry):
    stored_credentials(home)
    result = home.run(["git-credential-keybay", "get"], stdin=b"protocol=https\nhost=git.example\n",
                      env={"KEYBAY_PINENTRY": str(pinentry / "pinentry"), "GIT_TERMINAL_PROMPT": "0"})
    assert (result.returncode, result.stdout) == (0, b"")
    assert b"keybay-methods --app git-credential unlock" in result.stderr
    assert ran(pinentry) == (0, 0)


@pytest.mark.parametrize("tool", ["git", "docker", "keyring"])
def test_a_wrong_passphrase_is_asked_again_by_the_open_policy(home, runtime, pinentry, tool):
    """The helpers open by the library's policy (three asks, the error shown on the next), as
    keybay-methods does: a wrong passphrase in the pinentry, then the right one, opens."""
    stored_credentials(home)
    (pinentry / "answers").write_text(b"wrong one".hex() + "\n" + PASSPHRASE.hex() + "\n")
    asker = {"KEYBAY_PINENTRY": str(pinentry / "pinentry")}
    result = read_stored(home, tool, asker)
    assert ran(pinentry) == (2, 2)
    log = (pinentry / "log").read_bytes()
    assert log.count(b"SETERROR ") == 1, log
