"""UDP feedback frames (PROTOCOL.md section 2): decoding, camera reassembly, loss counting.

Everything here is pure: no sockets, no threads, so it can be tested by feeding bytes.
"""

import math
import struct
import zlib
from collections import OrderedDict, namedtuple
from dataclasses import dataclass, field

from .errors import FrameError

try:  # numpy is optional: only the as_numpy() helpers need it
    import numpy as _np
except ImportError:  # pragma: no cover - exercised only without numpy
    _np = None

ODOM_MAGIC = b"ODM1"
SCAN_MAGIC = b"SCN1"
CAM_MAGIC = b"CAM1"

ODOM = struct.Struct("<4sId5f")  # 36 bytes
SCAN_HEAD = struct.Struct("<4sId4fI")  # 36 bytes, then count float32
CAM_HEAD = struct.Struct("<4sIHHIIHH")  # 24 bytes, then RGB payload

# A camera frame larger than this is refused rather than allocated (bounded memory).
MAX_IMAGE_BYTES = 64 * 1024 * 1024

Odometry = namedtuple("Odometry", "x y theta v w seq t")
Odometry.__doc__ = """Wheel odometry: pose estimate [m, m, rad], achieved velocities [m/s, rad/s],
frame sequence number and simulation time [s]."""

CameraChunk = namedtuple("CameraChunk", "seq width height size offset index count payload")


@dataclass(frozen=True)
class Scan:
    """One 360 degree planar laser scan in the sensor frame (x forward, counter-clockwise)."""

    angle_min: float  # [rad]
    angle_increment: float  # [rad]
    range_min: float  # [m]
    range_max: float  # [m]
    ranges: tuple  # [m], one per beam; range_max means no return
    seq: int = 0
    t: float = 0.0  # simulation time [s]

    def __len__(self):
        return len(self.ranges)

    def angles(self):
        """The angle [rad] of every beam."""
        return [self.angle_min + i * self.angle_increment for i in range(len(self.ranges))]

    def points(self):
        """(x, y) [m] in the robot frame of every beam that hit something."""
        out = []
        for i, r in enumerate(self.ranges):
            if math.isfinite(r) and self.range_min <= r < self.range_max:
                a = self.angle_min + i * self.angle_increment
                out.append((r * math.cos(a), r * math.sin(a)))
        return out

    def as_numpy(self):
        """The ranges as a float32 numpy array (needs numpy)."""
        if _np is None:
            raise ImportError("Scan.as_numpy() needs numpy")
        return _np.asarray(self.ranges, dtype=_np.float32)


@dataclass(frozen=True)
class Image:
    """One RGB888 camera image: rows top to bottom, 3 bytes per pixel."""

    width: int  # [px]
    height: int  # [px]
    rgb: bytes = field(repr=False)  # width * height * 3 bytes
    seq: int = 0

    def pixel(self, x, y):
        """The (r, g, b) of pixel column x, row y (row 0 is the top)."""
        if not (0 <= x < self.width and 0 <= y < self.height):
            raise IndexError("pixel (%d, %d) outside %dx%d image" % (x, y, self.width, self.height))
        i = (y * self.width + x) * 3
        return tuple(self.rgb[i:i + 3])

    def to_ppm(self):
        """The image as a binary PPM (P6) file, as bytes."""
        return b"P6\n%d %d\n255\n" % (self.width, self.height) + bytes(self.rgb)

    def to_png(self):
        """The image as a PNG file, as bytes (standard library only)."""
        return encode_png(self.width, self.height, self.rgb)

    def save(self, path):
        """Write the image to path: PNG if it ends in .png, else PPM."""
        data = self.to_png() if str(path).lower().endswith(".png") else self.to_ppm()
        with open(path, "wb") as f:
            f.write(data)

    save_png = save

    def as_numpy(self):
        """A (height, width, 3) uint8 numpy array (needs numpy)."""
        if _np is None:
            raise ImportError("Image.as_numpy() needs numpy")
        return _np.frombuffer(self.rgb, dtype=_np.uint8).reshape(self.height, self.width, 3)


