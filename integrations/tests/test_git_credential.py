# SPDX-License-Identifier: Apache-2.0
"""git-credential-keybay through real git (`git credential fill/approve/reject`, the helper set
up with `git config --global credential.helper keybay` in a temporary HOME): the cases git's
t/lib-credential.sh runs against external helpers, then what git 2.39 does not pass on
(password_expiry_utc, oauth_refresh_token) against the helper itself, as the protocol defines it."""
import hashlib
import struct

import pytest

HELPER = "git-credential-keybay"


def attributes(**values):
    return "".join(f"{name}={value}\n" for name, value in values.items()).encode()


@pytest.fixture
def git(home):
    configured = home.run(["git", "config", "--global", "credential.helper", "keybay"])
    assert configured.returncode == 0, configured.stderr
    return Git(home)


class Git:
    def __init__(self, home):
        self.home = home

    def credential(self, operation, stdin, *config):
        options = [item for setting in config for item in ("-c", setting)]
        return self.home.run(["git", *options, "credential", operation], stdin=stdin)

    def check(self, operation, stdin, stdout=b"", askpass=(), config=()):
        """As lib-credential.sh's check: exact stdout, and stderr exactly the askpass prompts."""
        result = self.credential(operation, stdin, *config)
        assert result.returncode == 0, result.stderr
        assert result.stdout == stdout
        assert result.stderr == b"".join(f"askpass: {prompt}\n".encode() for prompt in askpass)

    def approve(self, config=(), **values):
        self.check("approve", attributes(**values), config=config)

    def helper(self, operation, stdin, *arguments):
        return self.home.run([HELPER, *arguments, operation], stdin=stdin)


def asked(url, user=None):
    """The prompts git gives through askpass for a URL that has no stored credential."""
    at = url.replace("://", f"://{user or 'askpass-username'}@", 1)
    return ([] if user else [f"Username for '{url}':"]) + [f"Password for '{at}':"]


def test_no_existing_data(git, home):
    git.check("fill", attributes(protocol="https", host="example.com"),
              attributes(protocol="https", host="example.com", username="askpass-username", password="askpass-password"),
              asked("https://example.com"))
    # A miss creates nothing.
    assert not (home.root / "data" / "keybay" / "git-credential").exists()


@pytest.fixture
def stored(git):
    git.approve(protocol="https", host="example.com", username="store-user", password="store-pass")
    return git


def test_stores_and_retrieves_a_password(stored):
    stored.check("fill", attributes(protocol="https", host="example.com"),
                 attributes(protocol="https", host="example.com", username="store-user", password="store-pass"))


def test_requires_matching_protocol(stored):
    stored.check("fill", attributes(protocol="http", host="example.com"),
                 attributes(protocol="http", host="example.com", username="askpass-username", password="askpass-password"),
                 asked("http://example.com"))


def test_requires_matching_host(stored):
    stored.check("fill", attributes(protocol="https", host="other.tld"),
                 attributes(protocol="https", host="other.tld", username="askpass-username", password="askpass-password"),
                 asked("https://other.tld"))


def test_requires_matching_username(stored):
    stored.check("fill", attributes(protocol="https", host="example.com", username="other"),
                 attributes(protocol="https", host="example.com", username="other", password="askpass-password"),
                 asked("https://example.com", "other"))


def test_requires_matching_path(git):
    http_path = ("credential.useHttpPath=true",)
    git.approve(config=http_path, protocol="http", host="path.tld", path="foo.git", username="user", password="pass")
    git.check("fill", attributes(protocol="http", host="path.tld", path="bar.git"),
              attributes(protocol="http", host="path.tld", path="bar.git", username="askpass-username", password="askpass-password"),
              asked("http://path.tld/bar.git"), config=http_path)
    git.check("fill", attributes(protocol="http", host="path.tld", path="foo.git"),
              attributes(protocol="http", host="path.tld", path="foo.git", username="user", password="pass"), config=http_path)


def test_can_forget_a_host(stored):
    stored.check("reject", attributes(protocol="https", host="example.com"))
    stored.check("fill", attributes(protocol="https", host="example.com"),
                 attributes(protocol="https", host="example.com", username="askpass-username", password="askpass-password"),
                 asked("https://example.com"))


