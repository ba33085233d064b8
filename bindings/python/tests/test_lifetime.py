# SPDX-License-Identifier: Apache-2.0
"""What keybay.open gives the library lives as long as the Store: the library keeps open's
keybay_interaction until keybay_close and calls it later (keybay.h). Here the later call is a
store held by the agent that must open itself to change its methods: it asks through the
interaction it was opened with, after both stores' open calls have returned and the garbage was
collected and the freed memory given to other callbacks."""
import os
import pathlib
import subprocess
import sys
import tempfile
import textwrap
import time

import keybay
from conftest import FAST, PACKAGE, Asker

CLI = pathlib.Path(os.environ["KEYBAY_LIBRARY"]).parent / "keybay-methods"

# Run in a process of its own: against a Store that lets its callbacks go, the library calls
# freed memory, which may end the process.
LATER_CALL = textwrap.dedent("""
    import ctypes, gc, sys
    import keybay
    from keybay import _library

    app1, method1, app2, method2 = sys.argv[1:5]

    class Asker:
        def __init__(self, name, answer):
            self.name, self.answer = name, answer
        def ask_secret(self, prompt, is_confirmation):
            print("asked", self.name, flush=True)
            return self.answer

    first = keybay.open(app1, method=method1, interaction=Asker("first", "passphrase one"))
    second = keybay.open(app2, method=method2, interaction=Asker("second", "passphrase two"))
    gc.collect()
    # Memory a freed callback had goes to others, which answer nothing.
    def other(*arguments):
        print("asked other", flush=True)
        return 26
    others = [_library.ASK_SECRET(other) for _ in range(2000)]
    for prototype in (_library.CONFIRM, _library.IS_CANCELLED):
        others += [prototype(lambda *arguments: 0) for _ in range(500)]
    # The call's own interaction asks nothing: only the kept one can answer.
    first.remove_method(method1, interaction=Asker("the call's", None))
    print("removed", flush=True)
    second.close()
    first.close()
""")


def test_the_interaction_open_kept_answers_after_gc(tmp_path):
    apps = ["org.keybay.pytest.lifetime-one", "org.keybay.pytest.lifetime-two"]
    secrets = ["passphrase one", "passphrase two"]
    methods = []
    for app, secret in zip(apps, secrets):
        keybay.reset(app)
        with keybay.open(app) as store:
            store.set("k", "v")
            methods.append(store.enroll("passphrase", interaction=Asker(secret), **FAST))
    runtime = tempfile.mkdtemp(prefix="keybay-runtime-", dir=tmp_path)
    os.chmod(runtime, 0o700)
    env = dict(os.environ, XDG_RUNTIME_DIR=runtime, KEYBAY_PINENTRY="none",
               PYTHONPATH=str(PACKAGE) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    agent = subprocess.Popen([str(CLI), "agent"], env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE, start_new_session=True)
    try:
        deadline = time.monotonic() + 10
        while not os.path.exists(os.path.join(runtime, "keybay", "agent.socket")):
            assert agent.poll() is None and time.monotonic() < deadline, agent.stderr.read() if agent.poll() is not None else "no socket"
            time.sleep(0.05)
        for app, method, secret in zip(apps, methods, secrets):
            unlocked = subprocess.run([str(CLI), "--app", app, "unlock", "--method", method, "--for", "60",
                                       "--passphrase-fd", "0"], input=secret.encode(), env=env, capture_output=True,
                                      timeout=60)
            assert unlocked.returncode == 0, unlocked.stderr
        later = subprocess.run([sys.executable, "-c", LATER_CALL, apps[0], methods[0], apps[1], methods[1]], env=env,
                               capture_output=True, timeout=120)
    finally:
        agent.terminate()
        agent.wait(timeout=10)
    # The first store's own interaction answered, once; no other callback was called.
    assert later.returncode == 0, (later.returncode, later.stdout, later.stderr)
    assert later.stdout.decode().split("\n") == ["asked first", "removed", ""], later.stdout
    assert keybay.status(apps[0])["state"] == "platform-only"
    assert keybay.status(apps[1])["state"] == "protected"
    for app in apps:
        keybay.reset(app)
