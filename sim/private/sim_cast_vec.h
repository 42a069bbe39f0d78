/* sim_cast_vec.h - the exact vector caster, written once with GCC/Clang
 * vector extensions (VEC_BYTES-wide vectors: 64 = 16 float / 8 double lanes,
 * 32 = 8 / 4, 16 = 4 / 2), included by sim_cast_avx512.c, sim_cast_avx2.c
 * (each compiled for its ISA) and sim_cast_portable.c (the compiler's
 * baseline: SSE2 on x86-64, NEON on AArch64). Two passes:
 * - float: every ray jumps by its cell's safe step while that is >= 1 cell
 *   (the float error of the point stays inside the field's slack, so the
 *   ray is free up to the parameter reached), then takes crossings cell by
 *   cell, each only when its decision is certified to be the double
 *   traversal's (else a close call), to a blocked cell (the hit), range_max
 *   or open space again (back to jumping). The rays wait on packed lists,
 *   one step of each per pass: no lane waits for another ray;
 * - double: close calls go on exactly, in the scalar caster when they are
 *   few, else in double lanes that either jump (landing in the plain
 *   traversal's state by exact comparisons) or take one exact crossing with
 *   the plain traversal's operations (IEEE subtraction and product); a lane
 *   that stops writes the hit cell's entry with cell_entry's operations.
 * Every range is the entry of the plain traversal's hit cell, computed in
 * double as cell_entry does: equal to the plain traversal bit for bit.
 *
 * The includer defines VEC_TARGET (a function attribute, may be empty) and
 * VEC_FN(name) (the file's names), and may set VEC_BYTES and give faster
 * forms of the hooks below: VEC_GATHER_F / _D (lanes of field bytes),
 * VEC_FMA_F, VEC_TRUNC_D, VEC_BITS_F / _D (lane mask -> bits), VEC_EXPAND_D
 * (expand load), VEC_POPCNT (set bits of a lane mask) and VEC_PERM with
 * VEC_CST_F / _I (packed stores). */
#include "sim_geom_int.h"

#include <math.h>
#include <string.h>

#ifndef VEC_BYTES
#define VEC_BYTES 32 /* 8 float / 4 double lanes */
#endif
typedef float vec_f __attribute__((vector_size(VEC_BYTES)));
typedef int32_t vec_i __attribute__((vector_size(VEC_BYTES)));
typedef double vec_d __attribute__((vector_size(VEC_BYTES)));
typedef int64_t vec_l __attribute__((vector_size(VEC_BYTES)));
typedef uint32_t vec_u __attribute__((vector_size(VEC_BYTES)));
/* A cell index y * W + x in every lane: unsigned, so the stale lanes past a
 * list's end (selected away after) wrap instead of overflowing; a live
 * lane's index fits in 31 bits (the dispatcher's check), so it is exact. */
#define CELL_I(y, x, W) ((vec_i)((vec_u)(y) * (vec_u)(W) + (vec_u)(x)))
/* a + b in every lane, unsigned for the same reason (a live lane's sum is
 * a cell's column or row: exact) */
#define ADD_I(a, b) ((vec_i)((vec_u)(a) + (vec_u)(b)))
#define VEC_FL (VEC_BYTES / 4) /* float lanes */
#define VEC_DL (VEC_BYTES / 8) /* double lanes */

#ifndef VEC_WAVES
#define VEC_WAVES 4 /* independent dependency chains in flight */
#endif
#define VEC_FAR_K (1.0f / 1048576.0f) /* 2^-20: a float range's error */
#ifndef VEC_SCALAR_MAX
#define VEC_SCALAR_MAX 16 /* close calls up to this many: the scalar caster */
#endif

/* The portable forms of the includer's hooks (an ISA file may give its
 * own): lane loads, a product and a sum, trunc by the 2^52 trick (exact
 * for 0 <= x < 2^51), and the lane mask bit by bit. */
#ifndef VEC_GATHER_F
VEC_TARGET static inline vec_i VEC_FN(gather_f)(const uint8_t *F, vec_i i) {
  vec_i v;
  for (int l = 0; l < VEC_FL; l++)
    v[l] = F[i[l]];
  return v;
}
#define VEC_GATHER_F(F, idx) VEC_FN(gather_f)(F, idx)
#endif
#ifndef VEC_GATHER_D
VEC_TARGET static inline vec_d VEC_FN(gather_d)(const uint8_t *F, vec_d x) {
  vec_d v;
  for (int l = 0; l < VEC_DL; l++)
    v[l] = F[(int64_t)x[l]];
  return v;
}
#define VEC_GATHER_D(F, idx) VEC_FN(gather_d)(F, idx)
#endif
#ifndef VEC_POPCNT
#define VEC_POPCNT(b) __builtin_popcount(b) /* set bits of a lane mask */
#endif
#ifndef VEC_FMA_F
#define VEC_FMA_F(a, b, c) ((a) * (b) + (c))
#endif
#ifndef VEC_TRUNC_D
VEC_TARGET static inline vec_d VEC_FN(trunc_d)(vec_d x) {
  const vec_d big = (vec_d){0} + 4503599627370496.0; /* 2^52 */
  vec_d r = (x + big) - big;                         /* x rounded to nearest */
  return r - (vec_d)((vec_l)((vec_d){0} + 1.0) & (r > x));
}
#define VEC_TRUNC_D(x) VEC_FN(trunc_d)(x)
#endif
#ifndef VEC_BITS_D
VEC_TARGET static inline unsigned VEC_FN(bits_d)(vec_l m) {
  unsigned b = 0;
  for (int l = 0; l < VEC_DL; l++)
    b |= (m[l] != 0) << l;
  return b;
}
#define VEC_BITS_D(m) VEC_FN(bits_d)(m)
#endif

