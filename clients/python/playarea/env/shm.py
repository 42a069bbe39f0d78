"""Same-host reads of the state and scan rings as numpy arrays.

The layout comes from the C side (`pa-shmctl layout --json`, generated with
offsetof/sizeof from shm/pa_shm.h and the ring's own structs); nothing here
restates an offset. Records are read lock-free as pa-netgw reads them: the
slot's seq before and after the copy must be the record's number.
"""

import json
import mmap
import os
import subprocess

import numpy as np

from ._stack import BIN_FIELDS, F, STATE_FIELDS, StackError, find_bin_dir, open_regular

_layouts = {}


def load_layout(bin_dir=None):
    """The parsed `pa-shmctl layout --json` of these binaries (cached)."""
    d = find_bin_dir(bin_dir)
    if d not in _layouts:
        out = subprocess.run([os.path.join(d, "pa-shmctl"), "layout", "--json"], check=True,
                             capture_output=True, text=True, timeout=30).stdout
        _layouts[d] = json.loads(out)
    return _layouts[d]


def _dtype(rec, base=0, extra=()):
    names, formats, offsets = [], [], []
    for name, f in rec["fields"].items():
        names.append(name)
        formats.append("<" + f["type"])
        offsets.append(base + f["offset"])
    for name, fmt, off in extra:
        names.append(name)
        formats.append(fmt)
        offsets.append(off)
    return names, formats, offsets


class _Seg:
    """A segment of the instance mapped read-only, its header checked (magic and
    layout version, and the kind when given)."""

    def __init__(self, layout, instance, segment, kind=None):
        path = os.path.join(layout["shm_dir"],
                            layout["segment_name"].format(instance=instance, segment=segment))
        fd = open_regular(path, os.O_RDONLY, StackError,
                          "cannot open %s: %s (same host and user only)")
        try:
            self.mm = mmap.mmap(fd, 0, mmap.MAP_SHARED, mmap.PROT_READ)
        finally:
            os.close(fd)
        self.buf = np.frombuffer(self.mm, dtype=np.uint8)
        hf = layout["header"]["fields"]
        magic, version, k = (int(self.buf[hf[f]["offset"]:][:4].view("<u4")[0])
                             for f in ("magic", "version", "kind"))
        if magic != layout["header"]["magic"] or version != layout["layout_version"] \
                or (kind is not None and k != kind):
            self.close()
            raise StackError("%s: magic/version/kind %x/%d/%d, expected %x/%d/%s (binaries and "
                             "stack differ)" % (path, magic, version, k, layout["header"]["magic"],
                                                layout["layout_version"], kind))

    def close(self):
        self.buf = None
        try:
            self.mm.close()
        except BufferError:  # a view is still alive somewhere: the GC unmaps it
            pass


class _Ring(_Seg):
    def __init__(self, layout, instance, segment):
        super().__init__(layout, instance, segment)
        self.base = layout["body_offset"]
        rf = layout["ring"]["fields"]

        def u(name):
            f = rf[name]
            o = self.base + f["offset"]
            return int(self.buf[o:o + 8].view("<" + f["type"])[0])
        self.slot_count, self.slot_size = u("slot_count"), u("slot_size")
        self.max_record, self.off_slots = u("max_record"), u("off_slots")
        self.head_off = self.base + rf["head"]["offset"]
        self.slot_header = layout["ring"]["slot_header"]
        self.seq_off = layout["ring"]["slot_fields"]["seq"]["offset"]
        self.slots_off = self.base + self.off_slots

    def head(self):
        return int(self.buf[self.head_off:self.head_off + 8].view("<u8")[0])

    def slot_offset(self, n):
        return self.slots_off + ((n - 1) % self.slot_count) * self.slot_size

    def seq_at(self, n):
        o = self.slot_offset(n) + self.seq_off
        return int(self.buf[o:o + 8].view("<u8")[0])


