"""One robot's state and newest scan from shared memory, for NavEnv.

ShmReader.observe is shaped for many robots (a numpy gather per field, an
index of every robot's newest scan); one robot needs a few struct reads. The
offsets and types come from the same `pa-shmctl layout --json` ShmReader
loaded (nothing restated here), the reads are checked the same way (the
slot's seq before and after), and the numbers are ShmReader.observe's, bit
for bit; anything unusual goes to ShmReader.observe.
"""

import math
import operator
import struct

import numpy as np

from ._stack import BIN_FIELDS, STATE_FIELDS, StackError

_CODES = {"u1": "B", "u2": "H", "u4": "I", "u8": "Q", "i1": "b", "i2": "h", "i4": "i",
          "i8": "q", "f4": "f", "f8": "d"}
_U64 = struct.Struct("<Q").unpack_from
_STATE = STATE_FIELDS
_SCAN = ("seq", "tick", "angle_min", "angle_increment", "range_max")
_BACK = 64  # scan records looked at, newest first, before asking ShmReader


def _reader(rec, names):
    """(unpack_from of the record's fields `names`, a getter putting them in that order)."""
    fields = rec["fields"]
    order = sorted(names, key=lambda n: fields[n]["offset"])
    fmt, at = "<", 0
    for n in order:
        f = fields[n]
        if f["offset"] < at:
            raise StackError("layout: field %s overlaps the one before it" % n)
        fmt += "%dx" % (f["offset"] - at) if f["offset"] > at else ""
        fmt += _CODES[f["type"]]
        at = f["offset"] + int(f["type"][1:])
    pick = operator.itemgetter(*[order.index(n) for n in names])
    return struct.Struct(fmt).unpack_from, pick


class Shm1Reader:
    """observe() -> (robot's 16 step_batch fields as floats, its ranges float32 [beams], a
    copy), as ShmReader.observe([robot], range_max) gives them."""

    def __init__(self, reader, robot, range_max):
        self.reader = reader
        self.robot = int(robot)
        self.range_max = float(range_max)
        lay = reader.layout
        recs = lay["records"]
        st, sc = reader.state, reader.scan
        self.smm, self.cmm = st.mm, sc.mm
        self.s_head, self.s_seq = st.head_off, st.seq_off
        self.s_slots, self.s_count, self.s_size = st.slots_off, st.slot_count, st.slot_size
        self.s_rec = st.slot_header
        self.tick_size = recs["pa_tick"]["size"]
        self.rs_size = recs["pa_robot_state"]["size"]
        self.count_at = recs["pa_tick"]["fields"]["robot_count"]["offset"]
        self.rstate, self.rpick = _reader(recs["pa_robot_state"], ("id", "flags") + _STATE)
        self.bumped = lay["flags"]["PA_RS_BUMPED"]
        self.c_head, self.c_seq = sc.head_off, sc.seq_off
        self.c_slots, self.c_count, self.c_size = sc.slots_off, sc.slot_count, sc.slot_size
        self.c_rec = sc.slot_header
        self.c_ranges = sc.slot_header + recs["pa_scan"]["size"]
        self.rscan, self.cpick = _reader(recs["pa_scan"], ("robot", "count") + _SCAN)
        self.beam_cap = reader.beam_cap
        want = [(recs["pa_robot_state"], _STATE, "f8"), (recs["pa_scan"], _SCAN[2:], "f4"),
                (recs["pa_scan"], _SCAN[:2], "u")]
        for rec, names, t in want:  # the tuples below are taken as they unpack
            for n in names:
                if not rec["fields"][n]["type"].startswith(t):
                    raise StackError("layout: %s is %s, expected %s" % (n, rec["fields"][n]["type"], t))
        self.nan5 = (math.nan,) * 4 + (self.range_max,)

    def observe(self):
        for _ in range(100):
            got = self._try()
            if got is not None:
                return got
        raise StackError("the rings kept changing under the reader")

    def _try(self):
        smm, cmm = self.smm, self.cmm
        n = _U64(smm, self.s_head)[0]
        if n == 0:
            raise StackError("no tick yet")
        slot = self.s_slots + ((n - 1) % self.s_count) * self.s_size
        rec = slot + self.s_rec
        count = struct.unpack_from("<I", smm, rec + self.count_at)[0]
        if self.robot >= count:
            raise StackError("robots %s are not at their ids in the state" % [self.robot])
        vals = self.rpick(self.rstate(smm, rec + self.tick_size + self.robot * self.rs_size))
        if vals[0] != self.robot:
            raise StackError("robots %s are not at their ids in the state" % [self.robot])
        # the newest scan record of the robot, newest first
        h = _U64(cmm, self.c_head)[0]
        for m in range(h, max(0, h - _BACK), -1):
            cs = self.c_slots + ((m - 1) % self.c_count) * self.c_size
            if _U64(cmm, cs + self.c_seq)[0] != m:
                return None  # being rewritten: read again
            sv = self.cpick(self.rscan(cmm, cs + self.c_rec))
            if sv[0] == self.robot:
                break
        else:
            if h > _BACK:  # an older record may still be its newest: the general reader
                return self._general()
            sv = None  # it has not scanned yet
        if sv is not None:
            k = min(sv[1], self.beam_cap)
            rg = np.frombuffer(cmm, "<f4", k, cs + self.c_ranges).copy()
            if _U64(cmm, cs + self.c_seq)[0] != m:
                return None
            tail = (float(sv[2]), float(sv[3])) + sv[4:]  # seq, tick: ints
        else:
            rg = np.empty(0, np.float32)
            tail = self.nan5
        if _U64(smm, slot + self.s_seq)[0] != n:
            return None
        out = vals[2:] + (1.0 if vals[1] & self.bumped else 0.0,) + tail
        return out, rg

    def _general(self):
        st, rg, _ = self.reader.observe(np.array([self.robot]), self.range_max)
        return tuple(st[0].tolist()), rg[0].copy()


assert len(_STATE) + 1 + len(_SCAN) == len(BIN_FIELDS)