/* Lanes in bits `fr` take src[0], src[1], ... in lane order (the others:
 * anything); only the first popcount(fr) elements of src are read. */
#ifndef VEC_EXPAND_D
VEC_TARGET static inline vec_d VEC_FN(expand_d)(unsigned fr,
                                                const double *src) {
  vec_d v = {0};
  for (int l = 0, k = 0; l < VEC_DL; l++)
    if (fr >> l & 1)
      v[l] = src[k++];
  return v;
}
#define VEC_EXPAND_D(fr, src) VEC_FN(expand_d)(fr, src)
#endif
#ifndef VEC_BITS_F
VEC_TARGET static inline unsigned VEC_FN(bits_f)(vec_i m) {
  unsigned b = 0;
  for (int l = 0; l < VEC_FL; l++)
    b |= (m[l] != 0) << l;
  return b;
}
#define VEC_BITS_F(m) VEC_FN(bits_f)(m)
#endif

/* The lowest `left` set bits of fr (all of them when there are fewer): the
 * free lanes that take the last rays. */
VEC_TARGET static inline unsigned VEC_FN(first_lanes)(unsigned fr,
                                                      uint32_t left) {
  if ((uint32_t)VEC_POPCNT(fr) <= left)
    return fr;
  unsigned keep = 0;
  for (uint32_t got = 0; fr && got < left; got++) {
    keep |= fr & -fr;
    fr &= fr - 1;
  }
  return keep;
}

/* Lane masks (all ones where bit l of b is set). */
VEC_TARGET static inline vec_l VEC_FN(mask_d)(unsigned b) {
  vec_l lane;
  for (int l = 0; l < VEC_DL; l++)
    lane[l] = 1 << l;
  return (((vec_l){0} + (int64_t)b) & lane) != 0;
}

/* m ? a : b, lane by lane (m: 0 or all ones). */
#define SEL_D(m, a, b) ((vec_d)(((vec_l)(a) & (m)) | ((vec_l)(b) & ~(m))))
#define SEL_F(m, a, b) ((vec_f)(((vec_i)(a) & (m)) | ((vec_i)(b) & ~(m))))
#define SEL_I(m, a, b) (((a) & (m)) | ((b) & ~(m)))

typedef struct VEC_FN(wave) {
  vec_d dx, dy, jx, jy, fsx, fsy, bxo, byo, t, bx, by, idx, id;
  vec_l live;
  unsigned bits; /* live lanes */
} VEC_FN(wave);

typedef struct VEC_FN(src) {
  const double *dx, *dy, *jx, *jy, *t0, *id; /* rays waiting, in order */
  uint32_t next, n;
  double c0x, c0y, idx0; /* the origin's cell */
} VEC_FN(src);

/* The plain traversal's state after all its crossings up to tj: the fused
 * product only guesses the point, the comparisons make the boundaries exact
 * (an axis never crossed has jx = 1e300 and never moves). */
VEC_TARGET static inline void VEC_FN(land)(const VEC_FN(wave) * w, vec_d tj,
                                           vec_d ox, vec_d oy, vec_d Wd,
                                           vec_d *bx, vec_d *by, vec_d *idx) {
  vec_d px = tj * w->dx + ox, py = tj * w->dy + oy;
  vec_d bxj = VEC_TRUNC_D(px) + w->bxo;
  vec_d byj = VEC_TRUNC_D(py) + w->byo;
  vec_l ax = (bxj - ox) * w->jx <= tj;
  vec_l rx = ~ax & (((bxj - w->fsx) - ox) * w->jx > tj);
  bxj = SEL_D(ax, bxj + w->fsx, SEL_D(rx, bxj - w->fsx, bxj));
  vec_l ay = (byj - oy) * w->jy <= tj;
  vec_l ry = ~ay & (((byj - w->fsy) - oy) * w->jy > tj);
  byj = SEL_D(ay, byj + w->fsy, SEL_D(ry, byj - w->fsy, byj));
  *bx = bxj;
  *by = byj;
  *idx = (byj - w->byo) * Wd + (bxj - w->bxo);
}

/* Starts the next rays in the free lanes; the others keep running. */
VEC_TARGET static inline void VEC_FN(fill)(VEC_FN(wave) * w, VEC_FN(src) * q,
                                           vec_d ox, vec_d oy, vec_d Wd) {
  const unsigned full = (1u << VEC_DL) - 1;
  unsigned fr = ~w->bits & full;
  uint32_t left = q->n - q->next;
  if (!fr || !left)
    return;
  fr = VEC_FN(first_lanes)(fr, left);
  const uint32_t at = q->next;
  q->next += (uint32_t)VEC_POPCNT(fr);
  w->bits |= fr;
  const vec_l fm = VEC_FN(mask_d)(fr);
  w->dx = SEL_D(fm, VEC_EXPAND_D(fr, q->dx + at), w->dx);
  w->dy = SEL_D(fm, VEC_EXPAND_D(fr, q->dy + at), w->dy);
  w->jx = SEL_D(fm, VEC_EXPAND_D(fr, q->jx + at), w->jx);
  w->jy = SEL_D(fm, VEC_EXPAND_D(fr, q->jy + at), w->jy);
  w->t = SEL_D(fm, VEC_EXPAND_D(fr, q->t0 + at), w->t);
  w->id = SEL_D(fm, VEC_EXPAND_D(fr, q->id + at), w->id);
  const vec_d one = (vec_d){0} + 1.0, zero = (vec_d){0};
  vec_l nx = w->dx < 0, ny = w->dy < 0;
  w->fsx = SEL_D(fm, SEL_D(nx, -one, one), w->fsx);
  w->fsy = SEL_D(fm, SEL_D(ny, -one, one), w->fsy);
  w->bxo = SEL_D(fm, SEL_D(nx, zero, one), w->bxo);
  w->byo = SEL_D(fm, SEL_D(ny, zero, one), w->byo);
  w->bx = SEL_D(fm, q->c0x + w->bxo, w->bx);
  w->by = SEL_D(fm, q->c0y + w->byo, w->by);
  w->idx = SEL_D(fm, zero + q->idx0, w->idx);
  /* rays the float pass moved on start where it left them */
  vec_l moved = fm & (w->t > 0);
  if (VEC_BITS_D(moved)) {
    vec_d bx, by, idx;
    VEC_FN(land)(w, w->t, ox, oy, Wd, &bx, &by, &idx);
    w->bx = SEL_D(moved, bx, w->bx);
    w->by = SEL_D(moved, by, w->by);
    w->idx = SEL_D(moved, idx, w->idx);
  }
  w->live |= fm;
}