def encode_png(width, height, rgb):
    """A minimal 8-bit RGB PNG encoder (no filtering; zlib does the work)."""
    if len(rgb) != width * height * 3:
        raise ValueError("rgb has %d bytes, expected %d" % (len(rgb), width * height * 3))
    stride = width * 3
    mv = memoryview(bytes(rgb))
    raw = b"".join(b"\x00" + mv[y * stride:(y + 1) * stride].tobytes() for y in range(height))

    def chunk(tag, data):
        return (struct.pack(">I", len(data)) + tag + data
                + struct.pack(">I", zlib.crc32(tag + data) & 0xFFFFFFFF))

    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr)
            + chunk(b"IDAT", zlib.compress(raw, 6)) + chunk(b"IEND", b""))


def decode_odom(buf):
    """An ODM1 datagram -> Odometry. Raises FrameError when it is not one."""
    if len(buf) != ODOM.size:
        raise FrameError("odom frame has %d bytes, expected %d" % (len(buf), ODOM.size))
    seq, t, x, y, theta, v, w = _unpack_head(buf, ODOM, ODOM_MAGIC, "odom frame")
    return Odometry(x, y, theta, v, w, seq, t)


def _unpack_head(buf, head, magic, what):
    """The fields of buf's header after its magic; FrameError when buf is
    shorter than the header or carries another magic."""
    if len(buf) < head.size:
        raise FrameError("%s has %d bytes, shorter than its %d-byte header"
                         % (what, len(buf), head.size))
    fields = head.unpack_from(buf)
    if fields[0] != magic:
        raise FrameError("%s has magic %r, expected %r" % (what, bytes(fields[0]), magic))
    return fields[1:]


def decode_scan(buf):
    """An SCN1 datagram -> Scan. Raises FrameError when it is not one."""
    seq, t, amin, ainc, rmin, rmax, count = _unpack_head(buf, SCAN_HEAD, SCAN_MAGIC,
                                                         "scan frame")
    if len(buf) != SCAN_HEAD.size + 4 * count:
        raise FrameError("scan frame has %d bytes, but count %d needs %d"
                         % (len(buf), count, SCAN_HEAD.size + 4 * count))
    ranges = struct.unpack_from("<%df" % count, buf, SCAN_HEAD.size)
    return Scan(amin, ainc, rmin, rmax, ranges, seq, t)


def decode_camera_chunk(buf, max_image_bytes=MAX_IMAGE_BYTES, copy=True):
    """A CAM1 datagram -> CameraChunk. Raises FrameError when invalid.

    With copy=False the payload is a view into buf (valid until buf is reused).
    """
    seq, w, h, size, offset, index, count = _unpack_head(buf, CAM_HEAD, CAM_MAGIC,
                                                         "camera chunk")
    n = len(buf) - CAM_HEAD.size
    if size != w * h * 3:
        raise FrameError("camera chunk says size %d, but %dx%d RGB is %d" % (size, w, h, w * h * 3))
    if size == 0 or size > max_image_bytes:
        raise FrameError("camera image size %d outside 1..%d" % (size, max_image_bytes))
    if count == 0 or index >= count:
        raise FrameError("camera chunk index %d not below chunk count %d" % (index, count))
    if n == 0 or offset + n > size:
        raise FrameError("camera chunk payload [%d, %d) outside the %d-byte image"
                         % (offset, offset + n, size))
    payload = memoryview(buf)[CAM_HEAD.size:]
    return CameraChunk(seq, w, h, size, offset, index, count, bytes(payload) if copy else payload)


def seq_delta(new, old):
    """new - old for uint32 sequence numbers, in [-2^31, 2^31)."""
    d = (new - old) & 0xFFFFFFFF
    return d - 0x100000000 if d >= 0x80000000 else d


