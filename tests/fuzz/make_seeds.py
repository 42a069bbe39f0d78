#!/usr/bin/env python3
"""Writes the seed corpora of the fuzz targets into tests/fuzz/corpus/<target>/.

Small valid inputs plus every malformed case of issue 22 (the crafted
Softimage PIC, a PGM with 1% of its pixels, a truncated BMP, a PNG with a bad
CRC, a GIF, PGM maxval 0, multi-document YAML, resolution 1e-300 / 1e300,
deeply nested YAML, /etc/shadow-like text, a 16384x16384 PNG header). The
files are committed; rerun this after changing it (it rewrites only what it
makes, and is deterministic). Uses only the standard library.
"""
import base64
import os
import struct
import sys
import zlib

ROOT = os.path.dirname(os.path.abspath(__file__))
CORPUS = os.path.join(ROOT, "corpus")
REPO = os.path.dirname(os.path.dirname(ROOT))


def put(target, name, data):
    d = os.path.join(CORPUS, target)
    os.makedirs(d, exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def put_repo_file(target, name):
    """maps/<name> of the repository as a seed named so."""
    with open(os.path.join(REPO, "maps", name), "rb") as f:
        put(target, name, f.read())


# ---- images ---------------------------------------------------------------


def png_chunk(kind, body, crc=None):
    c = zlib.crc32(kind + body) & 0xFFFFFFFF if crc is None else crc
    return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", c)


def png(w, h, colour_type, rows, bad_crc=False, ihdr_only=False):
    channels = {0: 1, 2: 3, 4: 2, 6: 4}[colour_type]
    ihdr = struct.pack(">IIBBBBB", w, h, 8, colour_type, 0, 0, 0)
    out = b"\x89PNG\r\n\x1a\n" + png_chunk(b"IHDR", ihdr)
    if ihdr_only:
        # a 16384 x 16384 claim with one tiny IDAT: what the header promises
        # is what a loader must refuse before allocating for it
        return out + png_chunk(b"IDAT", zlib.compress(b"\0" * 64)) + \
            png_chunk(b"IEND", b"")
    raw = b"".join(b"\0" + bytes(r[: w * channels]) for r in rows)
    idat = zlib.compress(raw)
    out += png_chunk(b"IDAT", idat, crc=0xDEADBEEF if bad_crc else None)
    return out + png_chunk(b"IEND", b"")


def grey_rows(w, h):
    # walls on the border, a free inside, an unknown square
    rows = []
    for y in range(h):
        r = []
        for x in range(w):
            if x in (0, w - 1) or y in (0, h - 1):
                r.append(0)
            elif 2 <= x < 4 and 2 <= y < 4:
                r.append(205)
            else:
                r.append(254)
        rows.append(r)
    return rows


def pgm(w, h, maxval=255, data=None):
    hdr = b"P5\n# playarea seed\n%d %d\n%d\n" % (w, h, maxval)
    if data is None:
        data = bytes(v for r in grey_rows(w, h) for v in r)
    return hdr + data


def bmp8(w, h):
    # 8-bit paletted, bottom-up, rows padded to 4 bytes
    stride = (w + 3) & ~3
    pixels = b"".join(bytes(r) + b"\0" * (stride - w)
                      for r in reversed(grey_rows(w, h)))
    palette = b"".join(bytes((i, i, i, 0)) for i in range(256))
    off = 14 + 40 + len(palette)
    info = struct.pack("<IiiHHIIiiII", 40, w, h, 1, 8, 0, len(pixels),
                       2835, 2835, 256, 0)
    fh = b"BM" + struct.pack("<IHHI", off + len(pixels), 0, 0, off)
    return fh + info + palette + pixels


def bmp24(w, h):
    stride = (w * 3 + 3) & ~3
    rows = []
    for r in reversed(grey_rows(w, h)):
        b = b"".join(bytes((v, v, v)) for v in r)
        rows.append(b + b"\0" * (stride - len(b)))
    pixels = b"".join(rows)
    info = struct.pack("<IiiHHIIiiII", 40, w, h, 1, 24, 0, len(pixels),
                       2835, 2835, 0, 0)
    fh = b"BM" + struct.pack("<IHHI", 54 + len(pixels), 0, 0, 54)
    return fh + info + pixels


def jpeg_grey(w, h):
    """Baseline greyscale JPEG whose every block is flat grey: one-symbol
    Huffman tables (DC category 0, AC end-of-block), 2 bits per block."""
    out = b"\xff\xd8"
    out += b"\xff\xdb" + struct.pack(">H", 67) + b"\x00" + b"\x01" * 64
    out += b"\xff\xc0" + struct.pack(">HBHHB", 11, 8, h, w, 1) + b"\x01\x11\x00"
    counts = b"\x01" + b"\x00" * 15
    out += b"\xff\xc4" + struct.pack(">H", 2 + 1 + 16 + 1) + b"\x00" + counts + b"\x00"
    out += b"\xff\xc4" + struct.pack(">H", 2 + 1 + 16 + 1) + b"\x10" + counts + b"\x00"
    out += b"\xff\xda" + struct.pack(">HB", 8, 1) + b"\x01\x00" + b"\x00\x3f\x00"
    blocks = ((w + 7) // 8) * ((h + 7) // 8)
    bits = "00" * blocks
    bits += "1" * (-len(bits) % 8)
    data = bytes(int(bits[i:i + 8], 2) for i in range(0, len(bits), 8))
    data = data.replace(b"\xff", b"\xff\x00")
    return out + data + b"\xff\xd9"


def softimage_pic():
    """The 109-byte crafted Softimage PIC of issue 22: magic 53 80 f6 34,
    'PICT' at byte 88, then width, height, and one mixed-RLE packet whose
    run overflows the row."""
    b = bytearray(109)
    b[0:4] = b"\x53\x80\xf6\x34"
    b[88:92] = b"PICT"
    b[92:94] = struct.pack(">H", 4)     # width
    b[94:96] = struct.pack(">H", 4)     # height
    # 96..103: ratio + fields (zero)
    b[104:107] = bytes((0, 8, 2))        # chained 0, size 8, type 2 (mixed RLE)
    b[107] = 0x80                        # channel mask: grey in the top bit...
    b[108] = 0xFF                        # ...and a run count past the row
    return bytes(b)


def gif():
    # GIF89a 2x2, global 2-colour table, one image, LZW min code size 2
    return (b"GIF89a" + struct.pack("<HHBBB", 2, 2, 0x80, 0, 0) +
            b"\x00\x00\x00\xff\xff\xff" +
            b"\x2c" + struct.pack("<HHHHB", 0, 0, 2, 2, 0) +
            b"\x02\x02\x44\x01\x00\x3b")


def images():
    t = "image"
    put(t, "valid-grey.png", png(8, 6, 0, grey_rows(8, 6)))
    rgb = [[v for v in r for _ in range(3)] for r in grey_rows(7, 5)]
    put(t, "valid-rgb.png", png(7, 5, 2, rgb))
    rgba = [[c for v in r for c in (v, v, v, 0 if v == 205 else 255)]
            for r in grey_rows(6, 6)]
    put(t, "valid-rgba.png", png(6, 6, 6, rgba))
    ga = [[c for v in r for c in (v, 255)] for r in grey_rows(5, 4)]
    put(t, "valid-grey-alpha.png", png(5, 4, 4, ga))
    put(t, "valid.pgm", pgm(8, 6))
    put(t, "valid-ascii.pgm",
        b"P2\n4 2\n255\n0 254 205 254\n254 0 0 254\n")
    put(t, "valid-8bit.bmp", bmp8(6, 5))
    put(t, "valid-24bit.bmp", bmp24(5, 3))
    put(t, "valid-grey.jpg", jpeg_grey(16, 8))
    # issue 22's malformed cases
    put(t, "crafted-softimage.pic", softimage_pic())
    full = pgm(100, 100)
    hdr_len = len(full) - 100 * 100
    put(t, "pgm-1pct-pixels.pgm", full[: hdr_len + 100])
    put(t, "pgm-maxval-0.pgm", pgm(4, 4, maxval=0, data=b"\0" * 16))
    put(t, "pgm-maxval-65535.pgm", pgm(2, 2, maxval=65535, data=b"\xff" * 8))
    put(t, "pgm-header-overflow.pgm", b"P5\n99999999999 99999999999\n255\n\0")
    b = bmp8(16, 16)
    put(t, "bmp-truncated.bmp", b[: len(b) // 2])
    put(t, "png-bad-crc.png", png(8, 6, 0, grey_rows(8, 6), bad_crc=True))
    put(t, "png-16384x16384-header.png", png(16384, 16384, 0, [], ihdr_only=True))
    put(t, "gif-2x2.gif", gif())
    put(t, "jpeg-truncated.jpg", jpeg_grey(16, 16)[:-6])
    put(t, "empty", b"")
    default_png = os.path.join(REPO, "maps", "default.png")
    if os.path.getsize(default_png) < 64 * 1024:
        put_repo_file(t, "default.png")


# ---- YAML -----------------------------------------------------------------

SHADOW = ("root:*:20228:0:99999:7:::\ndaemon:*:20228:0:99999:7:::\n"
          "bin:*:20228:0:99999:7:::\n")


def nested(levels):
    return "image: a.png\nresolution: 0.05\nextra: " + "[" * levels + \
        "]" * levels + "\n"


def map_yamls():
    t = "map_yaml"
    put_repo_file(t, "default.yaml")
    put(t, "minimal.yaml", "image: map.pgm\nresolution: 0.05\n")
    put(t, "full-raw.yaml",
        "image: ./m/map.png\nresolution: 0.1\norigin: [-1.5, 2.0, 0.3]\n"
        "negate: 1\noccupied_thresh: 0.9\nfree_thresh: 0.1\nmode: raw\n")
    put(t, "scale-flow.yaml",
        "{image: map.bmp, resolution: 0.025, origin: [0, 0, 0], mode: scale}\n")
    put(t, "multi-document.yaml",
        "image: a.png\nresolution: 0.05\n---\nimage: b.png\nresolution: 1\n")
    put(t, "resolution-1e-300.yaml", "image: a.png\nresolution: 1e-300\n")
    put(t, "resolution-1e300.yaml", "image: a.png\nresolution: 1e300\n")
    put(t, "resolution-inf.yaml", "image: a.png\nresolution: .inf\n")
    put(t, "origin-nan.yaml",
        "image: a.png\nresolution: 0.05\norigin: [.nan, 0, 0]\n")
    put(t, "nested-2000.yaml", nested(2000))
    put(t, "shadow-like.yaml", SHADOW)
    put(t, "anchors.yaml",
        "image: &i a.png\nresolution: &r 0.05\norigin: [*r, *r, 0]\n")
    put(t, "duplicate-key.yaml", "image: a.png\nimage: b.png\nresolution: 1\n")
    put(t, "tagged.yaml", "image: !!binary aGVsbG8=\nresolution: !!float 1\n")
    put(t, "not-a-mapping.yaml", "- image\n- resolution\n")
    put(t, "bad-utf8.yaml", b"image: \xff\xfe.png\nresolution: 0.05\n")


def worlds():
    t = "world"
    put_repo_file(t, "example.world.yaml")
    put(t, "minimal.yaml", "map: default\n")
    put(t, "inline-map.yaml",
        "map: {image: map.png, resolution: 0.05, origin: [-2, -2, 0]}\n"
        "unknown_blocks: false\n"
        "robots:\n  - {name: a, pose: [0, 0, 0]}\n  - {name: b, pose: [1, 1, 1],"
        " drive: omni}\n")
    put(t, "map-path.yaml", "map: sub/map.yaml\n")
    put(t, "map-self.yaml", "map: world.yaml\n")
    put(t, "obstacles.yaml",
        "obstacles:\n  - {name: c, shape: circle, pose: [1, 1], radius: 0.3}\n"
        "  - {name: b, shape: box, pose: [2, 0, 0.5], size: [0.4, 0.2],"
        " height: 1, colour: [1, 2, 3, 4]}\n")
    put(t, "multi-document.yaml", "map: default\n---\nmap: default\n")
    put(t, "resolution-1e-300.yaml",
        "map: {image: a.png, resolution: 1e-300}\n")
    put(t, "resolution-1e300.yaml",
        "map: {image: a.png, resolution: 1e300}\n")
    put(t, "nested-2000.yaml", "map: default\nrobots: " + "[" * 2000 +
        "]" * 2000 + "\n")
    put(t, "shadow-like.yaml", SHADOW)
    put(t, "duplicate-names.yaml",
        "robots:\n  - {name: a}\n  - {name: a}\n")
    put(t, "robot-limits.yaml",
        "robots:\n  - name: r\n    limits: {max_v: 1e308, max_w: -1}\n"
        "    laser: {beams: 4294967295, range_min: 1, range_max: 0.5}\n"
        "    camera: {width: 0, height: 100000, fov: 720}\n")


# ---- network lines ---------------------------------------------------------


def texts():
    t = "text"
    for i, line in enumerate([
            "cmd 0.5 -0.25", "cmd 1 2 0.75", "stop", "sub odom 9100",
            "sub camera 65535", "unsub scan", "help", "ping", "robot scout_2",
            "robot 1", "pose", "teleport -1 2.5 3.1", "pause", "resume",
            "step", "step 250", "reset", "speed 0.5", "auth s3cret",
            "cmd 1e400 0", "cmd nan 0", "caf\xc3\xa9", "ping\r",
            "a b c d e f g h i", "auth " + "k" * 256, "  cmd\t-1.5e-1  +2  "]):
        put(t, "line-%02d" % i, line.encode("utf-8", "surrogateescape")
            if isinstance(line, str) else line)
    put(t, "nul-inside", b"cmd\0 1 2")


JSON_ACTIONS = {
    "get_state": '{"robot": 0}',
    "get_sensors": '{"robot": "scout"}',
    "step": '{"robot": 0, "v": 0.5, "w": 0.1, "head": 0.2, "steps": 3}',
    "set_velocity": '{"robot": 0, "v": 0.5, "w": -0.5, "head": 0}',
    "set_velocity_local": '{"robot": 1, "forward": 0.2, "left": 0.1, "angular": 0.3}',
    "set_velocity_global": '{"robot": 1, "x": 0.2, "y": -0.1, "angular": 0}',
    "stop": '{"robot": 0}',
    "get_pose": '{"name": "crate"}',
    "set_pose": '{"name": "robot0", "pose": [1, 2, 0.5]}',
    "subscribe": '{"channel": "odom", "udp_port": 9100}',
    "unsubscribe": '{"channel": "odom"}',
    "list_robots": '{}',
    "spawn_robot": '{"name": "r9", "pose": [0.5, 0.5, 0], "drive": "omni", "radius": 0.2}',
    "remove_robot": '{"robot": "scout"}',
    "spawn_obstacle": '{"name": "o1", "shape": "circle", "pose": [1, 1, 0], "radius": 0.2}',
    "remove_obstacle": '{"name": "crate"}',
    "list_obstacles": '{}',
    "get_map_info": '{}',
    "get_terrain_grid": '{"stride": 2, "inflation": 0.2, "threshold": 50, "unknown_blocks": false}',
    "auth": '{"token": "x"}',
    "ping": '{}',
    "pause": '{}',
    "resume": '{}',
    "step_n": '{"steps": 10}',
    "reset": '{}',
    "set_time_scale": '{"scale": 2.0}',
    "get_status": '{}',
    "get_property": '{"name": "robot0", "property": "max_v"}',
    "set_property": '{"name": "robot0", "property": "max_v", "value": 0.5}',
    "save_snapshot": '{"name": "s1"}',
    "load_snapshot": '{"name": "s1"}',
    "set_wheels": '{"robot": 0, "left": 0.3, "right": 0.4}',
    "set_map": '{"map_yaml": "/etc/shadow"}',
    "generate_map": '{"width": 20, "height": 15, "resolution": 0.1, "seed": 3, "rooms": [2, 2], "clutter": 1}',
    "set_scenario": '{"world": "/etc/shadow"}',
    "set_nav_path": '{"robot": 0, "path": [[0, 0], [1, 1], [2, 0]]}',
    "set_waypoints": '{"robot": 0, "waypoints": [[1, 1]]}',
    "clear_nav": '{"robot": 0}',
    "export_dataset": '{"name": "d1", "seconds": 0.5}',
}


def jsons():
    t = "json"
    for i, (action, data) in enumerate(sorted(JSON_ACTIONS.items())):
        kind = "sim_control" if action in (
            "pause", "resume", "step_n", "reset", "set_time_scale",
            "get_status") else "command"
        put(t, "action-%02d-%s" % (i, action),
            '{"type": "%s", "protocol_version": 2, "request_id": "r%d", '
            '"action": "%s", "data": %s}\n' % (kind, i, action, data))
    reqs = ", ".join('{"type": "command", "action": "%s", "data": %s}' % (a, d)
                     for a, d in sorted(JSON_ACTIONS.items())[:20])
    put(t, "batch", '{"type": "batch", "request_id": 7, "requests": [%s]}\n' % reqs)
    put(t, "batch-65", '{"type": "batch", "requests": [%s]}\n' %
        ", ".join(['{"type":"command","action":"ping"}'] * 65))
    put(t, "mixed-text-json",
        "robot 1\nsub odom 9100\n{\"type\":\"command\",\"action\":\"get_state\"}\n"
        "step 2\nping\n")
    put(t, "malformed",
        '{"type": "command", "action": "get_state", "data": {"robot": [}\n'
        '{"type": 5}\n{}\n{"type":"command","action":"step","data":{"v":"x"}}\n')
    put(t, "deep-nesting", "{\"a\":" * 300 + "1" + "}" * 300 + "\n")
    put(t, "half-line-no-eol", '{"type": "command", "action": "pi')
    put(t, "crlf", '{"type":"command","action":"ping"}\r\nping\r\n')
    put(t, "text-too-long", "x" * 1100 + "\nping\n")
    # long base64 values: pa_json_load_line's fast path (netgw/json/json_lex.c),
    # which the target checks against json_loadb on every line
    acts = base64.b64encode(b"".join(
        struct.pack("<ff", ((i * 37 % 201) - 100) / 250.0,
                    ((i * 53 % 199) - 99) / 66.0) for i in range(1000))).decode()
    ids = base64.b64encode(b"".join(
        struct.pack("<I", (i * 7) % 1000) for i in range(1000))).decode()
    head = '{"type":"command","action":"step_batch","request_id":7,"data":'
    put(t, "step_batch-1000-b64",
        head + '{"robots_range":[0,1000],"steps":20,"binary":true,'
        '"actions_b64":"%s","observe":false}}\n' % acts)
    put(t, "step_batch-both-b64",
        head + '{"robots_b64":"%s","steps":2,"actions_b64":"%s"}}\n'
        % (ids, acts[:4000]))
    # the key first in data.foo, after escaped quotes and braces in strings
    put(t, "step_batch-b64-near",
        '{"data":{"foo":{"x":"\\"}\\"","y":"\\\\","actions_b64":"%s"},'
        '"actions_b64":"%s"}}\n' % (acts[:600], acts[:900]))
    put(t, "step_batch-b64-dup",
        '{"data":{"actions_b64":"%s","actions_b64":"AAAA"}}\n' % acts[:1200])
    # data.beams: sectors in the JSON, binary and "shm" replies, and bad ones
    put(t, "step_batch-beams",
        head + '{"robots":[0,1],"steps":3,"beams":36}}\n' +
        head + '{"robots":[0],"steps":1,"binary":true,"beams":7}}\n' +
        head + '{"robots_range":[0,2],"steps":2,"observe":"shm","beams":360}}\n' +
        head + '{"robots":[0],"beams":0}}\n' + head + '{"robots":[0],"beams":4097}}\n' +
        head + '{"robots":[0],"beams":"36"}}\n')
    put(t, "batch-terrain",
        '{"type":"command","action":"generate_map","data":{"width":400,'
        '"height":400,"resolution":0.2}}\n{"type": "batch", "requests": [%s]}\n'
        % ", ".join(['{"type":"command","action":"get_terrain_grid",'
                     '"data":{"stride":1}}'] * 8))


def ws_frame(opcode, payload, fin=True, mask=b"\x37\xfa\x21\x3d"):
    """A client frame as RFC 6455 5.2 lays it out (always masked)."""
    n = len(payload)
    head = bytes([(0x80 if fin else 0) | opcode])
    if n < 126:
        head += bytes([0x80 | n])
    elif n < 65536:
        head += bytes([0x80 | 126]) + struct.pack(">H", n)
    else:
        head += bytes([0x80 | 127]) + struct.pack(">Q", n)
    body = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
    return head + mask + body


def wss():
    head = (b"GET /ws HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\n"
            b"Connection: Upgrade\r\nSec-WebSocket-Version: 13\r\n"
            b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
            b"Sec-WebSocket-Protocol: foxglove.websocket.v1\r\n\r\n")
    put("ws", "text", head + ws_frame(1, b'{"op":"subscribe"}'))
    put("ws", "fragments", head + ws_frame(1, b"frag", fin=False)
        + ws_frame(9, b"ping") + ws_frame(0, b"ment"))
    put("ws", "binary_close", head + ws_frame(2, bytes(300))
        + ws_frame(8, b"\x03\xe8bye"))
    put("ws", "frames_only", ws_frame(1, b"hi") + ws_frame(2, b"\xff"))
    put("ws", "plain_http", b"GET /metrics HTTP/1.1\r\n\r\n")
    put("ws", "bad_version", head.replace(b"Version: 13", b"Version: 8"))
    put("ws", "unmasked", head + b"\x81\x02hi")
    put("ws", "long64", head + ws_frame(2, bytes(70000))[:200])


# ---- MCAP files (fuzz_mcap) and the browser port's heads (fuzz_http) -----


def zstd_raw(data):
    """A zstd frame holding data in raw blocks, its content size declared
    (the standard library has no zstd; raw blocks need none)."""
    n = len(data)
    if n < 256:
        out = b"\x28\xb5\x2f\xfd" + bytes([0x20, n])
    else:
        out = b"\x28\xb5\x2f\xfd" + bytes([0x60]) + struct.pack("<H", n - 256)
    blocks = [data[i:i + 65536] for i in range(0, n, 65536)] or [b""]
    for k, b in enumerate(blocks):
        last = 1 if k == len(blocks) - 1 else 0
        out += struct.pack("<I", last | (len(b) << 3))[:3] + b
    return out


def mrec(op, body):
    return bytes([op]) + struct.pack("<Q", len(body)) + body


def mstr(s):
    s = s.encode() if isinstance(s, str) else s
    return struct.pack("<I", len(s)) + s


def mchannel(cid, topic):
    return mrec(4, struct.pack("<HH", cid, 0) + mstr(topic) + mstr("json")
                + struct.pack("<I", 0))


def mmessage(cid, t, data):
    return mrec(5, struct.pack("<HIQQ", cid, 0, t, t) + data)


def mchunk(records, comp="", claim=None, crc=True):
    body = zstd_raw(records) if comp == "zstd" else records
    usize = len(records) if claim is None else claim
    c = zlib.crc32(records) & 0xFFFFFFFF if crc else 0
    return mrec(6, struct.pack("<QQQI", 0, 0, usize, c) + mstr(comp)
                + struct.pack("<Q", len(body)) + body)


MAGIC = b"\x89MCAP0\r\n"


def mfile(chunks, data_end=True, footer=True):
    out = MAGIC + mrec(1, mstr("") + mstr("playarea"))
    for c in chunks:
        out += c
    if data_end:
        out += mrec(0x0F, struct.pack("<I", zlib.crc32(out) & 0xFFFFFFFF))
    if footer:
        out += mrec(2, struct.pack("<QQI", 0, 0, 0)) + MAGIC
    return out


def mnested(depth):
    inner = mchannel(1, "/a") + mmessage(1, 0, b"{}")
    for _ in range(depth):
        inner = mchunk(inner, crc=False)
    return MAGIC + inner


def mcaps():
    recs = mchannel(1, "/a") + b"".join(
        mmessage(1, t, b'{"v":%d}' % t) for t in range(5))
    put("mcap", "plain", mfile([mchunk(recs)]))
    put("mcap", "zstd", mfile([mchunk(recs, "zstd"), mchunk(recs, "zstd")]))
    cmds = (mchannel(1, "/commands") + mchannel(2, "/state")
            + mmessage(1, 1, b'{"tick":0,"op":"set_cmd","robot":0}')
            + mmessage(2, 2, b'{"robots":[]}'))
    put("mcap", "commands", mfile([mchunk(cmds, "zstd")]))
    put("mcap", "nested_8", mnested(8))
    put("mcap", "huge_claim", mfile([mchunk(recs, "zstd", claim=1 << 30)]))
    put("mcap", "claim_mismatch", mfile([mchunk(recs, "zstd", claim=4096)]))
    put("mcap", "truncated", mfile([mchunk(recs)])[:-40])
    flipped = bytearray(mfile([mchunk(recs)], data_end=False, footer=False))
    flipped[-30] ^= 0x20
    put("mcap", "flipped", bytes(flipped))
    bad_crc = bytearray(mfile([mchunk(recs, "zstd")]))
    bad_crc[33 + 9 + 1] ^= 0x01  # the chunk's start time: only the data CRC
    put("mcap", "data_crc", bytes(bad_crc))
    put("mcap", "record_1tib", MAGIC + bytes([4]) + struct.pack("<Q", 1 << 40))


def https():
    put("http", "get", b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
    put("http", "ws", b"GET /ws HTTP/1.1\r\nUpgrade: websocket\r\n"
        b"Connection: Upgrade\r\nSec-WebSocket-Version: 13\r\n"
        b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n")
    put("http", "ws_query", b"GET /ws?token=a%20b+c HTTP/1.1\r\n\r\n")
    put("http", "metrics_token", b"GET /metrics?x=1&token=s3cret HTTP/1.1\r\n"
        b"Cookie: a=b; pa_token=s3cret\r\n"
        b"Authorization: Bearer s3cret\r\n\r\n")
    put("http", "upload", b"POST /api/upload?path=m.yaml HTTP/1.1\r\n"
        b"Content-Length: 4\r\n\r\nabcd")
    put("http", "partial", b"GET /ws")
    put("http", "nul_head", b"GET /ws HTTP/1.1\r\nX: a\0b\r\n\r\n")
    put("http", "bad_pct", b"GET /?token=%zz%4 HTTP/1.1\r\n\r\n")


def player_msg(interf, index, type_, subtype, body=b"", size=None):
    """A Player message as a client sends it: the 40-byte XDR header, the body."""
    return struct.pack(">6IdII", 0, 0, interf, index, type_, subtype, 0.0, 0,
                       len(body) if size is None else size) + body


def xdr_bytes(b):
    return struct.pack(">II", len(b), len(b)) + b + b"\0" * ((4 - len(b) % 4) % 4)


def players():
    """What libplayerc sends: data mode, subscriptions, requests, commands."""
    dev = lambda i, n, a: struct.pack(">5I", 0, 0, i, n, a) + xdr_bytes(b"")
    put("player", "libplayerc_start",
        player_msg(1, 0, 3, 5, struct.pack(">I", 2)) + player_msg(1, 0, 3, 3, dev(31, 0, 1)) +
        player_msg(1, 0, 3, 3, dev(4, 0, 1)) + player_msg(1, 0, 3, 4))
    name = xdr_bytes(b"robot0\0")
    put("player", "sim_pose",
        player_msg(31, 0, 3, 1, name + struct.pack(">3d", 0, 0, 0)) +
        player_msg(31, 0, 3, 4, name + struct.pack(">7d", 1, 2, 0, 0, 0, 0.5, 0)))
    put("player", "sim_prop",
        player_msg(31, 0, 3, 6, name + xdr_bytes(b"color\0") + struct.pack(">I", 0) +
                   xdr_bytes(struct.pack("<4f", 1, 0, 0, 1))) + player_msg(31, 0, 2, 1))
    put("player", "position2d",
        player_msg(4, 0, 2, 1, struct.pack(">3dI", 0.3, 0, 0.2, 1)) +
        player_msg(4, 0, 3, 5, struct.pack(">3d", 1, 2, 3)) + player_msg(4, 0, 3, 1))
    put("player", "laser_map",
        player_msg(6, 0, 3, 2, struct.pack(">5fIf", -3.1, 3.1, 0.017, 8, 0, 0, 10)) +
        player_msg(62, 0, 3, 4, struct.pack(">7d", 0, 0, 0, 0, 8, 0, 0)) +
        player_msg(42, 0, 3, 2, struct.pack(">7I", 0, 0, 64, 64, 0, 0, 0)))
    put("player", "auth", player_msg(1, 0, 3, 7, xdr_bytes(b"s3cret")))
    put("player", "wild_lengths",
        player_msg(1, 0, 3, 3, struct.pack(">5I", 0, 0, 4, 0, 1) + struct.pack(">II", 9, 0xffffffff)) +
        player_msg(31, 0, 3, 5, struct.pack(">II", 0x7fffffff, 0x7fffffff)))
    put("player", "truncated", player_msg(31, 0, 3, 1, name, size=4096)[:60])


def main():
    images()
    map_yamls()
    worlds()
    texts()
    jsons()
    wss()
    mcaps()
    https()
    players()
    return 0


if __name__ == "__main__":
    sys.exit(main())