/* One iteration of every live lane; a lane that finishes writes its range
 * [cells] (maxc = no return) to out[its ray]. */
VEC_TARGET static inline void VEC_FN(step)(VEC_FN(wave) * w, const uint8_t *F,
                                           vec_d ox, vec_d oy, vec_d Wd,
                                           vec_d maxc, double *out) {
  const vec_d zero = {0};
  vec_d v = VEC_GATHER_D(F, w->idx);
  vec_l hit = w->live & (v == 0);
  /* the decode of the field's code: max((v - 1) / 4, v - 97) cells */
  vec_d s1 = v * 0.25 - 0.25, s2 = v - 97.0;
  vec_d safe = SEL_D(s1 > s2, s1, s2);
  vec_d tx = (w->bx - ox) * w->jx, ty = (w->by - oy) * w->jy;
  vec_l xs = tx < ty;
  vec_d te = SEL_D(xs, tx, ty);
  vec_d tj = w->t + safe;
  /* safe > 0: a jump always makes progress */
  vec_l j = (safe > 0) & (tj > te);
  vec_d bxj, byj, lidx;
  VEC_FN(land)(w, tj, ox, oy, Wd, &bxj, &byj, &lidx);
  vec_d nbx = SEL_D(j, bxj, SEL_D(xs, w->bx + w->fsx, w->bx));
  vec_d nby = SEL_D(j, byj, SEL_D(xs, w->by, w->by + w->fsy));
  vec_d nidx = SEL_D(j, lidx, w->idx + SEL_D(xs, w->fsx, w->fsy * Wd));
  vec_d nt = SEL_D(j, tj, te);
  vec_l upd = w->live & ~hit;
  w->t = SEL_D(upd, nt, w->t);
  w->bx = SEL_D(upd, nbx, w->bx);
  w->by = SEL_D(upd, nby, w->by);
  w->idx = SEL_D(upd, nidx, w->idx);
  vec_l ov = upd & (nt >= maxc);
  vec_l fin = hit | ov;
  unsigned fb = VEC_BITS_D(fin);
  if (fb) {
    /* cell_entry of the hit cell, the same operations: the entry boundary
     * of an axis is bx - fsx (an integer), an axis never crossed is -inf */
    const vec_d ninf = zero - INFINITY;
    vec_d ex = SEL_D(w->dx != 0, ((w->bx - w->fsx) - ox) * w->jx, ninf);
    vec_d ey = SEL_D(w->dy != 0, ((w->by - w->fsy) - oy) * w->jy, ninf);
    vec_d e = SEL_D(ex > ey, ex, ey);
    e = SEL_D(e > 0, e, zero);
    e = SEL_D(e < maxc, e, maxc);
    e = SEL_D(ov, maxc, e);
    for (int l = 0; l < VEC_DL; l++)
      if (fb >> l & 1)
        out[(uint32_t)w->id[l]] = e[l];
    w->live &= ~fin;
    w->bits &= ~fb;
  }
}

VEC_TARGET static void VEC_FN(cells)(const pa_sim_model *m, double ox,
                                     double oy, VEC_FN(src) * q, double maxc,
                                     double *out) {
  q->c0x = floor(ox);
  q->c0y = floor(oy);
  q->idx0 = q->c0y * (double)m->march_w + q->c0x;
  const vec_d zero = {0};
  const vec_d vox = zero + ox, voy = zero + oy;
  const vec_d Wd = zero + (double)m->march_w, vmax = zero + maxc;
  VEC_FN(wave) w[VEC_WAVES];
  memset(w, 0, sizeof w); /* no lane live; fill sets them up */
  for (int k = 0; k < VEC_WAVES; k++)
    w[k].idx = zero + q->idx0;
  for (;;) {
    unsigned any = 0;
#pragma GCC unroll 8
    for (int k = 0; k < VEC_WAVES; k++) {
      VEC_FN(fill)(&w[k], q, vox, voy, Wd);
      any |= w[k].bits;
    }
    if (!any)
      break;
#pragma GCC unroll 8
    for (int k = 0; k < VEC_WAVES; k++)
      VEC_FN(step)(&w[k], m->march, vox, voy, Wd, vmax, out);
  }
}