class SeqTracker:
    """Counts frames lost (gaps in seq) and frames arriving late or twice.

    accept(seq) says whether a frame is newer than every frame seen so far (deliver it)
    or stale (drop it: a fresh frame has already been delivered).
    """

    def __init__(self):
        self.last = None
        self.received = 0  # frames delivered
        self.dropped = 0  # seq numbers skipped over (lost, or arrived too late)
        self.late = 0  # frames that arrived after a newer one (or twice)

    def reset(self):
        """Forget the baseline (e.g. after a reconnect to a restarted stack)."""
        self.last = None

    def accept(self, seq):
        if self.last is not None:
            d = seq_delta(seq, self.last)
            if d <= 0:
                self.late += 1
                return False
            self.dropped += d - 1
        self.last = seq
        self.received += 1
        return True


class _Pending:
    __slots__ = ("width", "height", "size", "count", "buf", "have", "spans")

    def __init__(self, c):
        self.width, self.height, self.size, self.count = c.width, c.height, c.size, c.count
        self.buf = bytearray(c.size)
        self.have = set()  # chunk indices received
        self.spans = []  # (offset, length) of each chunk received

    def covered(self):
        """True when the chunks tile [0, size) exactly, without holes or overlaps."""
        end = 0
        for off, n in sorted(self.spans):
            if off != end:
                return False
            end += n
        return end == self.size


class CameraAssembler:
    """Reassembles camera images from chunks by seq and offset.

    Out-of-order chunks are fine, duplicates are ignored, chunks of images older than
    the last delivered one are ignored, at most max_pending incomplete images are kept
    (the oldest is abandoned first). A delivered image's seq gap counts toward dropped.
    """

    def __init__(self, max_pending=4, max_image_bytes=MAX_IMAGE_BYTES):
        if max_pending < 1:
            raise ValueError("max_pending must be >= 1")
        self.max_pending = max_pending
        self.max_image_bytes = max_image_bytes
        self.pending = OrderedDict()  # seq -> _Pending, oldest first
        self.tracker = SeqTracker()
        self.duplicates = 0  # chunks received twice
        self.late_chunks = 0  # chunks of an image older than the last delivered
        self.incomplete = 0  # images abandoned with chunks missing
        self.invalid = 0  # chunks that contradict their image's other chunks

    @property
    def dropped(self):
        return self.tracker.dropped

    def reset(self):
        self.pending.clear()
        self.tracker.reset()

    def feed(self, buf):
        """Feed one datagram; returns the completed Image or None. Raises FrameError."""
        return self.feed_chunk(decode_camera_chunk(buf, self.max_image_bytes))

    def feed_chunk(self, c):
        last = self.tracker.last
        if last is not None and seq_delta(c.seq, last) <= 0:
            self.late_chunks += 1
            return None
        p = self.pending.get(c.seq)
        if p is None:
            while len(self.pending) >= self.max_pending:
                self.pending.popitem(last=False)
                self.incomplete += 1
            p = self.pending[c.seq] = _Pending(c)
        elif (c.width, c.height, c.count) != (p.width, p.height, p.count):
            self.invalid += 1
            return None
        if c.index in p.have:
            self.duplicates += 1
            return None
        p.have.add(c.index)
        p.buf[c.offset:c.offset + len(c.payload)] = c.payload
        p.spans.append((c.offset, len(c.payload)))
        if len(p.have) < p.count:
            return None
        del self.pending[c.seq]
        if not p.covered():  # chunks overlapped or left holes: not a real image
            self.invalid += 1
            return None
        # Older incomplete images can no longer be delivered: a newer one is here.
        for s in [s for s in self.pending if seq_delta(s, c.seq) < 0]:
            del self.pending[s]
            self.incomplete += 1
        self.tracker.accept(c.seq)
        return Image(p.width, p.height, bytes(p.buf), c.seq)
