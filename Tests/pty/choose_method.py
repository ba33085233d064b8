# SPDX-License-Identifier: Apache-2.0
"""Runs the CLI (argv[2:]) on a new pseudo-terminal, answers its method choice with argv[1] once
`Unlock with which method?` appears, lets it finish (its secrets come from elsewhere: a pinentry
or a descriptor), then prints its exit status on the first line and everything it wrote to the
terminal after it."""
import os, select, sys, time

from pty_child import spawn

master, slave, child = spawn(sys.argv[2:])
os.close(slave)
seen, answered = b"", False
deadline = time.time() + 60
while time.time() < deadline:
    if select.select([master], [], [], 0.05)[0]:
        try:
            chunk = os.read(master, 4096)
        except OSError:  # the child closed the terminal
            break
        if not chunk:
            break
        seen += chunk
    if not answered and b"which method?" in seen:
        os.write(master, sys.argv[1].encode() + b"\n")
        answered = True
    if child.poll() is not None and not select.select([master], [], [], 0.05)[0]:
        break
status = child.wait(timeout=30)
print(status)
sys.stdout.write(seen.decode("utf-8", "replace"))