/* ---- the float pass: jumps and certified crossings, list by list ----
 * A ray jumps by its cell's safe step while that is >= 1 cell (the first
 * jump, from the origin's cell, is the same for all: taken at the start);
 * where it stops, it lands in the cell under the point unless that is
 * within its error bound of a cell edge; then it takes crossings cell by
 * cell, each only when tx and ty are farther apart than their error bounds
 * (and clear of range_max), so each is the choice the double traversal
 * makes; until a blocked cell (the hit: its cell),
 * range_max, open space again (back to jumping) or a close call (the double
 * pass goes on from a parameter known to be free).
 * The rays wait on two lists (structure of arrays): those jumping and those
 * walking. A pass takes one step of every ray on a list, lanes independent,
 * and packs the rays that go on to the front of the list; a ray that
 * changes mode moves to the other list. No lane waits for another ray, and
 * the steps of a pass have no dependency chain between vectors. */
#define VEC_LAND_K (1.0f / 2097152.0f) /* 2^-21: a point's error bound */
#define VEC_WALK_OPEN 9                /* codes >= this: back to jumping */
#define VEC_WALK_OPEN_ERR 0.004f       /* when t is known this well */
#define VEC_LIST (CAST_CHUNK + VEC_FL) /* a list's room: + a vector's slack */
enum { VRAY_NONE = -1, VRAY_DOUBLE = -2 }; /* else: the hit cell's row */
#define VEC_TAIL 4 /* rays left when the scalar caster takes over */

/* Packed stores: lanes b of v to dst[0], dst[1], ... in lane order (the
 * vector's room may be written past them). VEC_PERM(b) once, then
 * VEC_CST_F / _I of each vector. */
#ifndef VEC_PERM
typedef unsigned VEC_FN(perm);
#define VEC_PERM(b) ((VEC_FN(perm))(b))
VEC_TARGET static inline void VEC_FN(cst_f)(float *dst, vec_f v, unsigned b) {
  for (int l = 0, k = 0; l < VEC_FL; l++) { /* no branch: k <= l */
    dst[k] = v[l];
    k += (int)(b >> l & 1);
  }
}
VEC_TARGET static inline void VEC_FN(cst_i)(int32_t *dst, vec_i v, unsigned b) {
  for (int l = 0, k = 0; l < VEC_FL; l++) {
    dst[k] = v[l];
    k += (int)(b >> l & 1);
  }
}
#define VEC_CST_F(dst, v, p) VEC_FN(cst_f)(dst, v, p)
#define VEC_CST_I(dst, v, p) VEC_FN(cst_i)(dst, v, p)
#endif

typedef struct VEC_FN(lists) {
  /* jumping: direction and its inverse, parameter, ray */
  float jdx[VEC_LIST], jdy[VEC_LIST];
  float jt[VEC_LIST];
  int32_t jid[VEC_LIST];
  /* walking: the direction's inverse (0: the axis is never crossed; its
   * sign is the direction's), parameter, its error bound, the landing's
   * parameter, cell, ray */
  float kix[VEC_LIST], kiy[VEC_LIST];
  float kt[VEC_LIST], kte[VEC_LIST], ktl[VEC_LIST];
  int32_t kcx[VEC_LIST], kcy[VEC_LIST], kid[VEC_LIST];
  /* done: ray, result (VRAY_ or the hit's row), its parameter or column */
  int32_t did[VEC_LIST], dres[VEC_LIST], dcx[VEC_LIST];
  float dt[VEC_LIST];
  int32_t v[VEC_LIST];  /* the field codes of a pass, gathered first */
  int32_t kv[VEC_LIST]; /* the walking rays' codes (of their cells) */
  float rdx[VEC_LIST], rdy[VEC_LIST]; /* each ray's direction, by ray */
  int32_t vx[VEC_LIST], vy[VEC_LIST]; /* a jump pass's cells */
  uint32_t nj, nk, nd;
} VEC_FN(lists);

VEC_TARGET static inline vec_f VEC_FN(ld_f)(const float *p) {
  vec_f v;
  memcpy(&v, p, sizeof v);
  return v;
}
VEC_TARGET static inline vec_i VEC_FN(ld_i)(const int32_t *p) {
  vec_i v;
  memcpy(&v, p, sizeof v);
  return v;
}
#define VEC_ST(p, v) memcpy(p, &(v), sizeof(v))

VEC_TARGET static inline vec_f VEC_FN(fabs_f)(vec_f x) {
  return (vec_f)((vec_i)x & 0x7fffffff);
}

/* Lanes [0, left) of a vector: all ones. */
VEC_TARGET static inline vec_i VEC_FN(first_n)(uint32_t left) {
  vec_i lane;
  for (int l = 0; l < VEC_FL; l++)
    lane[l] = l;
  return lane < (int32_t)(left < VEC_FL ? left : VEC_FL);
}

/* Where the float pass stands, shared by its passes. Its frame has the
 * origin's cell at (0, 0): coordinates stay small, and so do the error
 * bounds (they grow with them; in the grid's frame they made close calls
 * and kept walks from jumping again on large maps). */
typedef struct VEC_FN(fctx) {
  const uint8_t *F;
  vec_f ox, oy, aox, aoy, maxc, far; /* the origin in its cell */
  vec_i W, idx0, c0x, c0y;           /* the origin's cell: index, column, row */
  vec_i v0;                          /* and its code */
} VEC_FN(fctx);

/* floor() to integer lanes (the point may be left of or below the origin's
 * cell): truncation, one down where that rounded up (the mask is -1).
 * Unsigned: a stale lane's point past -2^31 truncates to INT_MIN (cvttps2dq),
 * and INT_MIN - 1 wraps instead of overflowing; a live lane's is exact. */
