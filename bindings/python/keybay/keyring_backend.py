# SPDX-License-Identifier: Apache-2.0
"""A backend for Python's `keyring` (pip, twine, poetry, ...) that keeps passwords in a Keybay
store, app id "python-keyring" (the property `app_id`, e.g. KEYRING_PROPERTY_APP_ID, chooses
another). keyring finds it through the entry point group `keyring.backends`; its priority is
below SecretService's and above the fail and null backends, so a machine with no Secret Service
gets it by default. docs/integrations.md describes its records.

    PYTHON_KEYRING_BACKEND=keybay.keyring_backend.KeybayKeyring keyring get SERVICE USER
"""
import hashlib
import os
import stat
import struct

from keyring import credentials
from keyring import errors as keyring_errors
from keyring.backend import KeyringBackend
from keyring.compat import properties

APP_ID = "python-keyring"
KEY_PREFIX = "keyring/"
# docs/integrations.md, "Records": kind 3, tags 1 service, 2 username, 3 password.
KIND = 3
SERVICE, USERNAME, PASSWORD = 1, 2, 3
MAGIC = b"KBIR\x01"
DIGEST_LABEL = b"keybay:integration-record:v1\x00"
ROLE_GROUP, ROLE_IDENTITY = 1, 2
# The codes that mean "a secret or an answer is needed": the store is locked to this process.
LOCKED_CODES = ("interaction-required", "authentication-required", "pin-required", "cancelled")


def _fields(pairs):
    return b"".join(bytes([tag]) + struct.pack(">I", len(value)) + value for tag, value in pairs)


def _digest(role, pairs, size):
    digest = hashlib.blake2b(digest_size=size)
    digest.update(DIGEST_LABEL + bytes([KIND, role]) + _fields(pairs))
    return digest.hexdigest()


def _group(service):
    return KEY_PREFIX + _digest(ROLE_GROUP, [(SERVICE, service)], 16) + "/"


def _key(service, username):
    return _group(service) + _digest(ROLE_IDENTITY, [(SERVICE, service), (USERNAME, username)], 32)


def _encode(service, username, password):
    return MAGIC + bytes([KIND]) + _fields([(SERVICE, service), (USERNAME, username), (PASSWORD, password)])


def _decode(value):
    """{tag: bytes} of a version-1 record of this kind, or None for anything else."""
    if value[:6] != MAGIC + bytes([KIND]):
        return None
    fields, at, last = {}, 6, 0
    while at < len(value):
        if len(value) - at < 5:
            return None
        tag, length = value[at], struct.unpack(">I", value[at + 1:at + 5])[0]
        at += 5
        if tag <= last or tag > PASSWORD or length > len(value) - at:
            return None
        fields[tag], at, last = value[at:at + length], at + length, tag
    return fields if SERVICE in fields and USERNAME in fields and PASSWORD in fields else None


def _store_file_exists(app_id):
    """Whether the store file is where docs/c-api.md says it lives. A shortcut only: when it is
    not found, keybay.status decides; it saves a second look at the root before the open."""
    data = os.environ.get("XDG_DATA_HOME", "")
    if not data.startswith("/"):
        home = os.environ.get("HOME", "")
        if not home.startswith("/"):
            return False
        data = os.path.join(home, ".local", "share")
    try:
        return stat.S_ISREG(os.lstat(os.path.join(data, "keybay", app_id, "keybay.v2.store")).st_mode)
    except OSError:
        return False


def _interaction():
    """Who a store's unlock method may ask: chosen here alone. The library's own asker (the
    pinentry KEYBAY_PINENTRY names, the terminal, or `pinentry` on PATH); None where there is none,
    and then a locked store raises KeyringLocked saying what to do."""
    import keybay
    return keybay.default_interaction()


