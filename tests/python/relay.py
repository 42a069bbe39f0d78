"""A UDP relay between the server and a client socket that drops, duplicates and
reorders datagrams by a seeded plan, and logs what it did with each one."""

import random
import socket
import threading


class Relay:
    def __init__(self, target_port=None, drop=0.0, dup=0.0, window=0, seed=1, host="127.0.0.1"):
        self.host = host
        self.target = None if target_port is None else (host, target_port)
        self.drop, self.dup, self.window = drop, dup, window
        self.rnd = random.Random(seed)
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
        self.sock.bind((host, 0))
        self.sock.settimeout(0.1)
        self.port = self.sock.getsockname()[1]
        self.lock = threading.Lock()
        self.forwarded = []  # head (first 24 bytes) of every datagram sent on, in send order
        self.dropped = []  # head of every datagram dropped
        self.held = []
        self._stop = False
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _emit(self, d):
        self.sock.sendto(d, self.target)
        with self.lock:
            self.forwarded.append(d[:24])

    def _run(self):
        while not self._stop:
            try:
                d = self.sock.recv(65536)
            except socket.timeout:
                continue
            except OSError:
                return
            if self.target is None:
                continue  # nobody to relay to yet: not part of the experiment
            if self.rnd.random() < self.drop:
                with self.lock:
                    self.dropped.append(d[:24])
                continue
            copies = 2 if self.rnd.random() < self.dup else 1
            for _ in range(copies):
                if self.window:
                    self.held.append(d)
                    if len(self.held) > self.window:  # send a random held one: reordering
                        self._emit(self.held.pop(self.rnd.randrange(len(self.held))))
                else:
                    self._emit(d)

    def set_target(self, port):
        self.target = (self.host, port)

    def snapshot(self):
        with self.lock:
            return list(self.forwarded), list(self.dropped)

    def close(self):
        self._stop = True
        self.thread.join(5)
        self.sock.close()