VEC_TARGET static inline vec_i VEC_FN(floor_i)(vec_f p) {
  vec_i i = __builtin_convertvector(p, vec_i);
  return ADD_I(i, (vec_i)(p < __builtin_convertvector(i, vec_f)));
}

/* The field's index of cell (x, y) of the pass's frame; lanes not in
 * `valid`: the origin's cell. Unsigned: exact modulo 2^32, and the true
 * index fits in 31 bits. */
VEC_TARGET static inline vec_i VEC_FN(cell_idx)(const VEC_FN(fctx) * c,
                                                vec_i valid, vec_i x, vec_i y) {
  return (vec_i)((vec_u)(CELL_I(y, x, c->W) & valid) + (vec_u)c->idx0);
}

/* Appends lanes b of a ray's done state (result r, parameter t, column cx)
 * to the done list at `at`; returns the new end (a local in the passes: the
 * list's int32 stores may alias L->nd, which kept it in memory). */
VEC_TARGET static inline uint32_t VEC_FN(done)(VEC_FN(lists) * L, uint32_t at,
                                               unsigned b, vec_i id, vec_i r,
                                               vec_f t, vec_i cx) {
  VEC_FN(perm) p = VEC_PERM(b);
  VEC_CST_I(L->did + at, id, p);
  VEC_CST_I(L->dres + at, r, p);
  VEC_CST_I(L->dcx + at, cx, p);
  VEC_CST_F(L->dt + at, t, p);
  return at + (uint32_t)VEC_POPCNT(b);
}

/* Appends lanes b of jumping rays to the jump list at `at` (a pass packs
 * its own list in place: at <= the vector read); returns the new end. */
VEC_TARGET static inline uint32_t VEC_FN(to_jump)(VEC_FN(lists) * L,
                                                  uint32_t at, unsigned b,
                                                  vec_f dx, vec_f dy, vec_f t,
                                                  vec_i id) {
  VEC_FN(perm) p = VEC_PERM(b);
  VEC_CST_F(L->jdx + at, dx, p);
  VEC_CST_F(L->jdy + at, dy, p);
  VEC_CST_F(L->jt + at, t, p);
  VEC_CST_I(L->jid + at, id, p);
  return at + (uint32_t)VEC_POPCNT(b);
}

/* The same for walking rays: t's error bound te, the landing's parameter
 * tl, the cell (cx, cy). */
VEC_TARGET static inline uint32_t VEC_FN(to_walk)(VEC_FN(lists) * L,
                                                  uint32_t at, unsigned b,
                                                  vec_f inx, vec_f iny, vec_f t,
                                                  vec_f te, vec_f tl, vec_i cx,
                                                  vec_i cy, vec_i id) {
  VEC_FN(perm) p = VEC_PERM(b);
  VEC_CST_F(L->kix + at, inx, p);
  VEC_CST_F(L->kiy + at, iny, p);
  VEC_CST_F(L->kt + at, t, p);
  VEC_CST_F(L->kte + at, te, p);
  VEC_CST_F(L->ktl + at, tl, p);
  VEC_CST_I(L->kcx + at, cx, p);
  VEC_CST_I(L->kcy + at, cy, p);
  VEC_CST_I(L->kid + at, id, p);
  return at + (uint32_t)VEC_POPCNT(b);
}

/* One jump of every jumping ray; those that stop land (onto the walk list,
 * or done: no return within range_max, or a close call). Without branches
 * on the lanes (a mispredicted branch would drop the gathers in flight). */
