# SPDX-License-Identifier: Apache-2.0
"""Runs the CLI on a new pseudo-terminal up to its secret prompt, sends it a signal once echo is
off, and reports how it ended and whether echo is on again: `died of N, echo on`."""
import fcntl, os, select, subprocess, sys, termios, time

cli, sig = sys.argv[1], int(sys.argv[2])
master, slave = os.openpty()

def controlling_terminal():
    os.setsid()
    fcntl.ioctl(slave, termios.TIOCSCTTY, 0)

child = subprocess.Popen([cli, "enroll", "test-counting"], stdin=slave, stdout=slave, stderr=slave,
                         preexec_fn=controlling_terminal, close_fds=True)
deadline = time.time() + 30
while time.time() < deadline and termios.tcgetattr(slave)[3] & termios.ECHO:
    if select.select([master], [], [], 0.01)[0]:
        os.read(master, 4096)
if termios.tcgetattr(slave)[3] & termios.ECHO:
    print("echo was never turned off")
    sys.exit(1)
child.send_signal(sig)
child.wait(timeout=30)
echo = termios.tcgetattr(slave)[3] & termios.ECHO
print(f"died of {-child.returncode}, echo {'on' if echo else 'off'}")