@pytest.fixture
def two_users(git):
    git.approve(protocol="https", host="example.com", username="user1", password="pass1")
    git.approve(protocol="https", host="example.com", username="user2", password="pass2")
    return git


def test_stores_several_users(two_users):
    for user, password in [("user1", "pass1"), ("user2", "pass2")]:
        two_users.check("fill", attributes(protocol="https", host="example.com", username=user),
                        attributes(protocol="https", host="example.com", username=user, password=password))
    # Without a username, one of the two, whole.
    result = two_users.credential("fill", attributes(protocol="https", host="example.com"))
    assert result.stdout in [attributes(protocol="https", host="example.com", username=u, password=p)
                             for u, p in [("user1", "pass1"), ("user2", "pass2")]], result.stdout


def test_forgets_one_user_and_remembers_the_other(two_users):
    two_users.check("reject", attributes(protocol="https", host="example.com", username="user1"))
    two_users.check("fill", attributes(protocol="https", host="example.com", username="user1"),
                    attributes(protocol="https", host="example.com", username="user1", password="askpass-password"),
                    asked("https://example.com", "user1"))
    two_users.check("fill", attributes(protocol="https", host="example.com", username="user2"),
                    attributes(protocol="https", host="example.com", username="user2", password="pass2"))
    # And without a username, the one that is left.
    two_users.check("fill", attributes(protocol="https", host="example.com"),
                    attributes(protocol="https", host="example.com", username="user2", password="pass2"))


def test_stores_an_empty_username_and_password(git):
    git.approve(protocol="https", host="sso.tld", username="", password="")
    git.check("fill", attributes(protocol="https", host="sso.tld"),
              attributes(protocol="https", host="sso.tld", username="", password=""))


def test_reject_keeps_a_password_other_than_the_rejected_one(stored):
    stored.check("reject", attributes(protocol="https", host="example.com", username="store-user", password="an-older-one"))
    stored.check("fill", attributes(protocol="https", host="example.com"),
                 attributes(protocol="https", host="example.com", username="store-user", password="store-pass"))


# What git 2.39 does not pass on: the helper as git runs it, attributes on stdin.

def test_keeps_and_returns_password_expiry_utc_and_oauth_refresh_token(git):
    stored = git.helper("store", attributes(protocol="https", host="example.com", username="user4", password="pass",
                                            password_expiry_utc="9999999999", oauth_refresh_token="xyzzy"))
    assert stored.returncode == 0 and stored.stdout == b"" and stored.stderr == b""
    got = git.helper("get", attributes(protocol="https", host="example.com", username="user4"))
    assert got.returncode == 0 and got.stderr == b""
    assert got.stdout == attributes(username="user4", password="pass", password_expiry_utc="9999999999", oauth_refresh_token="xyzzy")
    # git 2.39 takes the password from it (and ignores the rest).
    git.check("fill", attributes(protocol="https", host="example.com", username="user4"),
              attributes(protocol="https", host="example.com", username="user4", password="pass"))


def test_a_new_store_overwrites_when_the_expiry_changes(git):
    for password, expiry in [("pass1", "9999999998"), ("pass2", "9999999999")]:
        assert git.helper("store", attributes(protocol="https", host="example.com", username="user-expiry-overwrite",
                                              password=password, password_expiry_utc=expiry)).returncode == 0
    got = git.helper("get", attributes(protocol="https", host="example.com", username="user-expiry-overwrite"))
    assert got.stdout == attributes(username="user-expiry-overwrite", password="pass2", password_expiry_utc="9999999999")
    git.check("reject", attributes(protocol="https", host="example.com", username="user-expiry-overwrite", password="pass2"))
    assert git.helper("get", attributes(protocol="https", host="example.com", username="user-expiry-overwrite")).stdout == b""