VEC_TARGET static void VEC_FN(jump_pass)(const VEC_FN(fctx) * c,
                                         VEC_FN(lists) * L) {
  const vec_f zero = {0}, one = zero + 1.0f, K = zero + VEC_LAND_K;
  const vec_i none = (vec_i){0} + VRAY_NONE;
  const vec_i dbl = (vec_i){0} + VRAY_DOUBLE;
  const uint32_t n = L->nj;
  uint32_t keep = 0, nk = L->nk, nd = L->nd;
  /* the field's codes first: the gathers of a whole pass are in flight at
   * once, not held back behind the work that waits for each */
  for (uint32_t i = 0; i < n; i += VEC_FL) {
    vec_i valid = VEC_FN(first_n)(n - i);
    vec_f dx = VEC_FN(ld_f)(L->jdx + i), dy = VEC_FN(ld_f)(L->jdy + i);
    vec_f t = VEC_FN(ld_f)(L->jt + i);
    vec_f px = VEC_FMA_F(t, dx, c->ox), py = VEC_FMA_F(t, dy, c->oy);
    vec_i ix = VEC_FN(floor_i)(px), iy = VEC_FN(floor_i)(py);
    vec_i v = VEC_GATHER_F(c->F, VEC_FN(cell_idx)(c, valid, ix, iy));
    VEC_ST(L->v + i, v);
    VEC_ST(L->vx + i, ix); /* for the steps: not computed twice */
    VEC_ST(L->vy + i, iy);
  }
  /* and those of the walking rays (their cells are known): in flight
   * during the jumps; the rays landing below append their cell's code (the
   * one gathered above) to kv, no gather */
  for (uint32_t i = 0; i < nk; i += VEC_FL) {
    vec_i valid = VEC_FN(first_n)(nk - i);
    vec_i cx = VEC_FN(ld_i)(L->kcx + i), cy = VEC_FN(ld_i)(L->kcy + i);
    vec_i v = VEC_GATHER_F(c->F, VEC_FN(cell_idx)(c, valid, cx, cy));
    VEC_ST(L->kv + i, v);
  }
  for (uint32_t i = 0; i < n; i += VEC_FL) {
    vec_i valid = VEC_FN(first_n)(n - i);
    vec_f dx = VEC_FN(ld_f)(L->jdx + i), dy = VEC_FN(ld_f)(L->jdy + i);
    vec_f t = VEC_FN(ld_f)(L->jt + i);
    vec_i id = VEC_FN(ld_i)(L->jid + i);
    vec_f px = VEC_FMA_F(t, dx, c->ox), py = VEC_FMA_F(t, dy, c->oy);
    vec_i ix = VEC_FN(ld_i)(L->vx + i), iy = VEC_FN(ld_i)(L->vy + i);
    vec_i v = VEC_FN(ld_i)(L->v + i);
    vec_i go = valid & (v >= JUMP_CODE) & (t < c->maxc);
    vec_f fv = __builtin_convertvector(v, vec_f);
    vec_f s1 = fv * 0.25f - 0.25f, s2 = fv - 97.0f;
    vec_f safe = SEL_F(s1 > s2, s1, s2);
    vec_f tn = t + safe;
    keep = VEC_FN(to_jump)(L, keep, VEC_BITS_F(go), dx, dy, tn, id);
    vec_i stop = valid & ~go;
    /* land: the cell under the point, unless within its error bound of a
     * cell edge (t >= 0: |t| = t) */
    vec_f ex = (c->aox + (t + t)) * K, ey = (c->aoy + (t + t)) * K;
    vec_f fx = px - __builtin_convertvector(ix, vec_f);
    vec_f fy = py - __builtin_convertvector(iy, vec_f);
    vec_i org = t == 0; /* the origin's cell (the float origin may round) */
    vec_i far = stop & (t >= c->far);
    vec_i close = (fx <= ex) | (one - fx <= ex) | (fy <= ey) | (one - fy <= ey);
    close &= stop & ~org & ~far;
    /* landed: walks from the landing (t exact there: no error bound), with
     * the inverses (IEEE division: as one at a time; cheaper than keeping
     * them on the jump list) */
    vec_f inx = SEL_F(dx != 0, one / dx, zero);
    vec_f iny = SEL_F(dy != 0, one / dy, zero);
    unsigned lb = VEC_BITS_F(stop & ~far & ~close);
    vec_i lv = SEL_I(org, c->v0, v);
    VEC_CST_I(L->kv + nk, lv, VEC_PERM(lb));
    nk = VEC_FN(to_walk)(L, nk, lb, inx, iny, t, zero, t, ix & ~org, iy & ~org,
                         id);
    /* rare (a few % of the vectors): a branch beats the packed stores */
    unsigned db = VEC_BITS_F(far | close);
    if (db)
      nd = VEC_FN(done)(L, nd, db, id, SEL_I(far, none, dbl), t, ix);
  }
  L->nj = keep;
  L->nk = nk;
  L->nd = nd;
}

/* One crossing of every walking ray (or its end: a hit, range_max, a close
 * call; or open space: onto the jump list), without branches on the lanes. */
VEC_TARGET static void VEC_FN(walk_pass)(const VEC_FN(fctx) * c,
                                         VEC_FN(lists) * L) {
  const vec_f zero = {0}, one = zero + 1.0f;
  const vec_f K = zero + VEC_FAR_K, big = zero + 3e37f;
  const vec_f K2 = K * 2.002f, kox = c->aox * K2, koy = c->aoy * K2;
  const vec_i none = (vec_i){0} + VRAY_NONE;
  const vec_i dbl = (vec_i){0} + VRAY_DOUBLE;
  const uint32_t n = L->nk;
  uint32_t keep = 0, nj = L->nj, nd = L->nd;
  for (uint32_t i = 0; i < n; i += VEC_FL) {
    vec_i valid = VEC_FN(first_n)(n - i);
    vec_f inx = VEC_FN(ld_f)(L->kix + i), iny = VEC_FN(ld_f)(L->kiy + i);
    vec_f t = VEC_FN(ld_f)(L->kt + i), te = VEC_FN(ld_f)(L->kte + i);
    vec_f tl = VEC_FN(ld_f)(L->ktl + i);
    vec_i cx = VEC_FN(ld_i)(L->kcx + i), cy = VEC_FN(ld_i)(L->kcy + i);
    vec_i id = VEC_FN(ld_i)(L->kid + i);
    vec_i v = VEC_FN(ld_i)(L->kv + i); /* gathered in the jump pass */
    /* a blocked cell: the hit (this cell is the result) */
    vec_i hit = valid & (v == 0);
    /* open space again, with t known well enough: back to jumping (below
     * range_max: a ray there would land again at once) */
    vec_i open =
        valid & (v >= VEC_WALK_OPEN) & (te < VEC_WALK_OPEN_ERR) & (t < c->maxc);
    vec_i wk = valid & ~hit & ~open;
    vec_i zx = inx == 0, zy = iny == 0, nx = inx < 0, ny = iny < 0;
    vec_f bx = __builtin_convertvector(cx, vec_f) + SEL_F(nx, zero, one);
    vec_f by = __builtin_convertvector(cy, vec_f) + SEL_F(ny, zero, one);
    vec_f tx = SEL_F(zx, big, (bx - c->ox) * inx);
    vec_f ty = SEL_F(zy, big, (by - c->oy) * iny);
    /* (|i| (|o| + |b|) + |t|) K, bounded from above without b: |i| |b|
     * <= |t| (1 + 2^-22) + |i| |o| (b - o = t / i); an axis never crossed
     * (t = big) has a huge bound but |tx - ty| is bigger still */
    vec_f ex = VEC_FMA_F(VEC_FN(fabs_f)(tx), K2, VEC_FN(fabs_f)(inx) * kox);
    vec_f ey = VEC_FMA_F(VEC_FN(fabs_f)(ty), K2, VEC_FN(fabs_f)(iny) * koy);
    vec_i xs = tx < ty;
    vec_f tn = SEL_F(xs, tx, ty);
    vec_f ten = SEL_F(xs, ex, ey);
    vec_i close = wk & (VEC_FN(fabs_f)(tx - ty) <= ex + ey);
    close |= wk & (VEC_FN(fabs_f)(tn - c->maxc) <= VEC_FMA_F(c->maxc, K, ten));
    wk &= ~close;
    vec_i past = wk & (tn >= c->maxc);
    wk &= ~past;
    /* hit: the cell; close: the double pass from the landing (t has an
     * error); past: no return */
    nd = VEC_FN(done)(L, nd, VEC_BITS_F(hit | close | past), id,
                      SEL_I(hit, ADD_I(cy, c->c0y), SEL_I(close, dbl, none)),
                      tl, ADD_I(cx, c->c0x));
    /* jump on from here */
    unsigned ob = VEC_BITS_F(open); /* rare, as done in jump_pass */
    if (ob) {
      vec_f dx, dy; /* not kept on the walk list: its stores cost more */
      for (int l = 0; l < VEC_FL; l++) { /* other lanes: stale ids */
        dx[l] = ob >> l & 1 ? L->rdx[id[l]] : 0;
        dy[l] = ob >> l & 1 ? L->rdy[id[l]] : 0;
      }
      nj = VEC_FN(to_jump)(L, nj, ob, dx, dy, t, id);
    }
    /* the crossing: sx, sy = -1 or 1 */
    cx += wk & xs & (nx | 1);
    cy += wk & ~xs & (ny | 1);
    keep = VEC_FN(to_walk)(L, keep, VEC_BITS_F(wk), inx, iny, tn, ten, tl, cx,
                           cy, id);
  }
  L->nk = keep;
  L->nj = nj;
  L->nd = nd;
}

