# SPDX-License-Identifier: Apache-2.0
"""Runs the CLI (argv[1]) with the given arguments on a new pseudo-terminal up to its first secret
prompt (echo turned off), prints everything it wrote to the terminal by then, and ends it."""
import os, select, signal, sys, termios, time

from pty_child import spawn

master, slave, child = spawn(sys.argv[1:])
seen = b""
deadline = time.time() + 30
while time.time() < deadline and termios.tcgetattr(slave)[3] & termios.ECHO and child.poll() is None:
    if select.select([master], [], [], 0.01)[0]:
        seen += os.read(master, 4096)
time.sleep(0.05)
while select.select([master], [], [], 0.05)[0]:
    seen += os.read(master, 4096)
child.send_signal(signal.SIGTERM)
child.wait(timeout=30)
sys.stdout.write(seen.decode("utf-8", "replace"))
