"""The step lane (pa_lane, shm/pa_layout.h): NavEnv(shm=True)'s step of its one
robot, and NavVectorEnv(shm=True)'s of its run of robots, through the ctl
segment, without pa-netgw. pa-sim runs the request as the commands pa-netgw
would queue for a step_batch with observe "shm" (one robot: a STEP with its
drive; a batch: the robots' SET_CMDS, from the (v, w) array the client wrote
into the segment, then the STEP; the ticks; the robots' PAB1 block in the
observation segment), so the observations are the TCP reply's, bit for bit;
what goes is the gateway's two hops (its wake-ups, its parse and format, two
socket round trips' worth of kernel) and the request's encoding."""

import ctypes
import fcntl
import mmap
import os
import struct
import time

import numpy as np

from ._stack import BIN_FIELDS, StackError, open_regular
from ..errors import Error

_U32 = struct.Struct("<I")
_REQ = struct.Struct("<IIdd")     # robot, ticks, v, w (at the lane's robot field)
_REPLY = struct.Struct("<i4xQQ")  # status, tick, obs_seq (at its status field)
_U64 = struct.Struct("<Q")
_HEAD = struct.Struct("<4s3I")    # a PAB1 block's magic, robots, beams, fields
_UNPACK16 = struct.Struct("<%dd" % len(BIN_FIELDS)).unpack_from
_CLOCK_MONOTONIC = 1
# Spin this long for the reply before sleeping on the semaphore: a step of a
# few ticks and one scan is answered within it on a quiet machine, where a
# sleeping client pays the wake-up latency (tens of us on a VM); longer
# spins lost under load (docs/benchmarks.md, "The step lane").
SPIN_S = 50e-6
# A batch whose last reply took longer than this: its next wait sleeps at once.
LONG_WAIT_S = 1e-3


class _Timespec(ctypes.Structure):
    _fields_ = [("tv_sec", ctypes.c_long), ("tv_nsec", ctypes.c_long)]


class LaneBusy(Exception):
    """Another client holds the lane (or this stack has none): step over the socket."""


