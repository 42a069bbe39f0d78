#!/usr/bin/python3
"""Draws playarea's built-in default world (maps/default.png + default.yaml).

Run: /usr/bin/python3 maps/make_default.py [OUTDIR]. Standard library only
(zlib writes the PNG). The committed PNG is what ships; this script documents
how it was made and regenerates it byte for byte.

Layout (world metres, map centre at 0,0, x east, y north):
  central hall with the start pose (0, 0, 0) and a clear disc of 1.4 m,
  north-west library (shelves), north-east gallery (round columns),
  south-west workshop (tables, crates), south-east store (L-shaped rack),
  an east corridor along the whole height. Doorways are 1.0-1.2 m wide.
"""
import math
import os
import struct
import sys
import zlib

RES = 0.022178            # [m/px]
SIZE = 500                # [px], square
HALF = SIZE * RES / 2.0   # 5.5445 m
WALL = 0.15               # outer wall thickness [m]
INNER = 0.10              # interior wall thickness [m]

FREE, OCC = 255, 0

img = [[FREE] * SIZE for _ in range(SIZE)]


def px_center(i, j):
    """World coordinates of image pixel (column i, row j); row 0 is north."""
    x = -HALF + (i + 0.5) * RES
    y = HALF - (j + 0.5) * RES
    return x, y


def fill(pred):
    for j in range(SIZE):
        for i in range(SIZE):
            x, y = px_center(i, j)
            if pred(x, y):
                img[j][i] = OCC


def box(x0, y0, x1, y1):
    """Axis-aligned rectangle between two corners [m]."""
    lx, hx = min(x0, x1), max(x0, x1)
    ly, hy = min(y0, y1), max(y0, y1)
    fill(lambda x, y: lx <= x <= hx and ly <= y <= hy)


def rbox(cx, cy, sx, sy, th):
    """Rotated rectangle: centre, full extents, yaw [rad]."""
    c, s = math.cos(th), math.sin(th)

    def inside(x, y):
        dx, dy = x - cx, y - cy
        u = c * dx + s * dy
        v = -s * dx + c * dy
        return abs(u) <= sx / 2 and abs(v) <= sy / 2
    fill(inside)


def disc(cx, cy, r):
    fill(lambda x, y: (x - cx) ** 2 + (y - cy) ** 2 <= r * r)


def spans(lo, hi, doors):
    """The solid stretches (a, b) of a wall from lo to hi with door gaps."""
    cuts = [lo] + [v for door in sorted(doors) for v in door] + [hi]
    return zip(cuts[0::2], cuts[1::2])


def hwall(y, x0, x1, doors=()):
    """Horizontal interior wall at y from x0 to x1 with door gaps (a, b)."""
    for a, b in spans(x0, x1, doors):
        box(a, y - INNER / 2, b, y + INNER / 2)


def vwall(x, y0, y1, doors=()):
    for a, b in spans(y0, y1, doors):
        box(x - INNER / 2, a, x + INNER / 2, b)


def draw():
    E = HALF
    # Outer walls.
    box(-E, -E, E, -E + WALL)
    box(-E, E - WALL, E, E)
    box(-E, -E, -E + WALL, E)
    box(E - WALL, -E, E, E)

    # North rooms | central hall | south rooms; east corridor at x > 3.8.
    hwall(2.0, -E, 3.8, doors=[(-3.4, -2.3), (1.2, 2.3)])
    hwall(-2.2, -E, 3.8, doors=[(-2.6, -1.5), (2.0, 3.1)])
    vwall(3.8, -E, E, doors=[(-4.3, -3.2), (-1.5, -0.4), (3.3, 4.4)])
    vwall(-0.4, 2.0, E)          # library | gallery
    vwall(0.6, -E, -2.2)         # workshop | store

    # Library (north-west): shelves along the walls and two free-standing.
    box(-5.2, 4.75, -2.0, 5.1)
    box(-5.2, 2.5, -4.85, 4.1)
    box(-3.4, 3.1, -1.2, 3.35)
    box(-3.4, 3.95, -1.2, 4.2)
    # Gallery (north-east): round columns.
    for cx in (0.8, 2.0, 3.2):
        disc(cx, 4.0, 0.22)
    disc(1.4, 3.1, 0.18)
    disc(2.6, 3.1, 0.18)

    # Central hall: square and round pillars, a sofa and a low table.
    box(-4.0, 0.6, -3.6, 1.0)
    box(-4.0, -1.2, -3.6, -0.8)
    disc(2.4, -1.1, 0.25)
    disc(2.4, 1.1, 0.25)
    rbox(-1.6, 1.55, 1.4, 0.4, 0.0)
    rbox(1.8, 0.0, 0.5, 0.5, math.radians(30))

    # Workshop (south-west): two tables, crates.
    box(-4.6, -3.6, -3.0, -3.0)
    box(-2.2, -4.6, -0.9, -4.0)
    rbox(-4.6, -4.8, 0.4, 0.4, math.radians(15))
    rbox(-4.0, -4.85, 0.3, 0.3, math.radians(40))
    disc(-0.3, -3.0, 0.15)
    # Store (south-east): an L-shaped rack and a barrel.
    box(1.3, -5.0, 3.2, -4.65)
    box(2.85, -5.0, 3.2, -3.5)
    disc(1.5, -3.2, 0.2)

    # East corridor: two crates against the wall, never closer than 1 m.
    box(5.0, 0.8, 5.39, 1.3)
    box(5.0, -3.0, 5.39, -2.4)


def png(rows):
    w, h = len(rows[0]), len(rows)
    raw = b"".join(b"\x00" + bytes(r) for r in rows)

    def chunk(tag, data):
        c = struct.pack(">I", len(data)) + tag + data
        return c + struct.pack(">I", zlib.crc32(tag + data) & 0xffffffff)
    ihdr = struct.pack(">IIBBBBB", w, h, 8, 0, 0, 0, 0)  # 8-bit grey
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) +
            chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b""))


YAML = """image: default.png
resolution: 0.022178
origin: [-5.5445, -5.5445, 0.0]
negate: 0
occupied_thresh: 0.65
free_thresh: 0.196
mode: trinary
"""


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(
        os.path.abspath(__file__))
    draw()
    # The start disc must stay clear.
    for j in range(SIZE):
        for i in range(SIZE):
            x, y = px_center(i, j)
            if x * x + y * y <= 1.4 ** 2 and img[j][i] != FREE:
                sys.exit("start disc is not free at %.2f %.2f" % (x, y))
    with open(os.path.join(out, "default.png"), "wb") as f:
        f.write(png(img))
    with open(os.path.join(out, "default.yaml"), "w") as f:
        f.write(YAML)


if __name__ == "__main__":
    main()
