/* sim_cast_vec.h - the exact vector caster written once with GCC/Clang vector
 * extensions (VEC_BYTES-wide vectors: 32 = 8 float / 4 double lanes),
 * included by sim_cast_avx2.c (compiled for AVX2 + FMA) and
 * sim_cast_portable.c (16 bytes, the compiler's baseline: SSE2 on x86-64,
 * NEON on AArch64). It mirrors the AVX-512 caster (sim_cast_avx512.c), pass
 * by pass and with the same error bounds:
 * - jump: single precision, every ray jumps by its cell's safe step while
 *   that is >= 1 cell; the float error of the point stays inside the field's
 *   slack, so the ray is free up to the parameter reached;
 * - land and walk: single precision, crossings cell by cell, each taken only
 *   when its decision is certified to be the double traversal's (else a
 *   close call), to a blocked cell (the hit), range_max or open space again;
 * - double: close calls go on in double lanes that either jump (landing in
 *   the plain traversal's state by exact comparisons) or take one exact
 *   crossing with the plain traversal's operations (IEEE subtraction and
 *   product); a lane that stops writes the hit cell's entry with
 *   cell_entry's operations.
 * Every range is the entry of the plain traversal's hit cell, computed in
 * double as cell_entry does: equal to the plain traversal bit for bit.
 *
 * The includer defines VEC_TARGET (a function attribute, may be empty) and
 * VEC_FN(name) (the file's names), and may set VEC_BYTES and give faster
 * forms of the hooks below: VEC_GATHER_F / _D (lanes of field bytes),
 * VEC_FMA_F, VEC_TRUNC_D, VEC_BITS_F / _D (lane mask -> bits) and
 * VEC_EXPAND_F / _I / _D (expand loads). */
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
#define VEC_FL (VEC_BYTES / 4) /* float lanes */
#define VEC_DL (VEC_BYTES / 8) /* double lanes */

#ifndef VEC_WAVES
#define VEC_WAVES 4 /* independent dependency chains in flight */
#endif
#define VEC_GROUPS 6                  /* float jump groups in lockstep */
#define VEC_FAR_K (1.0f / 1048576.0f) /* 2^-20: a float range's error */

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
#ifndef VEC_EXPAND_F
VEC_TARGET static inline vec_f VEC_FN(expand_f)(unsigned fr, const float *src) {
  vec_f v = {0};
  for (int l = 0, k = 0; l < VEC_FL; l++)
    if (fr >> l & 1)
      v[l] = src[k++];
  return v;
}
#define VEC_EXPAND_F(fr, src) VEC_FN(expand_f)(fr, src)
#endif
#ifndef VEC_EXPAND_I
VEC_TARGET static inline vec_i VEC_FN(expand_i)(unsigned fr,
                                                const int32_t *src) {
  vec_i v = {0};
  for (int l = 0, k = 0; l < VEC_FL; l++)
    if (fr >> l & 1)
      v[l] = src[k++];
  return v;
}
#define VEC_EXPAND_I(fr, src) VEC_FN(expand_i)(fr, src)
#endif
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
  if ((uint32_t)__builtin_popcount(fr) <= left)
    return fr;
  unsigned keep = 0;
  for (uint32_t got = 0; fr && got < left; got++) {
    keep |= fr & -fr;
    fr &= fr - 1;
  }
  return keep;
}

/* Lane masks (all ones where bit l of b is set). */
VEC_TARGET static inline vec_i VEC_FN(mask_f)(unsigned b) {
  vec_i lane;
  for (int l = 0; l < VEC_FL; l++)
    lane[l] = 1 << l;
  return (((vec_i){0} + (int32_t)b) & lane) != 0;
}
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