class Lane:
    """The lane of one instance, held (flock on the ctl segment) until close()."""

    def __init__(self, layout, instance, reader, timeout=60.0):
        lane = layout.get("lane")
        if not lane:
            raise LaneBusy("these binaries have no step lane")
        self.timeout = float(timeout)
        self._last_wait = 0.0  # the last reply's wait [s]
        self.reader = reader  # the observation segment and the rings
        self.range_max = float("nan")  # a robot's without a scan (the owner sets it)
        self._codes = lane["status"]
        path = os.path.join(layout["shm_dir"], layout["segment_name"].format(
            instance=instance, segment=lane["segment"]))
        self.fd = open_regular(path, os.O_RDWR, LaneBusy)
        self.mm = None
        self._anchor = None
        self._obs = None  # (mmap, memoryview) of the observation segment
        self._mv = None
        try:
            try:
                fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                raise LaneBusy("another client holds the step lane of %s" % instance) from None
            self.mm = mmap.mmap(self.fd, 0, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
            hf = layout["header"]["fields"]
            magic, version = (_U32.unpack_from(self.mm, hf[f]["offset"])[0]
                              for f in ("magic", "version"))
            if magic != layout["header"]["magic"] or version != layout["layout_version"]:
                raise LaneBusy("%s: magic/version %x/%d, expected %x/%d"
                               % (path, magic, version, layout["header"]["magic"],
                                  layout["layout_version"]))
            f = layout["records"]["pa_lane"]["fields"]
            o = lane["offset"]
            self._req_off, self._done_off = o + f["req"]["offset"], o + f["done"]["offset"]
            self._args_off, self._reply_off = o + f["robot"]["offset"], o + f["status"]["offset"]
            self._msg_off = o + f["msg"]["offset"]
            self._count_off = o + f["count"]["offset"]
            self._count = None  # what the count field holds (None: not written yet)
            self._beams_off = o + f["beams"]["offset"]
            self._beams = None  # what the beams field holds (None: not written yet)
            act = _U64.unpack_from(self.mm, o + f["act_off"]["offset"])[0]
            # the segment's last array: max_robots (v, w) pairs, rounded up to 64 bytes
            self.max_robots = (len(self.mm) - act) // 16 if 0 < act < len(self.mm) else 0
            if self.max_robots < 1:
                raise LaneBusy("the step lane's action array is outside the segment")
            # the batch's (v, w) per robot, written in place (pa-sim reads it once)
            self._act = np.frombuffer(self.mm, "<f8", 2 * self.max_robots, act).reshape(-1, 2)
            wake = _U64.unpack_from(self.mm, o + f["wake_off"]["offset"])[0]
            if not 0 < wake <= len(self.mm) - 32:
                raise LaneBusy("pa-sim has not opened the step lane")
            self._anchor = ctypes.c_char.from_buffer(self.mm)
            base = ctypes.addressof(self._anchor)
            self._wake = ctypes.c_void_p(base + wake)
            self._rsem = ctypes.c_void_p(base + o + f["reply_sem"]["offset"])
            libc = ctypes.CDLL(None, use_errno=True)
            self._sem_post, self._sem_getvalue = libc.sem_post, libc.sem_getvalue
            self._sem_clockwait = libc.sem_clockwait
            self._val = ctypes.c_int(0)
            self._pval = ctypes.byref(self._val)
            self._ts = _Timespec()
            self._pts = ctypes.byref(self._ts)
            self._req = _U32.unpack_from(self.mm, self._done_off)[0]
            if _U32.unpack_from(self.mm, self._req_off)[0] != self._req:
                raise LaneBusy("the step lane has a request in flight")
            self._buf = bytearray(1 << 16)  # the last block, copied
            self._mv = memoryview(self._buf)
        except BaseException:
            self.close()
            raise

    def close(self):
        self._mv = None
        self._act = None
        self._anchor = None
        if self._obs is not None:
            self._obs[1].release()
            self._obs[0].close()
            self._obs = None
        if self.mm is not None:
            try:
                self.mm.close()
            except BufferError:  # a view still alive: the GC unmaps it
                pass
            self.mm = None
        if self.fd is not None:
            os.close(self.fd)  # the flock goes with it
            self.fd = None

    def _wait(self, req, spin=SPIN_S):
        """Until pa-sim's done is req: spin (yielding the core) for `spin` s,
        then sleep on the reply semaphore."""
        mm, off, u32 = self.mm, self._done_off, _U32.unpack_from
        now = time.perf_counter
        t0 = now()
        spin_end = t0 + spin
        while u32(mm, off)[0] != req:
            t = now()
            if t < spin_end:
                os.sched_yield()
                continue
            give_up = t + self.timeout
            while u32(mm, off)[0] != req:
                left = give_up - now()
                if left <= 0:
                    raise StackError("pa-sim sent no step reply within %g s" % self.timeout)
                ns = time.clock_gettime_ns(time.CLOCK_MONOTONIC) + int(min(left, 0.5) * 1e9)
                self._ts.tv_sec, self._ts.tv_nsec = divmod(ns, 1000000000)
                self._sem_clockwait(self._rsem, _CLOCK_MONOTONIC, self._pts)
            break
        return now() - t0

    def _run(self, req, spin=SPIN_S):
        """Posts the request req (its fields written) and waits for its reply
        (spinning up to `spin` s): (tick, obs_seq), or the error pa-sim named."""
        mm = self.mm
        _U32.pack_into(mm, self._req_off, req)  # after the arguments (x86 keeps the order)
        self._req = req
        if self._sem_getvalue(self._wake, self._pval) != 0 or self._val.value <= 0:
            self._sem_post(self._wake)
        self._last_wait = self._wait(req, spin)
        status, tick, seq = _REPLY.unpack_from(mm, self._reply_off)
        if status:
            msg = bytes(mm[self._msg_off:self._msg_off + 96]).split(b"\0", 1)[0]
            code = self._codes[status] if 0 < status < len(self._codes) else "invalid_message"
            raise Error(code, msg.decode("utf-8", "replace"))
        return tick, seq

    def _set_shape(self, count, beams=0):
        """The request's count and beams fields, written only when they change."""
        if self._count != count:
            _U32.pack_into(self.mm, self._count_off, count)
            self._count = count
        if self._beams != beams:
            _U32.pack_into(self.mm, self._beams_off, beams)
            self._beams = beams

    def step_batch(self, first, actions, ticks, view=False, beams=0):
        """Robots first .. first + len(actions) - 1 one step of `ticks` with
        actions [n, 2] (v, w): (states float64 [n, 16], ranges float32 [n, beams],
        tick, obs_seq), the arrays new copies of pa-sim's block (view: the ranges a
        view of it, ShmReader.block's), or (None, None, tick, obs_seq) when another
        client's step replaced it (read the rings). beams: each scan as that many
        sectors, the least range of each, made by pa-sim (pa_lane.beams); 0: as cast."""
        n = len(actions)
        if not 1 <= n <= self.max_robots:
            raise ValueError("the step lane takes 1 to %d robots, got %d" % (self.max_robots, n))
        self._act[:n] = actions  # float64 (v, w) straight into the segment
        _REQ.pack_into(self.mm, self._args_off, int(first), int(ticks), 0.0, 0.0)
        self._set_shape(n, int(beams))
        # after a reply that took far longer than the spin (many robots), sleep
        # at once: the spin would only take a core from pa-sim's threads
        tick, seq = self._run((self._req + 1) & 0xFFFFFFFF,
                              SPIN_S if self._last_wait < LONG_WAIT_S else 0.0)
        blk = self.reader.block(seq, n, view)
        if blk is None:
            return None, None, tick, seq
        return blk[0], blk[1], tick, seq

    def step(self, robot, v, w, ticks, beams=0):
        """(buffer, offset of the robot's 16 doubles, beams, offset of its float32
        ranges, tick), as Conn.step1: the buffer's bytes stay until the next step.
        beams: its scan as that many sectors (0: as cast); read from the rings
        (another client's STEP replaced the block), as cast."""
        _REQ.pack_into(self.mm, self._args_off, int(robot), int(ticks), v, w)
        self._set_shape(0, int(beams))
        tick, seq = self._run((self._req + 1) & 0xFFFFFFFF)
        got = self._block(seq)
        if got is None:  # another client's STEP replaced the block: the rings
            st, rg, _ = self.reader.observe([int(robot)], self.range_max)
            return tuple(st[0].tolist()), np.ascontiguousarray(rg[0]), tick
        return got + (tick,)

    def _open_obs(self):
        if self._obs is not None:
            self._obs[1].release()
            self._obs[0].close()
            self._obs = None
        lay = self.reader.layout
        path = os.path.join(lay["shm_dir"], lay["segment_name"].format(
            instance=self.reader._instance, segment=lay["obs"]["segment"]))
        try:
            fd = open_regular(path, os.O_RDONLY, StackError)
        except StackError:
            return False
        try:
            m = mmap.mmap(fd, 0, mmap.MAP_SHARED, mmap.PROT_READ)
        finally:
            os.close(fd)
        hf = lay["header"]["fields"]
        magic, version, kind = (_U32.unpack_from(m, hf[f]["offset"])[0]
                                for f in ("magic", "version", "kind"))
        if magic != lay["header"]["magic"] or version != lay["layout_version"] \
                or kind != lay["obs"]["kind"]:
            m.close()
            return False
        f = lay["records"]["pa_obs_seg"]["fields"]
        b = lay["body_offset"]
        self._oseq, self._ooff, self._obytes = (b + f[k]["offset"] for k in ("seq", "off_block", "bytes"))
        self._obs = (m, memoryview(m))
        return True

    def _block(self, seq):
        """The block of seq copied into the buffer: (buffer, 16 doubles' offset,
        beams, ranges' offset), or None when it is not there (any more)."""
        if not seq:
            return None
        for attempt in range(2):  # a restarted pa-sim's segment is a new object
            if self._obs is None and not self._open_obs():
                return None
            m, mv = self._obs
            if _U64.unpack_from(m, self._oseq)[0] != seq:
                if attempt == 0:
                    self._open_obs()
                    continue
                return None
            off, nbytes = _U64.unpack_from(m, self._ooff)[0], _U64.unpack_from(m, self._obytes)[0]
            if nbytes < 16 or off + nbytes > len(m):
                return None
            if nbytes > len(self._buf):
                self._mv = None
                self._buf = bytearray(nbytes)
                self._mv = memoryview(self._buf)
            self._mv[:nbytes] = mv[off:off + nbytes]
            if _U64.unpack_from(m, self._oseq)[0] != seq:
                return None  # replaced while copied
            magic, n, beams, fields = _HEAD.unpack_from(self._buf, 0)
            if magic != b"PAB1" or n != 1 or fields != len(BIN_FIELDS) \
                    or 16 + 8 * fields + 4 * beams != nbytes:
                raise StackError("bad observation block (%r, %d robots, %d beams, %d fields, "
                                 "%d bytes)" % (magic, n, beams, fields, nbytes))
            return _UNPACK16(self._buf, 16), np.frombuffer(self._buf, "<f4", beams, 16 + 8 * fields)
        return None
