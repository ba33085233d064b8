# SPDX-License-Identifier: Apache-2.0
"""`docker-credential-keybay import`: a config.json as Docker writes it (tab-indented, its
`auths` entries with `auth` and `identitytoken`, other members around them), imported; the
credentials then come back through the helper's `get` as Docker asks for them."""
import base64
import json
import os
import stat

HELPER = "docker-credential-keybay"


def b64(text):
    return base64.b64encode(text.encode()).decode()


# As Docker's config file writer lays it out (json.MarshalIndent with a tab), other members kept.
CONFIG = ('{\n'
          '\t"auths": {\n'
          '\t\t"ghcr.io": {},\n'
          f'\t\t"https://index.docker.io/v1/": {{\n\t\t\t"auth": "{b64("alice:s3cr:et")}"\n\t\t}},\n'
          f'\t\t"registry.example.com:5000": {{\n\t\t\t"auth": "{b64("bob:ignored")}",\n\t\t\t"email": "bob@example.com",\n'
          '\t\t\t"identitytoken": "identity-token-1"\n\t\t}\n'
          '\t},\n'
          '\t"HttpHeaders": {\n\t\t"User-Agent": "Docker-Client/20.10.24 (linux)"\n\t},\n'
          '\t"psFormat": "table {{.ID}}\\t{{.Names}}",\n'
          '\t"detachKeys": "ctrl-e,e"\n'
          '}')
AFTER = ('{\n'
         '\t"auths": {\n'
         '\t\t"ghcr.io": {},\n'
         '\t\t"https://index.docker.io/v1/": {},\n'
         '\t\t"registry.example.com:5000": {\n\t\t\t"email": "bob@example.com"\n\t\t}\n'
         '\t},\n'
         '\t"HttpHeaders": {\n\t\t"User-Agent": "Docker-Client/20.10.24 (linux)"\n\t},\n'
         '\t"psFormat": "table {{.ID}}\\t{{.Names}}",\n'
         '\t"detachKeys": "ctrl-e,e",\n'
         '\t"credsStore": "keybay"\n'
         '}')


def config(home, text=CONFIG, mode=0o600):
    directory = home.root / ".docker"
    directory.mkdir(exist_ok=True)
    path = directory / "config.json"
    path.write_text(text)
    path.chmod(mode)
    return path


def helper(home, *arguments, stdin=b""):
    return home.run([HELPER, *arguments], stdin=stdin)


def get(home, url):
    result = helper(home, "get", stdin=url.encode())
    return json.loads(result.stdout) if result.returncode == 0 else None


def test_import_and_remove_source_keep_every_other_member(home):
    path = config(home, mode=0o640)
    result = helper(home, "import", "--remove-source")
    assert result.returncode == 0, result.stderr
    assert result.stdout == f"{path}: imported 2, unchanged 0, replaced 0, conflicts 0, malformed 0, removed 2\n".encode()
    assert path.read_text() == AFTER
    assert json.loads(AFTER)["credsStore"] == "keybay"
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o640
    assert get(home, "https://index.docker.io/v1/") == {"ServerURL": "https://index.docker.io/v1/", "Username": "alice", "Secret": "s3cr:et"}
    assert get(home, "registry.example.com:5000") == {"ServerURL": "registry.example.com:5000", "Username": "<token>",
                                                      "Secret": "identity-token-1"}
    # Importing the rewritten file again finds nothing to import and changes nothing.
    again = helper(home, "import", "--remove-source")
    assert again.stdout == f"{path}: imported 0, unchanged 0, replaced 0, conflicts 0, malformed 0, removed 0\n".encode()
    assert path.read_text() == AFTER


def test_an_existing_creds_store_is_replaced_in_place(home):
    text = '{"credsStore":"desktop","auths":{"r.example":{"auth":"' + b64("u:p") + '"}}}'
    path = config(home, text)
    assert helper(home, "import", "--remove-source", str(path)).returncode == 0
    assert path.read_text() == '{"credsStore":"keybay","auths":{"r.example":{}}}'


def test_conflicts_malformed_entries_and_dry_runs(home):
    assert helper(home, "store", stdin=json.dumps({"ServerURL": "https://index.docker.io/v1/", "Username": "alice",
                                                   "Secret": "other"}).encode()).returncode == 0
    text = CONFIG.replace('"ghcr.io": {}', '"ghcr.io": {"auth": "not base64 SECRETMARKER"}')
    path = config(home, text)
    dry = helper(home, "import", "--dry-run", "--remove-source")
    assert dry.returncode == 1
    assert dry.stdout == f"{path}: would import 1, unchanged 0, replaced 0, conflicts 1, malformed 1, would remove 1\n".encode()
    assert path.read_text() == text
    assert get(home, "registry.example.com:5000") is None

    kept = helper(home, "import", "--remove-source")
    assert kept.returncode == 1
    assert b"conflict: other credentials for https://index.docker.io/v1/" in kept.stderr
    assert b"ghcr.io" in kept.stderr and b"SECRETMARKER" not in kept.stderr + kept.stdout
    after = json.loads(path.read_text())
    assert after["auths"]["https://index.docker.io/v1/"] == {"auth": b64("alice:s3cr:et")}  # the conflict stays
    assert after["auths"]["registry.example.com:5000"] == {"email": "bob@example.com"}
    assert after["auths"]["ghcr.io"] == {"auth": "not base64 SECRETMARKER"}
    assert get(home, "https://index.docker.io/v1/")["Secret"] == "other"

    replaced = helper(home, "import", "--remove-source", "--replace")
    assert replaced.returncode == 0, replaced.stderr
    assert get(home, "https://index.docker.io/v1/")["Secret"] == "s3cr:et"
    assert "auth" not in json.loads(path.read_text())["auths"]["https://index.docker.io/v1/"]


def test_a_file_that_does_not_parse_exactly_is_refused(home):
    for text in ['{"auths": {}, "auths": {}}', '{"auths": {"r": {"auth": "' + b64("u:p") + '"}}} trailing',
                 '{"auths": []}', '{"auths": {"r": {"auth": "x", "auth": "y"}}}', '[]']:
        path = config(home, text)
        result = helper(home, "import", "--remove-source")
        assert result.returncode == 1, text
        assert path.read_text() == text
    assert not (home.root / "data" / "keybay" / "docker-credential").exists()
