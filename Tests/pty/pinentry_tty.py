# SPDX-License-Identifier: Apache-2.0
"""Runs a command (argv[2:]) with no controlling terminal (a new session, standard input from
/dev/null) and GPG_TTY naming a pseudo-terminal made here, so that a text-mode pinentry the
command starts asks on it. The next answer of argv[1] (a JSON list) is typed, then Enter, once
per prompt the pinentry writes, when the terminal's echo is off (it reads). Prints one JSON
object: the command's `status`, `stdout`, `stderr`, the `terminal` transcript and how many
answers were `typed`."""
import json, os, select, subprocess, sys, termios, time

answers = json.loads(sys.argv[1])
master, slave = os.openpty()
environment = dict(os.environ, GPG_TTY=os.ttyname(slave), TERM="dumb")
child = subprocess.Popen(sys.argv[2:], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         env=environment, start_new_session=True, close_fds=True)
transcript = b""
typed = 0
deadline = time.time() + 60

def drain(seconds):
    global transcript
    while select.select([master], [], [], seconds)[0]:
        transcript += os.read(master, 4096)
        seconds = 0

def echo_on():
    return termios.tcgetattr(slave)[3] & termios.ECHO

def prompts():
    # The prompts Keybay sets (SETPROMPT), as pinentry-tty writes them before it reads.
    return sum(transcript.count(p) for p in (b"Passphrase: ", b"Repeat: ", b"PIN: ", b"Recovery key: "))

while time.time() < deadline and child.poll() is None and typed < len(answers):
    drain(0.01)
    if prompts() > typed and not echo_on():
        os.write(master, answers[typed].encode() + b"\n")
        typed += 1
try:
    out, err = child.communicate(timeout=max(deadline - time.time(), 1))
except subprocess.TimeoutExpired:
    child.kill()
    out, err = child.communicate()
drain(0.05)
print(json.dumps({"status": child.returncode, "stdout": out.decode("utf-8", "replace"), "stderr": err.decode("utf-8", "replace"),
                  "terminal": transcript.decode("utf-8", "replace"), "typed": typed}))