typedef int32_t vec_ih __attribute__((vector_size(VEC_BYTES / 2)));
typedef float vec_fh __attribute__((vector_size(VEC_BYTES / 2)));

/* 0, 1, 2, ... in the half-width lanes. */
VEC_TARGET static inline vec_ih VEC_FN(lane_ih)(void) {
  vec_ih v;
  for (int l = 0; l < VEC_DL; l++)
    v[l] = l;
  return v;
}

/* Rays i < n (padded grid, cell units) in single precision as far as it can
 * be trusted: res[i] = the hit cell's row (hx[i]: its column), VRAY_NONE
 * (no return) or VRAY_DOUBLE (rt[i]: free up to there; the double pass goes
 * on). */
VEC_TARGET static void VEC_FN(trace_f)(const pa_sim_model *m, double ox,
                                       double oy, const double *dxs,
                                       const double *dys, uint32_t n,
                                       double maxc, int32_t *res, int32_t *hx,
                                       float *rt) {
  VEC_FN(lists) L __attribute__((aligned(4096)));
  /* the frame of the origin's cell (ox, oy >= 0: truncation is floor;
   * ox - c0x is exact) */
  const int32_t c0x = (int32_t)ox, c0y = (int32_t)oy;
  const float fox = (float)(ox - c0x), foy = (float)(oy - c0y);
  const float fmax = (float)maxc;
  const vec_f zf = {0};
  const vec_i zi = {0};
  VEC_FN(fctx)
  c = {m->march,
       zf + fox,
       zf + foy,
       zf + fabsf(fox),
       zf + fabsf(foy),
       zf + fmax,
       zf + fmax * (1.0f + VEC_FAR_K),
       zi + (int32_t)m->march_w,
       zi + (c0y * (int32_t)m->march_w + c0x),
       zi + c0x,
       zi + c0y,
       zi + (int32_t)m->march[(size_t)c0y * m->march_w + (size_t)c0x]};
  const float t0 = first_jump_f(m, ox, oy, fmax);
  uint32_t i0 = 0;
  /* in lanes (-O2 leaves this loop scalar) */
  for (; i0 + VEC_DL <= n; i0 += VEC_DL) {
    vec_d a, b;
    memcpy(&a, dxs + i0, sizeof a);
    memcpy(&b, dys + i0, sizeof b);
    vec_fh fa = __builtin_convertvector(a, vec_fh);
    vec_fh fb = __builtin_convertvector(b, vec_fh);
    vec_fh ft = (vec_fh){0} + t0;
    vec_ih id = VEC_FN(lane_ih)() + (int32_t)i0;
    VEC_ST(L.jdx + i0, fa);
    VEC_ST(L.rdx + i0, fa);
    VEC_ST(L.jdy + i0, fb);
    VEC_ST(L.rdy + i0, fb);
    VEC_ST(L.jt + i0, ft);
    VEC_ST(L.jid + i0, id);
  }
  for (uint32_t i = i0; i < n; i++) {
    L.jdx[i] = L.rdx[i] = (float)dxs[i];
    L.jdy[i] = L.rdy[i] = (float)dys[i];
    L.jt[i] = t0;
    L.jid[i] = (int32_t)i;
  }
  /* the last vector's room: a direction and a parameter (uninitialised, t
   * was whatever the stack held: points far out of int range) */
  for (uint32_t i = n; i % VEC_FL; i++) {
    L.jdx[i] = L.jdy[i] = 1;
    L.jt[i] = t0;
  }
  L.nj = n;
  L.nk = L.nd = 0;
  while (L.nj + L.nk > VEC_TAIL) {
    VEC_FN(jump_pass)(&c, &L);
    VEC_FN(walk_pass)(&c, &L);
  }
  /* the last few: a pass of a part-empty vector waits on its gathers for
   * each cell; the scalar caster goes on from where each is known free (a
   * jumping ray's parameter, a walking ray's landing) */
  for (uint32_t i = 0; i < L.nj; i++) {
    L.did[L.nd] = L.jid[i];
    L.dres[L.nd] = VRAY_DOUBLE;
    L.dt[L.nd++] = L.jt[i];
  }
  for (uint32_t i = 0; i < L.nk; i++) {
    L.did[L.nd] = L.kid[i];
    L.dres[L.nd] = VRAY_DOUBLE;
    L.dt[L.nd++] = L.ktl[i];
  }
  for (uint32_t i = 0; i < L.nd; i++) {
    res[L.did[i]] = L.dres[i];
    hx[L.did[i]] = L.dcx[i];
    rt[L.did[i]] = L.dt[i];
  }
}

