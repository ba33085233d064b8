# SPDX-License-Identifier: Apache-2.0
"""docker-credential-keybay as Docker runs a credential helper (docker-credential-helpers'
protocol): one action argument, input on stdin, output and errors on stdout, exit status 1 on
an error, and exactly "credentials not found in native keychain" for a miss."""
import json

import pytest

HELPER = "docker-credential-keybay"
NOT_FOUND = b"credentials not found in native keychain\n"


@pytest.fixture
def docker(home):
    return lambda action, stdin=b"", *arguments: home.run([HELPER, *arguments, action], stdin=stdin)


def store_json(url, username, secret):
    return json.dumps({"ServerURL": url, "Username": username, "Secret": secret}).encode()


def test_round_trip_with_list_and_a_miss(docker, home):
    assert docker("list").stdout == b"{}\n"
    missed = docker("get", b"https://index.docker.io/v1/\n")
    assert (missed.returncode, missed.stdout, missed.stderr) == (1, NOT_FOUND, b"")
    assert not (home.root / "data" / "keybay" / "docker-credential").exists()  # a miss creates nothing

    for url, user, secret in [("https://index.docker.io/v1/", "alice", "s3cr3t"), ("registry.example.com:5000", "bob", "t0ken"),
                              ("ghcr.io", "<token>", "identity-token")]:
        stored = docker("store", store_json(url, user, secret))
        assert (stored.returncode, stored.stdout, stored.stderr) == (0, b"", b""), stored.stdout
    got = docker("get", b"https://index.docker.io/v1/\n")
    assert (got.returncode, got.stderr) == (0, b"")
    assert got.stdout == b'{"ServerURL":"https://index.docker.io/v1/","Username":"alice","Secret":"s3cr3t"}\n'
    listed = docker("list")
    assert listed.returncode == 0
    assert listed.stdout == b'{"ghcr.io":"<token>","https://index.docker.io/v1/":"alice","registry.example.com:5000":"bob"}\n'
    # store again replaces; erase removes one; a second erase is a miss.
    assert docker("store", store_json("ghcr.io", "carol", "new")).returncode == 0
    assert json.loads(docker("get", b"ghcr.io").stdout) == {"ServerURL": "ghcr.io", "Username": "carol", "Secret": "new"}
    erased = docker("erase", b"registry.example.com:5000\n")
    assert (erased.returncode, erased.stdout) == (0, b"")
    again = docker("erase", b"registry.example.com:5000\n")
    assert (again.returncode, again.stdout) == (1, NOT_FOUND)
    assert json.loads(docker("list").stdout) == {"ghcr.io": "carol", "https://index.docker.io/v1/": "alice"}
    missed = docker("get", b"registry.example.com:5000")
    assert (missed.returncode, missed.stdout, missed.stderr) == (1, NOT_FOUND, b"")


def test_any_characters_round_trip(docker):
    url = "https://r.example/\u00e9\u4e2d\U0001F600/\"\\/\b\f\n\r\t\u0000\u001f\u2028 =?"
    user, secret = "us\u00e9r\u0000\U0010FFFF", "\ud7ff\ue000\U00010000" + "x" * 70000
    text = ('{"Secret":"' + json.dumps(secret)[1:-1] + '", "Username" : ' + json.dumps(user, ensure_ascii=True)
            + ' ,\n "ServerURL":' + json.dumps(url, ensure_ascii=False) + ', "Extra": [1, -2.5e+3, {"a": null}, true, false, ""]}')
    assert docker("store", text.encode("utf-8")).returncode == 0
    got = docker("get", url.strip().encode("utf-8"))
    assert got.returncode == 0, got.stdout
    assert json.loads(got.stdout.decode("utf-8")) == {"ServerURL": url, "Username": user, "Secret": secret}
    assert json.loads(docker("list").stdout.decode("utf-8")) == {url: user}
    # \u escapes with a surrogate pair decode to the same characters as the raw UTF-8.
    assert docker("store", b'{"ServerURL":"emoji.example","Username":"\\ud83d\\ude00","Secret":"s"}').returncode == 0
    assert json.loads(docker("get", b"emoji.example").stdout)["Username"] == "\U0001F600"