def test_an_expired_password_is_not_returned(git):
    assert git.helper("store", attributes(protocol="https", host="example.com", username="old", password="expired",
                                          password_expiry_utc="1")).returncode == 0
    got = git.helper("get", attributes(protocol="https", host="example.com", username="old"))
    assert got.returncode == 0 and got.stdout == b"" and got.stderr == b""
    git.check("fill", attributes(protocol="https", host="example.com", username="old"),
              attributes(protocol="https", host="example.com", username="old", password="askpass-password"),
              asked("https://example.com", "old"))
    # Another user of the host, not expired, is still found without a username.
    assert git.helper("store", attributes(protocol="https", host="example.com", username="new", password="fresh",
                                          password_expiry_utc="9999999999")).returncode == 0
    got = git.helper("get", attributes(protocol="https", host="example.com"))
    assert got.stdout == attributes(username="new", password="fresh", password_expiry_utc="9999999999")


def test_unknown_attributes_and_operations_are_ignored(git):
    stored = git.helper("store", b"capability[]=authtype\nprotocol=https\nwwwauth[]=Basic realm=x\nhost=example.com\n"
                                 b"username=u\nfuture=1\npassword=p\nephemeral=0\n\n")
    assert stored.returncode == 0 and stored.stderr == b""
    got = git.helper("get", b"protocol=https\nhost=example.com\nstate[]=x\n\n")
    assert got.stdout == attributes(username="u", password="p")
    for operation in ["list", "capability", "frobnicate"]:
        other = git.helper(operation, attributes(protocol="https", host="example.com"))
        assert (other.returncode, other.stdout, other.stderr) == (0, b"", b"")


def test_a_miss_prints_nothing(stored):
    for query in [attributes(protocol="https", host="example.org"), attributes(protocol="https", host="example.com", username="x"),
                  attributes(protocol="ftp", host="example.com")]:
        got = stored.helper("get", query)
        assert (got.returncode, got.stdout, got.stderr) == (0, b"", b"")


def test_any_bytes_of_host_and_path(git, home):
    """Every byte git can pass (all but LF and NUL; CR inside a value only with
    credential.protectProtocol=false) in host and path, and a 64 KiB host: each is one valid key."""
    host = bytes(b for b in range(1, 256) if b not in (10, 13))
    path = bytes(reversed(host)) + "/ünïcødé/😀".encode()
    query = b"protocol=https\nhost=" + host + b"\npath=" + path + b"\n"
    approved = git.credential("approve", query + b"username=u\npassword=p\n\n", "credential.useHttpPath=true")
    assert approved.returncode == 0, approved.stderr
    filled = git.credential("fill", query + b"\n", "credential.useHttpPath=true")
    assert filled.returncode == 0 and filled.stderr == b"", filled.stderr
    assert filled.stdout == query + b"username=u\npassword=p\n"
    # With CR inside, and '=' and spaces, straight to the helper.
    odd = b"protocol=https\nhost=a\rb = c\x7f\xff\npath=" + b"\xfe" * 3 + b"\n"
    assert git.helper("store", odd + b"username=u2\npassword=p2\n").returncode == 0
    assert git.helper("get", odd).stdout == b"username=u2\npassword=p2\n"
    long_host = b"h" * 65536
    assert git.helper("store", b"protocol=https\nhost=" + long_host + b"\nusername=u3\npassword=p3\n").returncode == 0
    assert git.helper("get", b"protocol=https\nhost=" + long_host + b"\n").stdout == b"username=u3\npassword=p3\n"
    keys = home.cli("--app", "git-credential", "keys")
    assert keys.returncode == 0
    listed = keys.stdout.decode().split()
    assert len(listed) == 3 and all(len(key) == 101 and key.startswith("git/") for key in listed), listed


def test_app_chooses_the_store(git, home):
    stored = git.helper("store", attributes(protocol="https", host="example.com", username="u", password="p"), "--app", "work.git")
    assert stored.returncode == 0, stored.stderr
    assert home.cli("--app", "work.git", "keys").stdout.count(b"git/") == 1
    assert not (home.root / "data" / "keybay" / "git-credential").exists()
    assert git.helper("get", attributes(protocol="https", host="example.com"), "--app", "work.git").stdout == attributes(username="u", password="p")
    assert git.helper("get", attributes(protocol="https", host="example.com")).stdout == b""
    # As git runs a helper configured with arguments.
    git.check("fill", attributes(protocol="https", host="example.com"),
              attributes(protocol="https", host="example.com", username="u", password="p"),
              config=("credential.helper=", "credential.helper=keybay --app work.git"))


