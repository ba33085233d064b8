# SPDX-License-Identifier: Apache-2.0
"""A command on a new pseudo-terminal that is its controlling terminal (the pty scripts' start)."""
import fcntl, os, subprocess, termios


def spawn(argv):
    """Starts argv in a session of its own whose controlling terminal is a new pty; returns the
    master and slave descriptors and the child."""
    master, slave = os.openpty()

    def controlling_terminal():
        os.setsid()
        fcntl.ioctl(slave, termios.TIOCSCTTY, 0)

    child = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave, preexec_fn=controlling_terminal, close_fds=True)
    return master, slave, child
