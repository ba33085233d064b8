#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""A pinentry for tests: speaks Assuan on stdin/stdout as pinentry does, logs every line it is
sent, and answers as its directory says. It is run through a symbolic link (a link is never a
file open for writing, which exec would refuse with ETXTBSY); the link's directory holds `mode`,
`answers` (one answer per line, in hex; each GETPIN takes the next, `next` counting them), `log`
(`RUN <pid>`, then each line received), and, copied at each GETPIN or CONFIRM, the run's own
/proc/self/cmdline and environ (`run-<pid>.cmdline`, `run-<pid>.environ`) and what each of its
descriptors was when it started (`run-<pid>.fds`, one `N TARGET` line each).

Modes: answer (default: GETPIN answers the next answer, in D lines of 7 bytes, %-escaped;
CONFIRM says OK), cancel (ERR 83886179 to GETPIN and CONFIRM), no (CONFIRM: ERR 83886194, not
confirmed), die (exits at GETPIN without a word), hang (never answers GETPIN), silent (never
greets), flood (greets, then sends INQUIRE lines for ever and never reads what it is sent)."""
import fcntl, os, sys, time

directory = os.path.dirname(os.path.abspath(sys.argv[0]))
with open(os.path.join(directory, "mode")) as f:
    mode = f.read().strip() or "answer"
pid = os.getpid()

def log(text):
    with open(os.path.join(directory, "log"), "ab") as f:
        f.write(text + b"\n")

def copy_proc():
    for name in ("cmdline", "environ"):
        with open(f"/proc/self/{name}", "rb") as src, open(os.path.join(directory, f"run-{pid}.{name}"), "wb") as dst:
            dst.write(src.read())
    with open(os.path.join(directory, f"run-{pid}.fds"), "w") as f:
        f.writelines(f"{fd} {target}\n" for fd, target in sorted(started_with.items()))

def next_answer():
    with open(os.path.join(directory, "next"), "a+") as counter:
        fcntl.flock(counter, fcntl.LOCK_EX)
        counter.seek(0)
        n = int(counter.read() or "0")
        counter.seek(0)
        counter.truncate()
        counter.write(str(n + 1))
    with open(os.path.join(directory, "answers"), "rb") as f:
        return bytes.fromhex(f.read().decode().split("\n")[n])

def send(line):
    sys.stdout.buffer.write(line + b"\n")
    sys.stdout.buffer.flush()

def escape(data):
    return b"".join(b"%%%02X" % c if c in b"%\r\n\\" else bytes([c]) for c in data)

# The descriptors it was started with, before Python opens anything of its own.
started_with = {int(fd): os.readlink(f"/proc/self/fd/{fd}") for fd in os.listdir("/proc/self/fd") if os.path.exists(f"/proc/self/fd/{fd}")}
log(b"RUN %d" % pid)
if mode == "silent":
    time.sleep(3600)
send(b"OK Pleased to meet you")
if mode == "flood":
    # Each INQUIRE is answered with CAN, which nobody reads: the host's send must not wait for ever.
    while True:
        send(b"INQUIRE PASSPHRASE")
for raw in sys.stdin.buffer:
    line = raw.rstrip(b"\n")
    log(line)
    command = line.split(b" ", 1)[0]
    if command in (b"GETPIN", b"CONFIRM"):
        copy_proc()
    if command == b"GETPIN":
        if mode == "die":
            os._exit(1)
        if mode == "hang":
            time.sleep(3600)
        if mode == "cancel":
            send(b"ERR 83886179 Operation cancelled <Pinentry>")
            continue
        answer = next_answer()
        for i in range(0, len(answer), 7):
            send(b"D " + escape(answer[i:i + 7]))
        send(b"OK")
    elif command == b"CONFIRM":
        send({"cancel": b"ERR 83886179 Operation cancelled <Pinentry>", "no": b"ERR 83886194 Not confirmed <Pinentry>"}.get(mode, b"OK"))
    elif command == b"BYE":
        send(b"OK closing connection")
        break
    else:
        send(b"OK")