def test_a_locked_store_gives_a_hint_and_git_goes_on(git, home):
    git.approve(protocol="https", host="example.com", username="locked-user", password="locked-secret")
    home.protect_with_passphrase("git-credential")
    got = git.helper("get", attributes(protocol="https", host="example.com"))
    assert got.returncode == 0 and got.stdout == b""
    assert got.stderr.count(b"\n") == 1 and b"keybay-methods --app git-credential unlock" in got.stderr, got.stderr
    # git goes on and asks.
    filled = git.credential("fill", attributes(protocol="https", host="example.com"))
    assert filled.returncode == 0
    assert filled.stdout == attributes(protocol="https", host="example.com", username="askpass-username", password="askpass-password")
    assert filled.stderr.startswith(got.stderr)
    for operation in ["store", "erase"]:
        result = git.helper(operation, attributes(protocol="https", host="example.com", username="locked-user", password="new-secret-value"))
        assert result.returncode == 1 and result.stdout == b"", operation
        assert result.stderr == got.stderr, result.stderr
    for output in [got, filled, result]:
        assert b"locked-secret" not in output.stderr and b"new-secret-value" not in output.stderr


def documented_key(protocol, host, path, username):
    """The record key as docs/integrations.md defines it, computed here from the text alone."""
    def digest(role, fields, size):
        h = hashlib.blake2b(digest_size=size)
        h.update(b"keybay:integration-record:v1\x00" + bytes([1, role]))
        for tag, value in fields:
            if value is not None:
                h.update(bytes([tag]) + struct.pack(">I", len(value)) + value)
        return h.hexdigest()
    group = digest(1, [(1, protocol), (2, host)], 16)
    identity = digest(2, [(1, protocol), (2, host), (3, path), (4, username)], 32)
    return f"git/{group}/{identity}"


def documented_value(value):
    assert value[:6] == b"KBIR\x01\x01"
    fields, at = {}, 6
    while at < len(value):
        tag, length = value[at], struct.unpack(">I", value[at + 1:at + 5])[0]
        fields[tag] = value[at + 5:at + 5 + length]
        at += 5 + length
    return fields


def test_records_are_as_documented(git, home, monkeypatch):
    git.approve(protocol="https", host="example.com", username="doc-user", password="doc-pass")
    git.approve(config=("credential.useHttpPath=true",), protocol="https", host="example.com", path="r.git", username="", password="")
    monkeypatch.setenv("XDG_DATA_HOME", home.env["XDG_DATA_HOME"])
    monkeypatch.setenv("XDG_STATE_HOME", home.env["XDG_STATE_HOME"])
    import keybay
    with keybay.open("git-credential") as store:
        keys = store.keys()
        first = documented_key(b"https", b"example.com", None, b"doc-user")
        second = documented_key(b"https", b"example.com", b"r.git", b"")
        assert sorted(keys) == sorted([first, second])
        assert documented_value(store.get(first)) == {1: b"https", 2: b"example.com", 4: b"doc-user", 5: b"doc-pass"}
        assert documented_value(store.get(second)) == {1: b"https", 2: b"example.com", 3: b"r.git", 4: b"", 5: b""}


def test_url_is_parsed_as_git_does(git):
    """url=: its protocol, host (with the port), username and password, %-decoded, as if sent one
    by one (git-credential(1)); an http(s) URL's path only with --use-http-path."""
    assert git.helper("store", attributes(protocol="https", host="a.example", username="a", password="pa")).returncode == 0
    # The acceptance case: another host's URL is a miss, not the first credential stored.
    for miss in [b"url=https://b.example/\n\n", b"url=http://a.example/\n\n", b"url=https://a.example:8443/\n\n",
                 b"url=https://other@a.example/\n\n"]:
        got = git.helper("get", miss)
        assert (got.returncode, got.stdout, got.stderr) == (0, b"", b""), miss
    for hit in [b"url=https://a.example\n", b"url=https://a.example/\n\n", b"url=https://a@a.example/repo.git/\n",
                b"url=https://a.example/x?y#z\n", b"url=https://%61@a.example\n"]:
        got = git.helper("get", hit)
        assert (got.returncode, got.stdout, got.stderr) == (0, attributes(username="a", password="pa"), b""), hit
    # Stored from a URL: the port is part of the host, user and password are %-decoded.
    assert git.helper("store", b"url=https://us%40er:p%3Ass@c.example:8443/some/repo.git\n").returncode == 0
    got = git.helper("get", attributes(protocol="https", host="c.example:8443"))
    assert got.stdout == attributes(username="us@er", password="p:ss")
    assert git.helper("get", attributes(protocol="https", host="c.example")).stdout == b""