class KeybayKeyring(KeyringBackend):
    """Passwords in a Keybay store (libkeybay.so.1): one store, every service in it."""

    app_id = APP_ID

    @properties.classproperty
    def priority(cls):
        # Viable when libkeybay loads; below SecretService (5) and libsecret (4.8), above fail (0).
        try:
            import keybay  # noqa: F401  (loads the library)
        except ImportError as error:
            raise RuntimeError(f"libkeybay.so.1 cannot be loaded: {error}") from error
        return 1

    def _locked(self, error):
        return keyring_errors.KeyringLocked(
            f'the keybay store "{self.app_id}" is locked [{error.code}]; unlock it with: '
            f"keybay-methods --app {self.app_id} unlock")

    def _open(self, create):
        """The open store, or None when there is none and `create` is false."""
        import keybay
        try:
            if not create and not _store_file_exists(self.app_id) and keybay.status(self.app_id).state == "absent":
                return None
            # The library's open policy, as the credential helpers': a typed secret asked three times.
            return keybay.open(self.app_id, interaction=_interaction(), tries=3)
        except keybay.Error as error:
            if error.code in LOCKED_CODES:
                raise self._locked(error) from error
            raise

    def _read(self, store, key, service):
        value = store.get(key)
        fields = None if value is None else _decode(value)
        return fields if fields is not None and fields[SERVICE] == service else None

    def get_password(self, service, username):
        """The password of `username` for `service`, or None."""
        import keybay
        service_bytes, username_bytes = service.encode("utf-8"), username.encode("utf-8")
        try:
            store = self._open(create=False)
            if store is None:
                return None
            with store:
                fields = self._read(store, _key(service_bytes, username_bytes), service_bytes)
        except keybay.Error as error:
            raise keyring_errors.KeyringError(str(error)) from error
        if fields is None or fields[USERNAME] != username_bytes:
            return None
        return fields[PASSWORD].decode("utf-8")

    def set_password(self, service, username, password):
        """Stores the password, replacing one `username` had for `service`."""
        import keybay
        value = bytearray(_encode(service.encode("utf-8"), username.encode("utf-8"), password.encode("utf-8")))
        try:
            with self._open(create=True) as store:
                store.set(_key(service.encode("utf-8"), username.encode("utf-8")), value)
        except keybay.Error as error:
            raise keyring_errors.PasswordSetError(str(error)) from error
        finally:
            value[:] = bytes(len(value))

    def delete_password(self, service, username):
        """Removes the password; PasswordDeleteError when there is none."""
        import keybay
        try:
            store = self._open(create=False)
            if store is None:
                raise keyring_errors.PasswordDeleteError("no such password")
            with store:
                store.delete(_key(service.encode("utf-8"), username.encode("utf-8")))
        except keybay.NotFound as error:
            raise keyring_errors.PasswordDeleteError("no such password") from error
        except keybay.Error as error:
            raise keyring_errors.PasswordDeleteError(str(error)) from error

    def get_credential(self, service, username):
        """`username`'s credential for `service`, or with no username the service's first (in
        key order); None when there is none."""
        import keybay
        if username is not None:
            password = self.get_password(service, username)
            return None if password is None else credentials.SimpleCredential(username, password)
        service_bytes = service.encode("utf-8")
        group = _group(service_bytes)
        try:
            store = self._open(create=False)
            if store is None:
                return None
            with store:
                for key in store.keys():
                    fields = self._read(store, key, service_bytes) if key.startswith(group) else None
                    if fields is not None:
                        return credentials.SimpleCredential(fields[USERNAME].decode("utf-8"), fields[PASSWORD].decode("utf-8"))
        except keybay.Error as error:
            raise keyring_errors.KeyringError(str(error)) from error
        return None


def import_from_secret_service(service=None, *, replace=False, keyring=None):
    """Brings keyring's own Secret Service items (attributes `service` and `username`, as
    keyring's SecretService backend stores them; only `service`'s when it is given) into the
    Keybay store of `keyring` (a KeybayKeyring; default: a new one, app id "python-keyring"),
    under the backend's own key mapping. An item locked in its keyring is unlocked through the
    Secret Service's prompt (KeyringLocked when it is dismissed). Another password already
    stored for a (service, username) is a conflict, kept unless `replace`. Every written
    password is read back. Returns {"imported", "unchanged", "replaced", "conflicts"}, each a
    list of (service, username); the items stay in the Secret Service."""
    import secretstorage
    backend = keyring if keyring is not None else KeybayKeyring()
    found = []
    connection = secretstorage.dbus_init()
    try:
        for item in secretstorage.search_items(connection, {} if service is None else {"service": service}):
            if item.is_locked() and item.unlock():
                raise keyring_errors.KeyringLocked("the Secret Service's unlock prompt was dismissed")
            attributes = item.get_attributes()
            if "service" in attributes and "username" in attributes and service in (None, attributes["service"]):
                found.append((attributes["service"], attributes["username"], bytearray(item.get_secret())))
    finally:
        connection.close()
    report = {"imported": [], "unchanged": [], "replaced": [], "conflicts": []}
    import keybay
    try:
        with backend._open(create=True) as store:
            for item_service, username, secret in sorted(found, key=lambda f: (f[0], f[1])):
                service_bytes, username_bytes = item_service.encode("utf-8"), username.encode("utf-8")
                key = _key(service_bytes, username_bytes)
                fields = backend._read(store, key, service_bytes)
                outcome = "imported"
                if fields is not None and fields[USERNAME] == username_bytes:
                    if fields[PASSWORD] == secret:
                        report["unchanged"].append((item_service, username))
                        continue
                    if not replace:
                        report["conflicts"].append((item_service, username))
                        continue
                    outcome = "replaced"
                value = bytearray(_encode(service_bytes, username_bytes, bytes(secret)))
                try:
                    store.set(key, value)
                finally:
                    value[:] = bytes(len(value))
                back = backend._read(store, key, service_bytes)
                if back is None or back[USERNAME] != username_bytes or back[PASSWORD] != secret:
                    raise keyring_errors.KeyringError(f"the password for {item_service!r} does not read back as imported")
                report[outcome].append((item_service, username))
    except keybay.Error as error:
        raise keyring_errors.KeyringError(str(error)) from error
    finally:
        for _, _, secret in found:
            secret[:] = bytes(len(secret))
    return report
