# SPDX-License-Identifier: Apache-2.0
"""`git-credential-keybay import`: files written by git's own `store` helper (`git credential
approve` with credential.helper "store --file F"), imported, then read back by real
`git credential fill` through the keybay helper."""
import os
import stat

import pytest

from test_git_credential import Git, attributes

HELPER = "git-credential-keybay"
# A password git must %-encode in its store file.
ODD_PASSWORD = "p@ss:w/rd%20+x"


@pytest.fixture
def git(home):
    assert home.run(["git", "config", "--global", "credential.helper", "keybay"]).returncode == 0
    return Git(home)


def git_store(home, path, **values):
    """What git's store helper writes for an approved credential."""
    result = home.run(["git", "-c", "credential.helper=", "-c", f"credential.helper=store --file {path}",
                       "credential", "approve"], stdin=attributes(**values))
    assert result.returncode == 0, result.stderr


def import_(home, *arguments):
    return home.run([HELPER, "import", *arguments])


def fill(git, host, username=None):
    values = dict(protocol="https", host=host) | ({"username": username} if username else {})
    return git.credential("fill", attributes(**values))


def test_two_good_lines_and_a_malformed_one(git, home):
    source = home.root / ".git-credentials"
    git_store(home, source, protocol="https", host="example.com", username="alice", password=ODD_PASSWORD)
    git_store(home, source, protocol="https", host="git.example.org:8443", username="bob", password="hunter2")
    lines = source.read_bytes().splitlines(keepends=True)
    assert len(lines) == 2 and any(b"p%40ss%3aw%2frd%2520%2bx" in line.lower() for line in lines)
    malformed = b"https://SECRETMARKER-no-user-here.example\n"
    source.write_bytes(lines[0] + malformed + lines[1])
    source.chmod(0o640)

    result = import_(home, "--remove-source")
    assert result.returncode == 0, result.stderr
    assert result.stdout == f"{source}: imported 2, unchanged 0, replaced 0, conflicts 0, malformed 1, removed 2\n".encode()
    assert f"{source}:2: not a credential URL".encode() in result.stderr
    assert b"SECRETMARKER" not in result.stderr + result.stdout and b"hunter2" not in result.stderr
    # Only the malformed line is left, and the file keeps its mode.
    assert source.read_bytes() == malformed
    assert stat.S_IMODE(os.stat(source).st_mode) == 0o640
    assert fill(git, "example.com").stdout == attributes(protocol="https", host="example.com", username="alice", password=ODD_PASSWORD)
    assert fill(git, "git.example.org:8443").stdout == attributes(protocol="https", host="git.example.org:8443", username="bob",
                                                                  password="hunter2")


def test_a_conflict_is_kept_and_named_unless_replace(git, home):
    git.approve(protocol="https", host="example.com", username="alice", password="in-keybay")
    source = home.root / "creds"
    git_store(home, source, protocol="https", host="example.com", username="alice", password="in-the-file")
    git_store(home, source, protocol="https", host="example.net", username="carol", password="same")
    git.approve(protocol="https", host="example.net", username="carol", password="same")
    before = source.read_bytes()

    kept = import_(home, "--remove-source", str(source))
    assert kept.returncode == 1
    assert kept.stdout == f"{source}: imported 0, unchanged 1, replaced 0, conflicts 1, malformed 0, removed 1\n".encode()
    number = [i + 1 for i, line in enumerate(before.splitlines()) if b"in-the-file" in line][0]
    assert f"{source}:{number}: conflict".encode() in kept.stderr and b"in-the-file" not in kept.stderr
    assert source.read_bytes() == next(line for line in before.splitlines(keepends=True) if b"in-the-file" in line)
    assert fill(git, "example.com").stdout.endswith(b"password=in-keybay\n")

    replaced = import_(home, "--remove-source", "--replace", str(source))
    assert replaced.returncode == 0, replaced.stderr
    assert replaced.stdout == f"{source}: imported 0, unchanged 0, replaced 1, conflicts 0, malformed 0, removed 1\n".encode()
    assert source.read_bytes() == b""
    assert fill(git, "example.com").stdout.endswith(b"password=in-the-file\n")


def test_a_dry_run_changes_nothing(git, home):
    source = home.root / ".git-credentials"
    git_store(home, source, protocol="https", host="example.com", username="alice", password="pw")
    before = source.read_bytes()
    result = import_(home, "--dry-run", "--remove-source")
    assert result.returncode == 0, result.stderr
    assert result.stdout == f"{source}: would import 1, unchanged 0, replaced 0, conflicts 0, malformed 0, would remove 1\n".encode()
    assert source.read_bytes() == before
    assert not (home.root / "data" / "keybay" / "git-credential").exists()


def test_both_default_files_and_a_missing_named_one(git, home):
    git_store(home, home.root / ".git-credentials", protocol="https", host="one.example", username="u1", password="p1")
    (home.root / "config" / "git").mkdir(parents=True)
    xdg = home.root / "config" / "git" / "credentials"
    git_store(home, xdg, protocol="https", host="two.example", username="u2", password="p2")
    result = import_(home)
    assert result.returncode == 0, result.stderr
    assert result.stdout.count(b": imported 1,") == 2
    assert fill(git, "two.example").stdout.endswith(b"password=p2\n")
    # The files stay without --remove-source; importing again finds them unchanged.
    again = import_(home)
    assert again.stdout.count(b": imported 0, unchanged 1,") == 2
    missing = import_(home, str(home.root / "none"))
    assert missing.returncode == 1 and b"does not exist" in missing.stderr