@pytest.mark.parametrize("text", [
    b"", b"null", b"[]", b'"x"', b"{", b'{"ServerURL":"a","Username":"b","Secret":"c"', b'{"ServerURL":"a","Username":"b","Secret":"c"} x',
    b'{"ServerURL":"a","Username":"b","Secret":"c",}', b"{'ServerURL':'a'}", b'{"ServerURL":"a","Username":"b","Secret":1}',
    b'{"ServerURL":"a","Username":"b","Secret":null}', b'{"ServerURL":"a","ServerURL":"a","Username":"b","Secret":"c"}',
    b'{"ServerURL":"a","Username":"b","Secret":"\\ud800"}', b'{"ServerURL":"a","Username":"b","Secret":"\\udc00\\ud800"}',
    b'{"ServerURL":"a","Username":"b","Secret":"\\ud800\\u0041"}', b'{"ServerURL":"a","Username":"b","Secret":"\\x41"}',
    b'{"ServerURL":"a","Username":"b","Secret":"\\u12"}', b'{"ServerURL":"a","Username":"b","Secret":"tab\there"}',
    b'{"ServerURL":"a","Username":"b","Secret":"\xff"}', b'{"ServerURL":"a","Username":"b","Secret":"\xc0\x80"}',
    b'{"ServerURL":"a","Username":"b","Secret":"\xed\xa0\x80"}', b'{"ServerURL":"a","Username":"b","Secret":"\xf4\x90\x80\x80"}',
    b'{"ServerURL":"a","Username":"b","Secret":"c","n":01}', b'{"ServerURL":"a","Username":"b","Secret":"c","n":1.}',
    b'{"ServerURL":"a","Username":"b","Secret":"c","n":tru}', b'{"ServerURL":"a","Username":"b","Secret":"c","n":' + b"[" * 100 + b"]" * 100 + b"}",
    b'\xef\xbb\xbf{"ServerURL":"a","Username":"b","Secret":"c"}',
])
def test_malformed_json_is_refused_and_nothing_stored(docker, text):
    result = docker("store", text)
    assert result.returncode == 1 and result.stdout.endswith(b"\n") and result.stdout.count(b"\n") == 1, result.stdout
    assert docker("list").stdout == b"{}\n"


def test_protocol_errors(docker):
    cases = [("store", store_json("", "u", "s"), b"no credentials server URL\n"),
             ("store", store_json("x", "", "s"), b"no credentials username\n"),
             ("store", b'{"Username":"u","Secret":"s"}', b"no credentials server URL\n"),
             ("get", b"  \n", b"no credentials server URL\n"),
             ("erase", b"", b"no credentials server URL\n"),
             ("frobnicate", b"", b"Unknown credential action `frobnicate`\n")]
    for action, stdin, message in cases:
        result = docker(action, stdin)
        assert (result.returncode, result.stdout, result.stderr) == (1, message, b""), (action, result)
    # An empty secret is a credential like any other.
    assert docker("store", store_json("empty.example", "u", "")).returncode == 0
    assert json.loads(docker("get", b"empty.example").stdout)["Secret"] == ""


def test_version_and_app(docker, home):
    version = docker("version")
    assert version.returncode == 0 and version.stdout.startswith(b"docker-credential-keybay (keybay) ")
    assert docker("store", store_json("work.example", "w", "s"), "--app", "work.docker").returncode == 0
    assert docker("list", b"", "--app", "work.docker").stdout == b'{"work.example":"w"}\n'
    assert docker("list").stdout == b"{}\n"


def test_a_locked_store_says_what_to_do(docker, home):
    assert docker("store", store_json("locked.example", "u", "locked-secret")).returncode == 0
    home.protect_with_passphrase("docker-credential")
    for action, stdin in [("get", b"locked.example"), ("list", b""), ("erase", b"locked.example"),
                          ("store", store_json("locked.example", "u", "new-secret-value"))]:
        result = docker(action, stdin)
        assert result.returncode == 1, action
        assert result.stdout.count(b"\n") == 1 and b"keybay-methods --app docker-credential unlock" in result.stdout, result.stdout
        assert result.stderr == result.stdout
        assert b"locked-secret" not in result.stdout + result.stderr and b"new-secret-value" not in result.stdout + result.stderr
