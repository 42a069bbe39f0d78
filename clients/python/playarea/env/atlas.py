"""Batched head cameras from shared memory (same host): the atlas segment that
pa-render fills on a `camera_batch` request (docs/PROTOCOL.md, docs/rl.md).

The segment is mapped read-only once; a request's frames are waited for by the
sequence number its reply names, then copied once into a new numpy array of
shape (count, height, width, 3), uint8, row 0 at the top, and the segment's
seqlock is checked after the copy. Offsets come from `pa-shmctl layout --json`.
The wait sleeps on the segment's futex word `wake`, which pa-render bumps and
wakes once an answer is complete (Linux on x86-64 and AArch64; elsewhere, or
with binaries without the word, it polls).
"""
import ctypes
import os
import time

import numpy as np

from ._stack import StackError
from .shm import _Seg, load_layout


_SYS_FUTEX = {"x86_64": 202, "aarch64": 98}.get(os.uname().machine)
_FUTEX_WAIT = 0
_FUTEX_SLICE_S = 0.05  # a wait's longest sleep: deadlines and pa-render's death are seen


class _Timespec(ctypes.Structure):
    _fields_ = [("tv_sec", ctypes.c_long), ("tv_nsec", ctypes.c_long)]


class AtlasError(StackError):
    """pa-render refused or failed a camera_batch request."""


class AtlasReader:
    """The atlas segment of an instance, mapped read-only."""

    def __init__(self, instance, bin_dir=None, layout=None):
        self.layout = layout or load_layout(bin_dir)
        a = self.layout["atlas"]
        self._seg = _Seg(self.layout, instance, a["segment"], a["kind"])
        self._status = a["status"]
        base = self.layout["body_offset"]
        f = self.layout["records"][a["record"]]["fields"]
        self._off = {k: (base + v["offset"], "<" + v["type"]) for k, v in f.items()}
        self.frames_off = self._u("off_frames")
        self.capacity = self._u("capacity")
        self.misses = 0  # copies redone because another request replaced the frames
        self._futex = None  # (syscall, the word's address, timespec, its pointer)
        if _SYS_FUTEX is not None and "wake" in self._off:
            libc = ctypes.CDLL(None, use_errno=True)
            ts = _Timespec()
            self._futex = (libc.syscall, ctypes.c_void_p(
                self._seg.buf.ctypes.data + self._off["wake"][0]), ts, ctypes.byref(ts))

    def _u(self, name):
        o, t = self._off[name]
        return self._seg.buf[o:o + 8].view(t)[0].item() if t.endswith("8") else \
            self._seg.buf[o:o + 4].view(t)[0].item()

    def _sleep(self, wake, limit):
        """Until pa-render's next answer (wake no longer the value read before the
        check) or limit seconds; without the futex, one 200 µs poll."""
        if self._futex is None:
            time.sleep(0.0002)
            return
        call, addr, ts, pts = self._futex
        ns = int(min(limit, _FUTEX_SLICE_S) * 1e9)
        ts.tv_sec, ts.tv_nsec = divmod(max(ns, 1000), 1000000000)
        # EAGAIN (the word moved already), ETIMEDOUT and EINTR all mean: look again
        call(ctypes.c_long(_SYS_FUTEX), addr, ctypes.c_int(_FUTEX_WAIT),
             ctypes.c_uint32(wake), pts, None, ctypes.c_int(0))

    def read(self, seq, out=None, timeout=10.0):
        """The frames of request seq: (frames uint8 [count, h, w, 3], tick). Sleeps
        until pa-render answers (on the futex word; without it, first most of what
        its last answer took, render_ns, then polls every 200 µs), so that the wait
        leaves the CPU to the renderer; out (a C-contiguous uint8 array of that
        shape) is filled instead of a new one."""
        deadline = time.monotonic() + timeout
        if self._futex is None:
            guess = self._u("render_ns") * 0.8e-9
            if self._u("done") != seq and 0.0005 < guess < 1.0:
                time.sleep(guess)
        while True:
            wake = self._u("wake") if self._futex is not None else 0
            done = self._u("done")
            q = self._u("seq")
            if done == seq and not q & 1:
                break
            if done > seq:
                raise AtlasError("camera_batch %d was replaced by request %d (another "
                                 "client of this instance asked meanwhile)" % (seq, done))
            now = time.monotonic()
            if now > deadline:
                raise AtlasError("no camera_batch frames for request %d within %.0f s "
                                 "(pa-render answered %d)" % (seq, timeout, done))
            self._sleep(wake, deadline - now)
        st = self._u("status")
        if st != self._status["ok"]:
            why = "a bad request" if st == self._status["bad_request"] else "a GL error"
            raise AtlasError("camera_batch %d: pa-render answered with %s (status %d)"
                             % (seq, why, st))
        n, w, h = self._u("d_count"), self._u("d_width"), self._u("d_height")
        size = n * h * w * 3
        if size > self.capacity:
            raise AtlasError("camera_batch %d: %d bytes of frames over the segment's %d"
                             % (seq, size, self.capacity))
        tick = self._u("tick")
        src = self._seg.buf[self.frames_off:self.frames_off + size]
        if out is None:
            out = np.empty((n, h, w, 3), np.uint8)
        elif out.shape != (n, h, w, 3) or out.dtype != np.uint8:
            raise ValueError("out has shape %s %s, the frames are %s uint8"
                             % (out.shape, out.dtype, (n, h, w, 3)))
        np.copyto(out.reshape(-1), src)
        if self._u("seq") != q or self._u("done") != seq:
            self.misses += 1
            raise AtlasError("camera_batch %d: the frames were replaced while copied "
                             "(another client of this instance asked meanwhile)" % seq)
        return out, tick

    def render_pid(self):
        return self._u("render_pid")

    def close(self):
        if self._seg is not None:
            self._seg.close()
            self._seg = None