/* Jumps rays [0, n) from t[i] (updated) through open space. */
VEC_TARGET static void VEC_FN(jump)(const uint8_t *F, uint32_t W, float ox,
                                    float oy, const float *dxs,
                                    const float *dys, float *ts, uint32_t n,
                                    float maxc) {
  const vec_f vox = (vec_f){0} + ox, voy = (vec_f){0} + oy;
  const vec_i vW = (vec_i){0} + (int32_t)W;
  for (uint32_t b = 0; b < n; b += VEC_FL * VEC_GROUPS) {
    vec_f dx[VEC_GROUPS], dy[VEC_GROUPS], t[VEC_GROUPS];
    vec_i live[VEC_GROUPS];
    for (int g = 0; g < VEC_GROUPS; g++) {
      uint32_t at = b + VEC_FL * (uint32_t)g;
      dx[g] = dy[g] = t[g] = (vec_f){0};
      live[g] = (vec_i){0};
      /* lanes past n: the origin, never live (their cell is valid) */
      for (uint32_t l = 0; l < VEC_FL && at + l < n; l++) {
        dx[g][l] = dxs[at + l];
        dy[g][l] = dys[at + l];
        t[g][l] = ts[at + l];
        live[g][l] = -1;
      }
    }
    for (;;) {
      vec_i any = {0};
#pragma GCC unroll 8
      for (int g = 0; g < VEC_GROUPS; g++) {
        vec_f px = VEC_FMA_F(t[g], dx[g], vox);
        vec_f py = VEC_FMA_F(t[g], dy[g], voy);
        /* a lane that stopped keeps its point: always a valid cell */
        vec_i idx = __builtin_convertvector(py, vec_i) * vW +
                    __builtin_convertvector(px, vec_i);
        vec_i v = VEC_GATHER_F(F, idx);
        vec_i go = live[g] & (v >= JUMP_CODE) & (t[g] < maxc);
        vec_f fv = __builtin_convertvector(v, vec_f);
        vec_f s1 = fv * 0.25f - 0.25f, s2 = fv - 97.0f;
        vec_f safe = SEL_F(s1 > s2, s1, s2);
        t[g] = SEL_F(go, t[g] + safe, t[g]);
        live[g] = go;
        any |= go;
      }
      if (!VEC_BITS_F(any))
        break;
    }
    for (int g = 0; g < VEC_GROUPS; g++) {
      uint32_t at = b + VEC_FL * (uint32_t)g;
      for (uint32_t l = 0; l < VEC_FL && at + l < n; l++)
        ts[at + l] = t[g][l];
    }
  }
}

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
  q->next += (uint32_t)__builtin_popcount(fr);
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

/* ---- the float walk: crossings cell by cell with certified decisions ----
 * As the AVX-512 caster's land_f32 / walk_f32: from where the jumps
 * stopped, the cell under the point unless it is within its error bound of
 * a cell edge; then crossings taken only when tx and ty are farther apart
 * than their error bounds (and clear of range_max), so each is the choice
 * the double traversal makes; until a blocked cell (the hit: its index),
 * range_max, open space again (back to jumping) or a close call (the double
 * pass goes on from a parameter known to be free). */
#define VEC_LAND_K (1.0f / 2097152.0f) /* 2^-21: a point's error bound */
#define VEC_WALK_OPEN 9                /* codes >= this: back to jumping */
#define VEC_WALK_OPEN_ERR 0.004f       /* when t is known this well */
#define VEC_WALK_WAVES 2
enum { VRAY_NONE = -1, VRAY_DOUBLE = -2, VRAY_JUMP = -3 }; /* else: hit */

/* The cell under each ray's point at t[i] into cx, cy; close calls (and
 * points past range_max) get res[id] set and ok[i] = 0. */
VEC_TARGET static void VEC_FN(land_f)(float ox, float oy, const float *dxs,
                                      const float *dys, const float *ts,
                                      const int32_t *ids, uint32_t n,
                                      float maxc, int32_t c0x, int32_t c0y,
                                      int32_t *cx, int32_t *cy, int32_t *ok,
                                      int32_t *res, float *rt) {
  const float far = maxc * (1.0f + VEC_FAR_K);
  for (uint32_t i = 0; i < n; i++) {
    float t = ts[i];
    ok[i] = 0;
    if (t >= far) {
      res[ids[i]] = VRAY_NONE;
      continue;
    }
    if (t == 0) { /* the origin's cell */
      cx[i] = c0x;
      cy[i] = c0y;
      ok[i] = 1;
      continue;
    }
    float px = t * dxs[i] + ox, py = t * dys[i] + oy;
    float at = fabsf(t);
    float ex = (fabsf(ox) + (at + at)) * VEC_LAND_K;
    float ey = (fabsf(oy) + (at + at)) * VEC_LAND_K;
    float fx = px - floorf(px), fy = py - floorf(py);
    if (fx <= ex || 1.0f - fx <= ex || fy <= ey || 1.0f - fy <= ey) {
      res[ids[i]] = VRAY_DOUBLE;
      rt[ids[i]] = t;
      continue;
    }
    cx[i] = (int32_t)px;
    cy[i] = (int32_t)py;
    ok[i] = 1;
  }
}