def test_url_attributes_after_it_override_and_before_it_are_cleared(git):
    assert git.helper("store", attributes(protocol="https", host="a.example", username="a", password="pa")).returncode == 0
    assert git.helper("get", b"url=https://a.example\nhost=b.example\n").stdout == b""
    assert git.helper("get", b"host=b.example\nusername=b\nurl=https://a.example\n").stdout == attributes(username="a", password="pa")
    assert git.helper("get", b"url=https://b.example\nhost=a.example\n").stdout == attributes(username="a", password="pa")


def test_url_path_is_kept_only_when_told(git):
    assert git.helper("store", attributes(protocol="https", host="a.example", path="one.git", username="one", password="p1"),
                      ).returncode == 0
    # Without --use-http-path the URL's path is dropped, as git drops it unless credential.useHttpPath.
    assert git.helper("get", b"url=https://a.example/two.git\n").stdout == attributes(username="one", password="p1")
    told = ["--use-http-path"]
    assert git.helper("get", b"url=https://a.example/two.git\n", *told).stdout == b""
    assert git.helper("get", b"url=https://a.example//one.git//\n", *told).stdout == attributes(username="one", password="p1")
    # Other protocols keep it (useHttpPath concerns http and https only); no host is an empty host.
    assert git.helper("store", b"url=cert:///etc/cert.pem\nusername=c\npassword=pc\n").returncode == 0
    assert git.helper("get", attributes(protocol="cert", host="", path="etc/cert.pem")).stdout == attributes(username="c", password="pc")
    assert git.helper("get", b"url=cert:///etc/other.pem\n").stdout == b""


def test_an_unparseable_url_is_refused_without_repeating_it(git):
    assert git.helper("store", attributes(protocol="https", host="a.example", username="a", password="pa")).returncode == 0
    for bad in [b"url=a.example\n", b"url=://a.example\n", b"url=https://a.example/%0a\n",
                b"url=https://us%0Aer:secret-pass@a.example\n"]:
        got = git.helper("get", bad)
        assert got.returncode == 1 and got.stdout == b"", bad
        assert got.stderr.count(b"\n") == 1 and b"url" in got.stderr and b"secret-pass" not in got.stderr, got.stderr


def test_url_matches_gits_credential_store(git, home):
    """git's own credential-store, given the same url= lines, finds the same credentials."""
    store_file = home.root / "git-credentials"
    urls = [b"https://u1:p1@a.example", b"https://u2:p2@a.example:8443", b"http://u3:p%403@a.example",
            b"https://%75%34:p4@b.example"]
    for url in urls:
        assert git.helper("store", b"url=" + url + b"\n").returncode == 0
        theirs = home.run(["git", "credential-store", "--file", str(store_file), "store"], stdin=b"url=" + url + b"\n")
        assert theirs.returncode == 0, theirs.stderr
    for query in [b"https://a.example", b"https://u1@a.example", b"https://u2@a.example", b"https://a.example:8443",
                  b"http://a.example", b"https://b.example", b"https://u4@b.example", b"https://c.example",
                  b"ftp://a.example"]:
        ours = git.helper("get", b"url=" + query + b"\n")
        theirs = home.run(["git", "credential-store", "--file", str(store_file), "get"], stdin=b"url=" + query + b"\n")
        assert ours.returncode == theirs.returncode == 0
        assert ours.stdout == theirs.stdout, query
