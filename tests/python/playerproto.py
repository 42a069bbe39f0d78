"""A small Player 3 protocol client for the tests, written from Player's
interface definitions: the 32-byte greeting, 40-byte XDR headers, XDR bodies
(every integer in 4 bytes, a counted array as its count then XDR's length)."""

import socket
import struct
import time

DATA, CMD, REQ, ACK, SYNCH, NACK = 1, 2, 3, 4, 5, 6
PLAYER, POSITION2D, LASER, SIMULATION, MAP, RANGER, CAMERA = 1, 4, 6, 31, 42, 62, 40
PUSH, PULL = 1, 2


def u32(*v):
    return struct.pack(">%dI" % len(v), *v)


def f64(*v):
    return struct.pack(">%dd" % len(v), *v)


def f32(*v):
    return struct.pack(">%df" % len(v), *v)


def xbytes(b):
    """A counted byte array: Player's count, XDR's length, the bytes padded to 4."""
    pad = (4 - len(b) % 4) % 4
    return u32(len(b), len(b)) + b + b"\0" * pad


def xname(s):
    return xbytes(s.encode() + b"\0")


class Reader:
    def __init__(self, b):
        self.b, self.o = b, 0

    def u32(self):
        v = struct.unpack_from(">I", self.b, self.o)[0]
        self.o += 4
        return v

    def f64(self):
        v = struct.unpack_from(">d", self.b, self.o)[0]
        self.o += 8
        return v

    def f32(self):
        v = struct.unpack_from(">f", self.b, self.o)[0]
        self.o += 4
        return v

    def bytes(self):
        n, n2 = self.u32(), self.u32()
        assert n == n2, (n, n2)
        v = self.b[self.o:self.o + n]
        self.o += (n + 3) & ~3
        return v

    def done(self):
        return self.o == len(self.b)


class Msg:
    def __init__(self, hdr, body):
        (self.host, self.robot, self.interf, self.index, self.type, self.subtype, self.time,
         self.seq, self.size) = struct.unpack(">6IdII", hdr)
        self.body = body

    def r(self):
        return Reader(self.body)

    def __repr__(self):
        return "Msg(interf=%d index=%d type=%d subtype=%d size=%d)" % (
            self.interf, self.index, self.type, self.subtype, self.size)


class Client:
    def __init__(self, port, host="127.0.0.1", timeout=10.0):
        self.s = socket.create_connection((host, port), timeout=timeout)
        self.ident = self.recv_n(32)
        self.pending = []  # data and synch read while waiting for a reply

    def close(self):
        self.s.close()

    def recv_n(self, n):
        b = b""
        while len(b) < n:
            c = self.s.recv(n - len(b))
            if not c:
                raise ConnectionError("closed after %d of %d bytes" % (len(b), n))
            b += c
        return b

    def send(self, interf, index, type_, subtype, body=b"", size=None):
        h = struct.pack(">6IdII", 0, 0, interf, index, type_, subtype, time.time(), 0,
                        len(body) if size is None else size)
        self.s.sendall(h + body)

    def read(self):
        m = Msg(self.recv_n(40), b"")
        m.body = self.recv_n(m.size) if m.size else b""
        return m

    def request(self, interf, index, subtype, body=b""):
        """A request and its ACK or NACK (data read meanwhile is kept)."""
        self.send(interf, index, REQ, subtype, body)
        while True:
            m = self.read()
            if m.type in (ACK, NACK):
                assert (m.interf, m.index, m.subtype) == (interf, index, subtype), m
                return m
            self.pending.append(m)

    def subscribe(self, interf, index, access=1):
        m = self.request(PLAYER, 0, 3, u32(0, 0, interf, index, access) + xbytes(b""))
        return m

    def datamode(self, mode):
        return self.request(PLAYER, 0, 5, u32(mode))

    def pull_round(self):
        """PULL: REQ_DATA, its ACK, then the data up to the SYNCH."""
        ack = self.request(PLAYER, 0, 4)
        assert ack.type == ACK, ack
        out = self.pending
        self.pending = []
        while not out or out[-1].type != SYNCH:
            out.append(self.read())
        return out