typedef struct VEC_FN(walk) {
  vec_f dx, dy, ix, iy, bxo, byo, t, tl, te;
  vec_i cx, cy, sx, sy, zx, zy, live, id;
  unsigned bits;
} VEC_FN(walk);

typedef struct VEC_FN(wsrc) {
  const float *dx, *dy, *t;
  const int32_t *cx, *cy, *id;
  uint32_t next, n;
} VEC_FN(wsrc);

VEC_TARGET static inline void VEC_FN(walk_fill)(VEC_FN(walk) * w,
                                                VEC_FN(wsrc) * q) {
  const unsigned full = (1u << VEC_FL) - 1;
  unsigned fr = ~w->bits & full;
  uint32_t left = q->n - q->next;
  if (!fr || !left)
    return;
  fr = VEC_FN(first_lanes)(fr, left);
  const uint32_t at = q->next;
  q->next += (uint32_t)__builtin_popcount(fr);
  w->bits |= fr;
  const vec_i fm = VEC_FN(mask_f)(fr);
  const vec_f zero = {0}, one = zero + 1.0f;
  const vec_i ione = (vec_i){0} + 1;
  vec_f dx = VEC_EXPAND_F(fr, q->dx + at), dy = VEC_EXPAND_F(fr, q->dy + at);
  vec_f t = VEC_EXPAND_F(fr, q->t + at);
  w->dx = SEL_F(fm, dx, w->dx);
  w->dy = SEL_F(fm, dy, w->dy);
  w->t = SEL_F(fm, t, w->t);
  w->tl = SEL_F(fm, t, w->tl);
  w->te = SEL_F(fm, zero, w->te);
  w->cx = SEL_I(fm, VEC_EXPAND_I(fr, q->cx + at), w->cx);
  w->cy = SEL_I(fm, VEC_EXPAND_I(fr, q->cy + at), w->cy);
  w->id = SEL_I(fm, VEC_EXPAND_I(fr, q->id + at), w->id);
  vec_i zx = dx == 0, zy = dy == 0, nx = dx < 0, ny = dy < 0;
  w->zx = SEL_I(fm, zx, w->zx);
  w->zy = SEL_I(fm, zy, w->zy);
  w->ix = SEL_F(fm, SEL_F(zx, zero, one / dx), w->ix);
  w->iy = SEL_F(fm, SEL_F(zy, zero, one / dy), w->iy);
  w->sx = SEL_I(fm, SEL_I(nx, -ione, ione), w->sx);
  w->sy = SEL_I(fm, SEL_I(ny, -ione, ione), w->sy);
  w->bxo = SEL_F(fm, SEL_F(nx, zero, one), w->bxo);
  w->byo = SEL_F(fm, SEL_F(ny, zero, one), w->byo);
  w->live |= fm;
}

VEC_TARGET static inline vec_f VEC_FN(fabs_f)(vec_f x) {
  return (vec_f)((vec_i)x & 0x7fffffff);
}

