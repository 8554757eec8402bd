"""Measure the TCP rate from one emulated host to another, for dev/cluster/shape.

  measure_link.py receive PORT            accept one connection, read to its end, print the rate
  measure_link.py send ADDRESS PORT SECS  send for SECS seconds (at most 2 GiB), then close

The receiver times from its first byte to the end, so the connection's start-up is not counted.
Both sides give up after 20 s without progress."""
import socket
import sys
import time

CHUNK = 1 << 20
MAX_BYTES = 2 << 30
IDLE_LIMIT_S = 20


def receive(port):
    with socket.create_server(("0.0.0.0", port)) as server:
        server.settimeout(IDLE_LIMIT_S)
        conn, _ = server.accept()
    with conn:
        conn.settimeout(IDLE_LIMIT_S)
        first = conn.recv(CHUNK)
        start = time.perf_counter()
        total = 0
        while chunk := conn.recv(CHUNK):
            total += len(chunk)
        seconds = time.perf_counter() - start
    if not first or seconds <= 0:
        sys.exit("measure_link: nothing arrived")
    rate = total * 8 / seconds
    shown = f"{rate / 1e9:.2f} Gbit/s" if rate >= 1e9 else f"{rate / 1e6:.0f} Mbit/s"
    print(f"{shown} ({total / (1 << 20):.0f} MiB in {seconds:.2f} s)")


def send(address, port, seconds):
    payload = bytes(CHUNK)
    deadline = time.perf_counter() + seconds
    sent = 0
    with socket.create_connection((address, port), timeout=IDLE_LIMIT_S) as conn:
        while time.perf_counter() < deadline and sent < MAX_BYTES:
            conn.sendall(payload)
            sent += len(payload)


if __name__ == "__main__":
    if sys.argv[1:2] == ["receive"] and len(sys.argv) == 3:
        receive(int(sys.argv[2]))
    elif sys.argv[1:2] == ["send"] and len(sys.argv) == 5:
        send(sys.argv[2], int(sys.argv[3]), float(sys.argv[4]))
    else:
        sys.exit(__doc__)