/* The results of rays i < n by the float pass: the hit cell's entry
 * (cell_entry's operations in double lanes: bit for bit) clamped to maxc,
 * or maxc; a close call's out[i] is left to the double pass. */
VEC_TARGET static void VEC_FN(entries)(double pox, double poy, const double *dx,
                                       const double *dy, const int32_t *res,
                                       const int32_t *hx, uint32_t n,
                                       double maxc, double *out) {
  const vec_d zero = {0}, one = zero + 1.0, ninf = zero - INFINITY;
  uint32_t i = 0;
  for (; i + VEC_DL <= n; i += VEC_DL) {
    vec_d vdx, vdy;
    vec_ih r, h;
    memcpy(&vdx, dx + i, sizeof vdx);
    memcpy(&vdy, dy + i, sizeof vdy);
    memcpy(&r, res + i, sizeof r);
    memcpy(&h, hx + i, sizeof h);
    vec_d cx = __builtin_convertvector(h, vec_d);
    vec_d cy = __builtin_convertvector(r, vec_d);
    vec_d ix = SEL_D(vdx != 0, one / vdx, zero);
    vec_d iy = SEL_D(vdy != 0, one / vdy, zero);
    vec_d tx = SEL_D(vdx > 0, (cx - pox) * ix,
                     SEL_D(vdx < 0, ((cx + 1.0) - pox) * ix, ninf));
    vec_d ty = SEL_D(vdy > 0, (cy - poy) * iy,
                     SEL_D(vdy < 0, ((cy + 1.0) - poy) * iy, ninf));
    vec_d t = SEL_D(tx > ty, tx, ty);
    t = SEL_D(t > 0, t, zero);
    t = SEL_D(t < maxc, t, zero + maxc);
    vec_l hit = __builtin_convertvector(r >= 0, vec_l);
    t = SEL_D(hit, t, zero + maxc);
    memcpy(out + i, &t, sizeof t);
  }
  for (; i < n; i++) {
    if (res[i] >= 0) {
      const double ix = dx[i] != 0 ? 1.0 / dx[i] : 0;
      const double iy = dy[i] != 0 ? 1.0 / dy[i] : 0;
      double e = cell_entry(pox, poy, ix, iy, dx[i], dy[i], hx[i], res[i]);
      out[i] = e < maxc ? e : maxc;
    } else {
      out[i] = maxc;
    }
  }
}

/* n <= CAST_CHUNK rays (see pa_sim_cast_fn): the float pass first where its
 * bounds hold, then the rest exactly in double. */
VEC_TARGET static void VEC_FN(cast)(const pa_sim_model *m, double pox,
                                    double poy, const double *dx,
                                    const double *dy, uint32_t n, double maxc,
                                    double *out) {
  enum { N = CAST_CHUNK };
  double cdx[N], cdy[N], jx[N], jy[N], t0[N], id[N];
  int32_t res[N], hx[N];
  float rt[N];
  const double W = m->march_w, H = (double)m->grid.height + 2;
  const bool fpass =
      W <= FLOAT_PASS_MAX && H <= FLOAT_PASS_MAX && maxc <= FLOAT_PASS_MAX;
  if (fpass) {
    VEC_FN(trace_f)(m, pox, poy, dx, dy, n, maxc, res, hx, rt);
  } else {
    for (uint32_t i = 0; i < n; i++) {
      res[i] = VRAY_DOUBLE;
      rt[i] = 0;
    }
  }
  VEC_FN(entries)(pox, poy, dx, dy, res, hx, n, maxc, out);
  uint32_t c = 0; /* the rest, exactly in double from where they are */
  for (uint32_t i = 0; i < n; i++) {
    if (res[i] != VRAY_DOUBLE)
      continue;
    cdx[c] = dx[i];
    cdy[c] = dy[i];
    jx[c] = dx[i] != 0 ? 1.0 / dx[i] : 1e300;
    jy[c] = dy[i] != 0 ? 1.0 / dy[i] : 1e300;
    t0[c] = rt[i];
    id[c++] = (double)i;
  }
  if (c <= VEC_SCALAR_MAX) { /* a few: lanes would wait, the scalar won't */
    for (uint32_t k = 0; k < c; k++)
      out[(uint32_t)id[k]] = pa_sim_int_cast_from(m, pox - 1.0, poy - 1.0,
                                                  cdx[k], cdy[k], maxc, t0[k]);
    return;
  }
  VEC_FN(src) q = {cdx, cdy, jx, jy, t0, id, 0, c, 0, 0, 0};
  VEC_FN(cells)(m, pox, poy, &q, maxc, out);
}