VEC_TARGET static inline void VEC_FN(walk_step)(VEC_FN(walk) * w,
                                                const uint8_t *F, vec_i vW,
                                                vec_f ox, vec_f oy, vec_f aox,
                                                vec_f aoy, vec_f maxc,
                                                int32_t *res, float *rt) {
  const vec_f K = (vec_f){0} + VEC_FAR_K, big = (vec_f){0} + 3e37f;
  const vec_f zero = {0};
  vec_i idx = w->cy * vW + w->cx;
  vec_i v = VEC_GATHER_F(F, idx);
  vec_i live = w->live;
  /* a blocked cell: the hit (this cell's index is the result) */
  vec_i hit = live & (v == 0);
  /* open space again, with t known well enough: back to jumping */
  vec_i open = live & (v >= VEC_WALK_OPEN) & (w->te < VEC_WALK_OPEN_ERR);
  vec_i wk = live & ~hit & ~open;
  vec_f bx = __builtin_convertvector(w->cx, vec_f) + w->bxo;
  vec_f by = __builtin_convertvector(w->cy, vec_f) + w->byo;
  vec_f tx = SEL_F(w->zx, big, (bx - ox) * w->ix);
  vec_f ty = SEL_F(w->zy, big, (by - oy) * w->iy);
  vec_f ex = SEL_F(w->zx, zero,
                   VEC_FMA_F(VEC_FN(fabs_f)(w->ix), aox + VEC_FN(fabs_f)(bx),
                             VEC_FN(fabs_f)(tx)) *
                       K);
  vec_f ey = SEL_F(w->zy, zero,
                   VEC_FMA_F(VEC_FN(fabs_f)(w->iy), aoy + VEC_FN(fabs_f)(by),
                             VEC_FN(fabs_f)(ty)) *
                       K);
  vec_i xs = tx < ty;
  vec_f tn = SEL_F(xs, tx, ty);
  vec_f te = SEL_F(xs, ex, ey);
  vec_i close = wk & (VEC_FN(fabs_f)(tx - ty) <= ex + ey);
  close |= wk & (VEC_FN(fabs_f)(tn - maxc) <= VEC_FMA_F(maxc, K, te));
  wk &= ~close;
  vec_i past = wk & (tn >= maxc);
  wk &= ~past;
  vec_i fin = hit | open | close | past;
  unsigned fb = VEC_BITS_F(fin);
  if (fb) {
    /* hit: the cell; open: jump on from here; close: the double pass from
     * the landing (t has an error); past: no return */
    int32_t r[VEC_FL], id[VEC_FL];
    float tr[VEC_FL];
    const vec_i none = (vec_i){0} + VRAY_NONE;
    vec_i rv =
        SEL_I(hit, idx,
              SEL_I(open, none + (VRAY_JUMP - VRAY_NONE),
                    SEL_I(close, none + (VRAY_DOUBLE - VRAY_NONE), none)));
    vec_f tv = SEL_F(close, w->tl, w->t);
    memcpy(r, &rv, sizeof r);
    memcpy(tr, &tv, sizeof tr);
    memcpy(id, &w->id, sizeof id);
    const unsigned keep = VEC_BITS_F(open | close);
    for (unsigned b = fb; b; b &= b - 1) {
      int l = __builtin_ctz(b);
      res[id[l]] = r[l];
      if (keep >> l & 1)
        rt[id[l]] = tr[l];
    }
    w->live &= ~fin;
    w->bits &= ~fb;
  }
  w->t = SEL_F(wk, tn, w->t);
  w->te = SEL_F(wk, te, w->te);
  w->cx += wk & xs & w->sx;
  w->cy += wk & ~xs & w->sy;
}

VEC_TARGET static void VEC_FN(walk_f)(const pa_sim_model *m, float ox, float oy,
                                      VEC_FN(wsrc) * q, float maxc,
                                      int32_t *res, float *rt) {
  const vec_f zero = {0};
  const vec_f vox = zero + ox, voy = zero + oy;
  const vec_f aox = zero + fabsf(ox), aoy = zero + fabsf(oy);
  const vec_f vmax = zero + maxc;
  const vec_i vW = (vec_i){0} + (int32_t)m->march_w;
  VEC_FN(walk) w[VEC_WALK_WAVES];
  memset(w, 0, sizeof w);
  for (;;) {
    unsigned any = 0;
    for (int k = 0; k < VEC_WALK_WAVES; k++) {
      VEC_FN(walk_fill)(&w[k], q);
      any |= w[k].bits;
    }
    if (!any)
      break;
    for (int k = 0; k < VEC_WALK_WAVES; k++)
      VEC_FN(walk_step)(&w[k], m->march, vW, vox, voy, aox, aoy, vmax, res, rt);
  }
}

