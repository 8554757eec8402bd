"""The driver's end of the ranks' lifelines: one listening TCP socket for the whole job, and
one connection per rank (mpirep/elastic/lifeline.py is the other end)."""
import secrets
import selectors
import socket

from mpirep.elastic import protocol
from mpirep.elastic.lifeline import keep_alive

_MAX_LINE = 1 << 16


class Connection:
    def __init__(self, sock):
        self.sock = sock
        self.buffer = b""
        self.hello = None        # the rank's hello, once it said it


class LifelineServer:
    def __init__(self):
        self.token = secrets.token_hex(16)
        self._listener = socket.create_server(("", 0), backlog=256)
        self._listener.setblocking(False)
        self.port = self._listener.getsockname()[1]
        self._selector = selectors.DefaultSelector()
        self._selector.register(self._listener, selectors.EVENT_READ)

    def poll(self, timeout):
        """Events since the last poll, waiting up to ``timeout`` s for the first:
        ("hello" | "message", connection, message) and ("closed", connection, None).
        Connections that do not open with a hello carrying the token are dropped unseen."""
        events = []
        for key, _ in self._selector.select(timeout):
            if key.fileobj is self._listener:
                self._accept()
            else:
                events += self._read(key.data)
        return events

    def _accept(self):
        try:
            sock, _ = self._listener.accept()
        except BlockingIOError:
            return
        sock.setblocking(False)
        keep_alive(sock)
        self._selector.register(sock, selectors.EVENT_READ, Connection(sock))

    def _read(self, connection):
        try:
            data = connection.sock.recv(65536)
        except (BlockingIOError, InterruptedError):
            return []
        except OSError:
            data = b""
        if not data:
            return self._dropped(connection)
        connection.buffer += data
        events = []
        while b"\n" in connection.buffer:
            line, connection.buffer = connection.buffer.split(b"\n", 1)
            message = protocol.decode(line)
            if connection.hello is None:
                if not message or message["kind"] != protocol.HELLO \
                        or message.get("token") != self.token:
                    return self._dropped(connection, silently=True)
                connection.hello = message
                events.append(("hello", connection, message))
            elif message is not None:
                events.append(("message", connection, message))
        if len(connection.buffer) > _MAX_LINE:
            return self._dropped(connection, silently=connection.hello is None)
        return events

    def _dropped(self, connection, silently=False):
        self.close(connection)
        return [] if silently or connection.hello is None else [("closed", connection, None)]

    def send(self, connection, kind, **fields):
        try:
            connection.sock.sendall(protocol.encode(kind, **fields))
        except OSError:
            pass   # its closing shows up as an event

    def close(self, connection):
        try:
            self._selector.unregister(connection.sock)
        except (KeyError, ValueError):
            pass
        connection.sock.close()

    def shutdown(self):
        for key in list(self._selector.get_map().values()):
            if key.data is not None:
                self.close(key.data)
        self._selector.unregister(self._listener)
        self._listener.close()