class ShmReader:
    """The newest tick's robot states and each robot's newest scan, from shared memory."""

    def __init__(self, instance, bin_dir=None):
        lay = load_layout(bin_dir)
        self.layout = lay
        self._instance = instance
        self.camera = None
        recs = lay["records"]
        self.state = _Ring(lay, instance, "state")
        self.scan = _Ring(lay, instance, "scan")
        self.tick_size = recs["pa_tick"]["size"]
        self.tick_dtype = np.dtype(dict(zip(("names", "formats", "offsets"), _dtype(recs["pa_tick"])),
                                        itemsize=self.tick_size))
        rs = recs["pa_robot_state"]
        self.rs_dtype = np.dtype(dict(zip(("names", "formats", "offsets"), _dtype(rs)),
                                      itemsize=rs["size"]))
        sc = recs["pa_scan"]
        hdr = self.scan.slot_header
        self.beam_cap = (self.scan.max_record - sc["size"]) // 4
        names, formats, offsets = _dtype(sc, hdr, [
            ("slot_seq", "<u8", self.scan.seq_off),
            ("ranges", ("<f4", (self.beam_cap,)), hdr + sc["size"])])
        self.slot_dtype = np.dtype({"names": names, "formats": formats, "offsets": offsets,
                                    "itemsize": self.scan.slot_size})
        self.slots = np.ndarray((self.scan.slot_count,), self.slot_dtype, self.scan.buf,
                                self.scan.slots_off)  # zero-copy view of every slot
        self.slot_ranges = np.ndarray((self.scan.slot_count, self.beam_cap), "<f4", self.scan.buf,
                                      self.scan.slots_off + hdr + sc["size"],
                                      (self.scan.slot_size, 4))
        # each slot's headers alone (slot seq and pa_scan, up to the ranges): a gather of
        # these reads every slot's page once, where a gather per field read it per field
        # (slots are a page or more apart: each read of a slot is a TLB miss)
        # (gathered as plain bytes, then viewed: numpy copies a structured dtype field by field)
        names, formats, offsets = _dtype(sc, hdr, [("slot_seq", "<u8", self.scan.seq_off)])
        self.head_dtype = np.dtype({"names": names, "formats": formats, "offsets": offsets,
                                    "itemsize": hdr + sc["size"]})
        self._heads = np.ndarray((self.scan.slot_count,), np.dtype("V%d" % (hdr + sc["size"])),
                                 self.scan.buf, self.scan.slots_off, (self.scan.slot_size,))

        self.flags = lay["flags"]
        self.obs = None  # the observation segment, opened on the first block
        self.blocks = self.block_misses = 0
        of = recs["pa_obs_seg"]["fields"]
        self._obs_off = {k: (lay["body_offset"] + f["offset"], "<" + f["type"]) for k, f in of.items()}
        # robot id -> (newest slot, its record number), kept up to date from the
        # records written since the last read (the scan ring's head moves on)
        self._seen = 0
        self._slot_of = np.full(0, -1, np.int64)
        self._seq_of = np.zeros(0, np.uint64)

    def heads(self, at):
        """Copies of the slots' headers at these indices, as a structured array."""
        return self._heads[at].view(self.head_dtype)

    def latest_states(self):
        """(tick record, zero-copy view of its robot states, record seq)."""
        for _ in range(100):
            n = self.state.head()
            if n == 0:
                raise StackError("no tick yet")
            off = self.state.slot_offset(n)
            rec = off + self.state.slot_header
            tick = np.ndarray((), self.tick_dtype, self.state.buf, rec)
            count = int(tick["robot_count"])
            states = np.ndarray((count,), self.rs_dtype, self.state.buf, rec + self.tick_size)
            if self.state.seq_at(n) == n:
                return tick, states, n
        raise StackError("the state ring kept changing under the reader")

    def _index(self, full=False):
        """Brings robot -> newest slot up to date: only the records written since
        the last call are read (all live slots after a wrap or a restart)."""
        head = self.scan.head()
        count = self.scan.slot_count
        lapped = full or head < self._seen or head - self._seen >= count  # or restarted
        if lapped:
            seqs = self.slots["slot_seq"].copy()
            live = np.nonzero(seqs > 0)[0]
            idx = live[np.argsort(seqs[live], kind="stable")]
            self._slot_of = np.full(0, -1, np.int64)
            self._seq_of = np.zeros(0, np.uint64)
        elif head == self._seen:
            return
        else:
            idx = (np.arange(self._seen, head, dtype=np.int64)) % count  # records seen+1..head
        hd = self.heads(idx)
        owner = hd["robot"].astype(np.int64)
        seqs = hd["slot_seq"]
        if not lapped and not np.array_equal(seqs, np.arange(self._seen + 1, head + 1,
                                                             dtype=np.uint64)):
            return self._index(full=True)  # the writer lapped records we had not read
        ok = seqs > 0  # a slot being rewritten: its record is read on a later call
        idx, owner, seqs = idx[ok], owner[ok], seqs[ok]
        top = int(owner.max(initial=-1)) + 1
        if top > len(self._slot_of):
            grow = top - len(self._slot_of)
            self._slot_of = np.concatenate([self._slot_of, np.full(grow, -1, np.int64)])
            self._seq_of = np.concatenate([self._seq_of, np.zeros(grow, np.uint64)])
        if not lapped and len(owner) and \
                np.bincount(owner, minlength=top).max(initial=0) <= 1:
            # one new record per robot (each scanned once since the last read):
            # newer than what the robot had (records come in order), no sort
            self._slot_of[owner] = idx
            self._seq_of[owner] = seqs
            self._seen = head
            return
        # the newest record of each robot wins (first in reverse order)
        rob, first = np.unique(owner[::-1], return_index=True)
        last = len(owner) - 1 - first
        newer = seqs[last] > self._seq_of[rob]
        self._slot_of[rob[newer]] = idx[last[newer]]
        self._seq_of[rob[newer]] = seqs[last[newer]]
        self._seen = head

    def observe(self, robots, range_max):
        """The (states [n, 16] float64, ranges [n, beams] float32) step_batch's binary block
        holds for these robots (docs/protocol-notes.md), read from shared memory."""
        robots = np.asarray(robots, dtype=np.int64)
        for attempt in range(100):
            tick, states, n = self.latest_states()
            if robots.max() >= len(states) or not np.array_equal(states["id"][robots], robots):
                raise StackError("robots %s are not at their ids in the state" % robots)
            # field by field, straight into the output (a gather of whole records is slow)
            out = np.full((len(robots), len(BIN_FIELDS)), np.nan)
            for name in STATE_FIELDS:
                out[:, F[name]] = states[name][robots]
            out[:, F["bumped"]] = (states["flags"][robots] & self.flags["PA_RS_BUMPED"]) != 0
            self._index(full=attempt > 0)  # after a torn read: every live slot again
            if robots.max() < len(self._slot_of):  # the usual case: fewer passes
                at = self._slot_of[robots]
                want = self._seq_of[robots]
                every = bool(at.min() >= 0)
            else:
                every = False
            if not every:
                known = robots < len(self._slot_of)
                pick = np.where(known, self._slot_of[np.where(known, robots, 0)], -1)
                want = np.where(known, self._seq_of[np.where(known, robots, 0)], 0)
                have = pick >= 0
                at = np.where(have, pick, 0)
            # the headers only: a gather of whole slots would copy every slot's max_beams
            sl = self.heads(at)
            counts = sl["count"] if every else np.where(have, sl["count"], 0)
            beams = int(counts.max(initial=0))
            ranges = self.slot_ranges[at, :beams]  # gathers those rows only (np.take copies all)
            if self.state.seq_at(n) != n:
                continue  # torn: the writer moved on under us
            if every:
                if not (np.array_equal(self.slots["slot_seq"][at], want)
                        and np.array_equal(sl["slot_seq"], want)):
                    continue
            elif np.any(self.slots["slot_seq"][at[have]] != want[have]) \
                    or np.any(sl["slot_seq"][have] != want[have]):
                continue
            break
        else:
            raise StackError("the rings kept changing under the reader")
        out[:, F["range_max"]] = range_max
        if counts.min(initial=beams) < beams:
            for i in np.nonzero(counts < beams)[0]:  # shorter scans (or none): NaN after, as the block
                ranges[i, counts[i]:] = np.nan
        if every:
            for name, col in (("seq", "scan_seq"), ("tick", "scan_tick"), ("angle_min", "angle_min"),
                              ("angle_increment", "angle_increment"), ("range_max", "range_max")):
                out[:, F[col]] = sl[name]
        else:
            for name, col in (("seq", "scan_seq"), ("tick", "scan_tick"), ("angle_min", "angle_min"),
                              ("angle_increment", "angle_increment"), ("range_max", "range_max")):
                out[have, F[col]] = sl[name][have]
        return out, ranges, int(tick["tick"])

    def _obs_field(self, name):
        off, t = self._obs_off[name]
        return int(self.obs.buf[off:off + 8].view(t)[0]) if t == "<u8" else \
            int(self.obs.buf[off:off + 4].view(t)[0])

    def _open_obs(self):
        try:
            self.obs = _Seg(self.layout, self._instance, self.layout["obs"]["segment"],
                            self.layout["obs"]["kind"])
        except StackError:
            return False  # not made (pa-sim could not, it logs why) or not ours: the rings
        return True

    def block(self, seq, n, view=False):
        """(states [n, 16] float64, ranges [n, beams] float32), copies of the observation
        block pa-sim wrote after a step_batch with observe "shm" (its reply's obs_seq, as
        step_batch's binary block holds them), or None when there is none: 0, or another
        client's step replaced it (the caller then reads the rings). view: the ranges
        are a view of the segment, valid while same(seq) holds (check it after use)."""
        if not seq:
            return None
        for attempt in range(2):  # a restarted instance's segment is a new object
            if self.obs is None and not self._open_obs():
                break
            if self._obs_field("seq") != seq:
                self.obs.close()
                self.obs = None
                continue
            off, nbytes = self._obs_field("off_block"), self._obs_field("bytes")
            if nbytes < 16 or off + nbytes > len(self.obs.buf):
                break
            blk = self.obs.buf[off:off + nbytes]
            n_, beams, fields = (int(v) for v in blk[4:16].view("<u4"))
            if bytes(blk[:4]) != self.layout["obs"]["magic"].encode() or n_ != n \
                    or fields != self.layout["obs"]["fields"] \
                    or 16 + n * (8 * fields + 4 * beams) != nbytes:
                break
            st = np.frombuffer(blk, "<f8", n * fields, 16).reshape(n, fields).copy()
            rg = np.frombuffer(blk, "<f4", n * beams, 16 + 8 * n * fields).reshape(n, beams)
            if not view:
                rg = rg.copy()
            if self._obs_field("seq") != seq:
                break  # replaced while copied
            self.blocks += 1
            return st, rg
        self.block_misses += 1
        return None

    def same(self, seq):
        """Whether the observation block is still seq's (a view of it still holds)."""
        return bool(seq) and self.obs is not None and self._obs_field("seq") == seq

    def frame(self, robot, tick):
        """The head-camera image (uint8 [h, w, 3], a copy) of robot rendered from this
        tick, or None if pa-render has not written one yet."""
        if getattr(self, "camera", None) is None:
            self.camera = _Ring(self.layout, self._instance, "camera")
            fr = self.layout["records"]["pa_frame"]
            self.frame_size = fr["size"]
            self.frame_dtype = np.dtype(dict(zip(("names", "formats", "offsets"), _dtype(fr)),
                                             itemsize=fr["size"]))
        ring = self.camera
        head = ring.head()
        for n in range(head, max(0, head - ring.slot_count), -1):
            rec = ring.slot_offset(n) + ring.slot_header
            if ring.seq_at(n) != n:
                continue
            meta = np.ndarray((), self.frame_dtype, ring.buf, rec).copy()
            if int(meta["robot"]) != robot or int(meta["tick"]) < tick:
                continue
            if int(meta["tick"]) > tick:
                return None  # a later tick's: this one's frame is gone
            h, w = int(meta["height"]), int(meta["width"])
            img = ring.buf[rec + self.frame_size:rec + self.frame_size + h * w * 3].reshape(h, w, 3).copy()
            if ring.seq_at(n) == n:
                return img
        return None

    def close(self):
        self.slots = self.slot_ranges = None
        self.state.close()
        self.scan.close()
        if self.obs is not None:
            self.obs.close()
            self.obs = None
        if getattr(self, "camera", None) is not None:
            self.camera.close()