/* Rays i < n (padded grid, cell units) in single precision as far as it can
 * be trusted: res[i] = the hit cell's index, VRAY_NONE (no return) or
 * VRAY_DOUBLE (rt[i]: free up to there; the double pass goes on). */
VEC_TARGET static void VEC_FN(trace_f)(const pa_sim_model *m, double ox,
                                       double oy, const double *dxs,
                                       const double *dys, uint32_t n,
                                       double maxc, int32_t *res, float *rt) {
  enum { N = CAST_CHUNK };
  float fdx[N], fdy[N], ft[N];
  int32_t cx[N], cy[N], id[N], ok[N];
  const float fox = (float)ox, foy = (float)oy, fmax = (float)maxc;
  const int32_t c0x = (int32_t)ox, c0y = (int32_t)oy;
  uint32_t a = 0; /* the active list: rays still to jump */
  for (uint32_t i = 0; i < n; i++) {
    fdx[a] = (float)dxs[i];
    fdy[a] = (float)dys[i];
    ft[a] = 0;
    id[a++] = (int32_t)i;
  }
  for (int round = 0; a > 0; round++) {
    if (round == 8) { /* grazing many corners: the double pass takes it */
      for (uint32_t i = 0; i < a; i++) {
        res[id[i]] = VRAY_DOUBLE;
        rt[id[i]] = ft[i];
      }
      break;
    }
    VEC_FN(jump)(m->march, m->march_w, fox, foy, fdx, fdy, ft, a, fmax);
    VEC_FN(land_f)
    (fox, foy, fdx, fdy, ft, id, a, fmax, c0x, c0y, cx, cy, ok, res, rt);
    uint32_t b = 0; /* the landed ones walk */
    for (uint32_t i = 0; i < a; i++) {
      if (!ok[i])
        continue;
      fdx[b] = fdx[i];
      fdy[b] = fdy[i];
      ft[b] = ft[i];
      cx[b] = cx[i];
      cy[b] = cy[i];
      id[b++] = id[i];
    }
    VEC_FN(wsrc) q = {fdx, fdy, ft, cx, cy, id, 0, b};
    VEC_FN(walk_f)(m, fox, foy, &q, fmax, res, rt);
    a = 0; /* those that reached open space jump again from there */
    for (uint32_t i = 0; i < b; i++) {
      if (res[id[i]] != VRAY_JUMP)
        continue;
      fdx[a] = fdx[i];
      fdy[a] = fdy[i];
      ft[a] = rt[id[i]];
      id[a++] = id[i];
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
  int32_t res[N];
  float rt[N];
  const double W = m->march_w, H = (double)m->grid.height + 2;
  const bool fpass =
      W <= FLOAT_PASS_MAX && H <= FLOAT_PASS_MAX && maxc <= FLOAT_PASS_MAX;
  if (fpass) {
    VEC_FN(trace_f)(m, pox, poy, dx, dy, n, maxc, res, rt);
  } else {
    for (uint32_t i = 0; i < n; i++) {
      res[i] = VRAY_DOUBLE;
      rt[i] = 0;
    }
  }
  uint32_t c = 0; /* the rest, exactly in double from where they are */
  for (uint32_t i = 0; i < n; i++) {
    if (res[i] >= 0) { /* the entry of the hit cell, in double */
      out[i] = cell_range(m, pox, poy, dx[i], dy[i], res[i], maxc);
      continue;
    }
    if (res[i] == VRAY_NONE) {
      out[i] = maxc;
      continue;
    }
    cdx[c] = dx[i];
    cdy[c] = dy[i];
    jx[c] = dx[i] != 0 ? 1.0 / dx[i] : 1e300;
    jy[c] = dy[i] != 0 ? 1.0 / dy[i] : 1e300;
    t0[c] = rt[i];
    id[c++] = (double)i;
  }
  VEC_FN(src) q = {cdx, cdy, jx, jy, t0, id, 0, c, 0, 0, 0};
  VEC_FN(cells)(m, pox, poy, &q, maxc, out);
}
