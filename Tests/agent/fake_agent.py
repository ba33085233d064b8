# SPDX-License-Identifier: Apache-2.0
"""A listener on the agent's socket that is not the agent, for the client's fail-closed tests.

  fake_agent.py silent PATH          accepts every connection and never answers
  fake_agent.py answer PATH RECORD   answers a query with "holding" and anything else with the
                                     value b"fake-value" (protocol version 1, docs/agent.md), and
                                     appends to RECORD how many bytes each connection sent

It runs until it is killed."""
import os
import socket
import struct
import sys
import time

mode, path = sys.argv[1], sys.argv[2]
listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
os.umask(0o177)
listener.bind(path)
listener.listen(16)
held = []


def frame(kind, body):
    return struct.pack(">IBB", 2 + len(body), 1, kind) + body


while True:
    connection, _ = listener.accept()
    if mode == "silent":
        held.append(connection)
        continue
    connection.settimeout(1)
    received = b""
    try:
        while len(received) < 4 or len(received) < 4 + struct.unpack(">I", received[:4])[0]:
            chunk = connection.recv(65536)
            if not chunk:
                break
            received += chunk
    except OSError:
        pass
    with open(sys.argv[3], "a") as record:
        record.write(f"{len(received)}\n")
    if len(received) >= 6:
        if received[5] == 0x04:
            reply = frame(0x83, struct.pack(">q", int(time.time()) + 3600) + struct.pack(">I", 9) + b"file-root")
        else:
            value = b"fake-value"
            reply = frame(0x84, b"\x01" + struct.pack(">I", len(value)) + value)
        try:
            connection.sendall(reply)
        except OSError:
            pass
    connection.close()
