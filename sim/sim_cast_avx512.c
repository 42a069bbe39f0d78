/* sim_cast_avx512.c - the exact vector caster with AVX-512: a
 * single-precision pass with certified decisions, then 8 double lanes per
 * wave. Compiled for any x86-64 (the functions carry their own target); the
 * dispatcher (sim_cast.c) calls it only on a CPU that has AVX-512. */
#define _GNU_SOURCE
#include "sim_geom_int.h"

#include <math.h>
#include <string.h>

/* ---- the same with AVX-512, 24 rays in flight ----------------------------
 * A single-precision pass (jump_f32) first takes every ray through open
 * space; then CAST_WAVES waves of 8 lanes (one ray each) advance together
 * from there. Each iteration
 * a lane either jumps by its cell's safe step (landing in the plain
 * traversal's state, as in cast_one) or takes one exact crossing computed as
 * in cast_plain_cells (IEEE division, subtraction and product: the same bits
 * as the scalar code), whichever goes further. A lane stops on a blocked cell
 * or past maxc, writes the hit cell's entry (cell_entry's operations, in
 * vectors) and takes the next ray, so results equal the plain traversal bit
 * for bit on any machine. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(PA_SIM_NO_SIMD)
#include <immintrin.h>
#ifndef CAST_WAVES
#define CAST_WAVES 3 /* independent dependency chains in flight */
#endif
#define AVX512_TARGET __attribute__((target("avx512f,avx512dq,avx512vl")))

/* The lowest `left` set bits of free (all of them when there are fewer):
 * the free lanes that take the last rays. */
static inline unsigned first_lanes(unsigned free, uint32_t left) {
  if ((uint32_t)__builtin_popcount(free) <= left)
    return free;
  unsigned keep = 0;
  for (uint32_t got = 0; free && got < left; got++) {
    keep |= free & -free;
    free &= free - 1;
  }
  return keep;
}

typedef struct wave8 {
  __m512d dx, dy, jx, jy, fsx, fsy, bxo, byo, t, bx, by, idx, id;
  __mmask8 live;
} wave8;

typedef struct wave_src {
  const double *dx, *dy, *jx, *jy, *id; /* rays waiting, in order */
  const double *t0;                     /* where each starts (free up to it) */
  uint32_t next, n;
  double c0x, c0y, idx0; /* the origin's cell */
} wave_src;

/* The plain traversal's state after all its crossings up to tj (see
 * cast_one): next boundaries and cell index. The fused product only guesses
 * the point; the comparisons make the boundaries exact. An axis never
 * crossed has jx = 1e300 and never moves. */
AVX512_TARGET static inline void wave_land(const wave8 *w, __m512d tj,
                                           __m512d ox, __m512d oy, __m512d Wd,
                                           __m512d *bx, __m512d *by,
                                           __m512d *idx) {
  __m512d px = _mm512_fmadd_pd(tj, w->dx, ox);
  __m512d py = _mm512_fmadd_pd(tj, w->dy, oy);
  __m512d bxj = _mm512_add_pd(
      _mm512_roundscale_pd(px, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC), w->bxo);
  __m512d byj = _mm512_add_pd(
      _mm512_roundscale_pd(py, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC), w->byo);
  __mmask8 ax = _mm512_cmp_pd_mask(_mm512_mul_pd(_mm512_sub_pd(bxj, ox), w->jx),
                                   tj, _CMP_LE_OQ);
  __mmask8 rx = _mm512_mask_cmp_pd_mask(
      (__mmask8)~ax,
      _mm512_mul_pd(_mm512_sub_pd(_mm512_sub_pd(bxj, w->fsx), ox), w->jx), tj,
      _CMP_GT_OQ);
  bxj = _mm512_mask_sub_pd(_mm512_mask_add_pd(bxj, ax, bxj, w->fsx), rx, bxj,
                           w->fsx);
  __mmask8 ay = _mm512_cmp_pd_mask(_mm512_mul_pd(_mm512_sub_pd(byj, oy), w->jy),
                                   tj, _CMP_LE_OQ);
  __mmask8 ry = _mm512_mask_cmp_pd_mask(
      (__mmask8)~ay,
      _mm512_mul_pd(_mm512_sub_pd(_mm512_sub_pd(byj, w->fsy), oy), w->jy), tj,
      _CMP_GT_OQ);
  byj = _mm512_mask_sub_pd(_mm512_mask_add_pd(byj, ay, byj, w->fsy), ry, byj,
                           w->fsy);
  *bx = bxj;
  *by = byj;
  *idx = _mm512_fmadd_pd(_mm512_sub_pd(byj, w->byo), Wd,
                         _mm512_sub_pd(bxj, w->bxo));
}

/* Starts the next rays in the lanes that are free (expand loads keep the
 * order); the rest of the lanes keep running. */
AVX512_TARGET static inline void wave_fill(wave8 *w, wave_src *q, __m512d ox,
                                           __m512d oy, __m512d Wd) {
  __mmask8 fr = (__mmask8)~w->live;
  uint32_t left = q->n - q->next;
  if (!left || !fr)
    return;
  fr = (__mmask8)first_lanes(fr, left);
  const __m512d zero = _mm512_setzero_pd(), one = _mm512_set1_pd(1.0);
  const uint32_t at = q->next;
  w->dx = _mm512_mask_expandloadu_pd(w->dx, fr, q->dx + at);
  w->dy = _mm512_mask_expandloadu_pd(w->dy, fr, q->dy + at);
  w->jx = _mm512_mask_expandloadu_pd(w->jx, fr, q->jx + at);
  w->jy = _mm512_mask_expandloadu_pd(w->jy, fr, q->jy + at);
  w->id = _mm512_mask_expandloadu_pd(w->id, fr, q->id + at);
  q->next += (uint32_t)__builtin_popcount(fr);
  __mmask8 nx = _mm512_cmp_pd_mask(w->dx, zero, _CMP_LT_OQ);
  __mmask8 ny = _mm512_cmp_pd_mask(w->dy, zero, _CMP_LT_OQ);
  w->fsx = _mm512_mask_mov_pd(
      w->fsx, fr, _mm512_mask_blend_pd(nx, one, _mm512_set1_pd(-1.0)));
  w->fsy = _mm512_mask_mov_pd(
      w->fsy, fr, _mm512_mask_blend_pd(ny, one, _mm512_set1_pd(-1.0)));
  w->bxo = _mm512_mask_mov_pd(w->bxo, fr, _mm512_mask_blend_pd(nx, one, zero));
  w->byo = _mm512_mask_mov_pd(w->byo, fr, _mm512_mask_blend_pd(ny, one, zero));
  w->t = _mm512_mask_expandloadu_pd(w->t, fr, q->t0 + at);
  w->bx = _mm512_mask_mov_pd(w->bx, fr,
                             _mm512_add_pd(_mm512_set1_pd(q->c0x), w->bxo));
  w->by = _mm512_mask_mov_pd(w->by, fr,
                             _mm512_add_pd(_mm512_set1_pd(q->c0y), w->byo));
  w->idx = _mm512_mask_mov_pd(w->idx, fr, _mm512_set1_pd(q->idx0));
  /* Rays the float pass moved on start where it left them. */
  __mmask8 moved = _mm512_mask_cmp_pd_mask(fr, w->t, zero, _CMP_GT_OQ);
  if (moved) {
    __m512d bx, by, idx;
    wave_land(w, w->t, ox, oy, Wd, &bx, &by, &idx);
    w->bx = _mm512_mask_mov_pd(w->bx, moved, bx);
    w->by = _mm512_mask_mov_pd(w->by, moved, by);
    w->idx = _mm512_mask_mov_pd(w->idx, moved, idx);
  }
  w->live |= fr;
}

/* One iteration of every live lane; finished lanes write their range
 * [cells] (maxc = no return) to out[id]. */
AVX512_TARGET static inline void wave_step(wave8 *w, const uint8_t *F,
                                           __m512d ox, __m512d oy, __m512d Wd,
                                           __m512d maxc, double *out) {
  const __m512d zero = _mm512_setzero_pd();
  __m256i vi = _mm512_cvttpd_epi32(w->idx);
  __m256i g = _mm256_i32gather_epi32((const int *)(const void *)F, vi, 1);
  __m512d v = _mm512_cvtepi32_pd(_mm256_and_si256(g, _mm256_set1_epi32(0xff)));
  __mmask8 hit = _mm512_mask_cmp_pd_mask(w->live, v, zero, _CMP_EQ_OQ);
  /* the decode of the field's code: max((v - 1) / 4, v - 97) cells */
  __m512d safe = _mm512_max_pd(
      _mm512_fmadd_pd(v, _mm512_set1_pd(0.25), _mm512_set1_pd(-0.25)),
      _mm512_sub_pd(v, _mm512_set1_pd(97.0)));
  __m512d tx = _mm512_mul_pd(_mm512_sub_pd(w->bx, ox), w->jx);
  __m512d ty = _mm512_mul_pd(_mm512_sub_pd(w->by, oy), w->jy);
  __mmask8 xs = _mm512_cmp_pd_mask(tx, ty, _CMP_LT_OQ);
  __m512d te = _mm512_mask_blend_pd(xs, ty, tx);
  __m512d tj = _mm512_add_pd(w->t, safe);
  /* safe > 0: a jump always makes progress (a landing on a boundary can put
   * the next crossing behind t) */
  __mmask8 j = _mm512_mask_cmp_pd_mask(
      _mm512_cmp_pd_mask(safe, zero, _CMP_GT_OQ), tj, te, _CMP_GT_OQ);
  __m512d bxj, byj, lidx;
  wave_land(w, tj, ox, oy, Wd, &bxj, &byj, &lidx);
  __m512d nbx = _mm512_mask_blend_pd(
      j, _mm512_mask_add_pd(w->bx, xs, w->bx, w->fsx), bxj);
  __m512d nby = _mm512_mask_blend_pd(
      j, _mm512_mask_add_pd(w->by, (__mmask8)~xs, w->by, w->fsy), byj);
  __m512d estep = _mm512_mask_blend_pd(xs, _mm512_mul_pd(w->fsy, Wd), w->fsx);
  __m512d nidx = _mm512_mask_blend_pd(j, _mm512_add_pd(w->idx, estep), lidx);
  __m512d nt = _mm512_mask_blend_pd(j, te, tj);
  __mmask8 upd = w->live & (__mmask8)~hit;
  w->t = _mm512_mask_mov_pd(w->t, upd, nt);
  w->bx = _mm512_mask_mov_pd(w->bx, upd, nbx);
  w->by = _mm512_mask_mov_pd(w->by, upd, nby);
  w->idx = _mm512_mask_mov_pd(w->idx, upd, nidx);
  __mmask8 ov = _mm512_mask_cmp_pd_mask(upd, nt, maxc, _CMP_GE_OQ);
  __mmask8 fin = hit | ov;
  if (fin) {
    /* cell_entry of the hit cell, the same operations: the entry boundary
     * of an axis is bx - fsx (an integer), an axis never crossed is -inf */
    const __m512d ninf = _mm512_set1_pd(-INFINITY);
    __mmask8 zx = _mm512_cmp_pd_mask(w->dx, zero, _CMP_NEQ_OQ);
    __mmask8 zy = _mm512_cmp_pd_mask(w->dy, zero, _CMP_NEQ_OQ);
    __m512d ex = _mm512_mask_mul_pd(
        ninf, zx, _mm512_sub_pd(_mm512_sub_pd(w->bx, w->fsx), ox), w->jx);
    __m512d ey = _mm512_mask_mul_pd(
        ninf, zy, _mm512_sub_pd(_mm512_sub_pd(w->by, w->fsy), oy), w->jy);
    __m512d e =
        _mm512_mask_blend_pd(_mm512_cmp_pd_mask(ex, ey, _CMP_GT_OQ), ey, ex);
    e = _mm512_mask_blend_pd(_mm512_cmp_pd_mask(e, zero, _CMP_GT_OQ), zero, e);
    e = _mm512_mask_blend_pd(_mm512_cmp_pd_mask(e, maxc, _CMP_LT_OQ), maxc, e);
    e = _mm512_mask_mov_pd(e, ov, maxc);
    _mm512_mask_i64scatter_pd(out, fin, _mm512_cvttpd_epi64(w->id), e, 8);
  }
  w->live &= (__mmask8)~fin;
}

AVX512_TARGET static void
cast_cells_avx512(const pa_sim_model *m, double ox, double oy,
                  const double *dxs, const double *dys, const double *jxs,
                  const double *jys, const double *ids, const double *t0s,
                  uint32_t n, double maxc, double *out) {
  wave_src q = {dxs, dys, jxs, jys, ids, t0s, 0, n, floor(ox), floor(oy), 0};
  q.idx0 = q.c0y * (double)m->march_w + q.c0x;
  const __m512d vox = _mm512_set1_pd(ox), voy = _mm512_set1_pd(oy);
  const __m512d Wd = _mm512_set1_pd((double)m->march_w);
  const __m512d vmax = _mm512_set1_pd(maxc);
  wave8 w[CAST_WAVES];
  memset(w, 0, sizeof w); /* no lane live; fill sets them up */
  for (int k = 0; k < CAST_WAVES; k++)
    w[k].idx = _mm512_set1_pd(q.idx0);
  for (;;) {
    __mmask8 any = 0;
#pragma GCC unroll 8
    for (int k = 0; k < CAST_WAVES; k++) {
      wave_fill(&w[k], &q, vox, voy, Wd);
      any |= w[k].live;
    }
    if (!any)
      break;
#pragma GCC unroll 8
    for (int k = 0; k < CAST_WAVES; k++)
      wave_step(&w[k], m->march, vox, voy, Wd, vmax, out);
  }
}

/* ---- the ray in single precision, with certified decisions ---------------
 * Three kernels, 16 float lanes each, take each ray as far as single
 * precision can be trusted:
 * - jump_f32: jumps by the safe step of the cell under the point while it
 *   is >= 1 cell (lockstep groups: short, even work). The float error of the
 *   point (< 0.003 cells with coordinates and ranges below FLOAT_PASS_MAX
 *   cells) stays inside the field's 0.02-cell slack, so everything up to the
 *   parameter reached is free.
 * - land_f32: the cell under the point where the jumps stopped, unless the
 *   point is within its error bound of a cell edge (a close call).
 * - walk_f32: crossings cell by cell from there, as the plain traversal
 *   takes them, until a blocked cell (the hit), range_max, or open space
 *   again (safe step >= 2 cells: back to jump_f32). A crossing is taken
 *   only when tx and ty are farther apart than their error bounds (and its
 *   parameter clear of range_max), so it is the choice the double traversal
 *   makes.
 * A close call hands the ray to the double pass from a parameter known to be
 * free. A hit's range is the hit cell's entry computed in double exactly as
 * cell_entry, so every result equals the plain traversal bit for bit. */
#define JUMP_GROUPS 6
#define WALK_K (1.0f / 1048576.0f) /* 2^-20: a crossing's error bound */
#define LAND_K (1.0f / 2097152.0f) /* 2^-21: a point's */
#define WALK_OPEN 9                /* codes >= this: back to jumping */
#define WALK_OPEN_ERR 0.004f       /* when t is known this well */
#define WALK_WAVES 2
enum { RAY_NONE = -1, RAY_DOUBLE = -2, RAY_JUMP = -3 }; /* else: hit cell */

/* Jumps rays [0, n) from t[i]; t[i] is updated. */
AVX512_TARGET static void jump_f32(const uint8_t *F, uint32_t W, float ox,
                                   float oy, const float *dxs, const float *dys,
                                   float *ts, uint32_t n, float maxc) {
  const __m512 vox = _mm512_set1_ps(ox), voy = _mm512_set1_ps(oy);
  const __m512 vmax = _mm512_set1_ps(maxc);
  const __m512i vW = _mm512_set1_epi32((int)W), ff = _mm512_set1_epi32(0xff);
  const __m512i jump = _mm512_set1_epi32(JUMP_CODE);
  for (uint32_t b = 0; b < n; b += 16 * JUMP_GROUPS) {
    __m512 dx[JUMP_GROUPS], dy[JUMP_GROUPS], t[JUMP_GROUPS];
    __mmask16 live[JUMP_GROUPS], lm[JUMP_GROUPS];
    for (int g = 0; g < JUMP_GROUPS; g++) {
      uint32_t at = b + 16 * (uint32_t)g;
      uint32_t k = at >= n ? 0 : n - at >= 16 ? 16 : n - at;
      lm[g] = live[g] = (__mmask16)((1u << k) - 1);
      dx[g] = _mm512_maskz_loadu_ps(lm[g], dxs + (at < n ? at : 0));
      dy[g] = _mm512_maskz_loadu_ps(lm[g], dys + (at < n ? at : 0));
      t[g] = _mm512_maskz_loadu_ps(lm[g], ts + (at < n ? at : 0));
    }
    for (;;) {
      __mmask16 any = 0;
#pragma GCC unroll 8
      for (int g = 0; g < JUMP_GROUPS; g++) {
        __m512 px = _mm512_fmadd_ps(t[g], dx[g], vox);
        __m512 py = _mm512_fmadd_ps(t[g], dy[g], voy);
        __m512i idx =
            _mm512_add_epi32(_mm512_mullo_epi32(_mm512_cvttps_epi32(py), vW),
                             _mm512_cvttps_epi32(px));
        __m512i v = _mm512_and_si512(
            _mm512_mask_i32gather_epi32(_mm512_setzero_si512(), live[g], idx,
                                        (const void *)F, 1),
            ff);
        __mmask16 go =
            _mm512_mask_cmp_epi32_mask(live[g], v, jump, _MM_CMPINT_NLT);
        go = _mm512_mask_cmp_ps_mask(go, t[g], vmax, _CMP_LT_OQ);
        __m512 fv = _mm512_cvtepi32_ps(v);
        __m512 safe = _mm512_max_ps(
            _mm512_fmadd_ps(fv, _mm512_set1_ps(0.25f), _mm512_set1_ps(-0.25f)),
            _mm512_sub_ps(fv, _mm512_set1_ps(97.0f)));
        t[g] = _mm512_mask_add_ps(t[g], go, t[g], safe);
        live[g] = go;
        any |= go;
      }
      if (!any)
        break;
    }
    for (int g = 0; g < JUMP_GROUPS; g++) {
      uint32_t at = b + 16 * (uint32_t)g;
      if (at < n)
        _mm512_mask_storeu_ps(ts + at, lm[g], t[g]);
    }
  }
}

/* The cell under each ray's point at t[i] into cx, cy; close calls (and
 * points past range_max) get res[id] set and ok[i] = 0. */
AVX512_TARGET static void land_f32(float ox, float oy, const float *dxs,
                                   const float *dys, const float *ts,
                                   const int32_t *ids, uint32_t n, float maxc,
                                   int32_t c0x, int32_t c0y, int32_t *cx,
                                   int32_t *cy, int32_t *ok, int32_t *res,
                                   float *rt) {
  const __m512 vox = _mm512_set1_ps(ox), voy = _mm512_set1_ps(oy);
  const __m512 aox = _mm512_set1_ps(fabsf(ox)), aoy = _mm512_set1_ps(fabsf(oy));
  const __m512 K = _mm512_set1_ps(LAND_K), one = _mm512_set1_ps(1.0f);
  const __m512 absmask = _mm512_castsi512_ps(_mm512_set1_epi32(0x7fffffff));
  const __m512 zero = _mm512_setzero_ps();
  const __m512 vfar = _mm512_set1_ps(maxc * (1.0f + WALK_K));
  for (uint32_t i = 0; i < n; i += 16) {
    __mmask16 lm = (__mmask16)(n - i >= 16 ? 0xffff : (1u << (n - i)) - 1);
    __m512 dx = _mm512_maskz_loadu_ps(lm, dxs + i);
    __m512 dy = _mm512_maskz_loadu_ps(lm, dys + i);
    __m512 t = _mm512_maskz_loadu_ps(lm, ts + i);
    __m512i id = _mm512_maskz_loadu_epi32(lm, ids + i);
    __m512 px = _mm512_fmadd_ps(t, dx, vox), py = _mm512_fmadd_ps(t, dy, voy);
    __m512 at = _mm512_and_ps(t, absmask);
    __m512 ex = _mm512_mul_ps(_mm512_add_ps(aox, _mm512_add_ps(at, at)), K);
    __m512 ey = _mm512_mul_ps(_mm512_add_ps(aoy, _mm512_add_ps(at, at)), K);
    __m512 fx =
        _mm512_sub_ps(px, _mm512_roundscale_ps(px, _MM_FROUND_TO_NEG_INF |
                                                       _MM_FROUND_NO_EXC));
    __m512 fy =
        _mm512_sub_ps(py, _mm512_roundscale_ps(py, _MM_FROUND_TO_NEG_INF |
                                                       _MM_FROUND_NO_EXC));
    __mmask16 origin = _mm512_mask_cmp_ps_mask(lm, t, zero, _CMP_EQ_OQ);
    __mmask16 close =
        _mm512_mask_cmp_ps_mask(lm, fx, ex, _CMP_LE_OQ) |
        _mm512_mask_cmp_ps_mask(lm, _mm512_sub_ps(one, fx), ex, _CMP_LE_OQ) |
        _mm512_mask_cmp_ps_mask(lm, fy, ey, _CMP_LE_OQ) |
        _mm512_mask_cmp_ps_mask(lm, _mm512_sub_ps(one, fy), ey, _CMP_LE_OQ);
    close = (__mmask16)(close & ~origin);
    __mmask16 far = _mm512_mask_cmp_ps_mask(lm, t, vfar, _CMP_GE_OQ);
    close = (__mmask16)(close & ~far);
    __m512i vcx = _mm512_mask_mov_epi32(_mm512_cvttps_epi32(px), origin,
                                        _mm512_set1_epi32(c0x));
    __m512i vcy = _mm512_mask_mov_epi32(_mm512_cvttps_epi32(py), origin,
                                        _mm512_set1_epi32(c0y));
    _mm512_mask_storeu_epi32(cx + i, lm, vcx);
    _mm512_mask_storeu_epi32(cy + i, lm, vcy);
    __mmask16 bad = (__mmask16)(close | far);
    _mm512_mask_storeu_epi32(ok + i, lm,
                             _mm512_mask_mov_epi32(_mm512_set1_epi32(1), bad,
                                                   _mm512_setzero_si512()));
    _mm512_mask_i32scatter_epi32(res, far, id, _mm512_set1_epi32(RAY_NONE), 4);
    _mm512_mask_i32scatter_epi32(res, close, id, _mm512_set1_epi32(RAY_DOUBLE),
                                 4);
    _mm512_mask_i32scatter_ps(rt, close, id, t, 4);
  }
}

typedef struct walk16 {
  __m512 dx, dy, ix, iy, bxo, byo, t, tl, te;
  __m512i cx, cy, sx, sy, id;
  __mmask16 live, zx, zy;
} walk16;

typedef struct walk_src {
  const float *dx, *dy, *t;
  const int32_t *cx, *cy, *id;
  uint32_t next, n;
} walk_src;

AVX512_TARGET static inline void walk_fill(walk16 *w, walk_src *q) {
  __mmask16 fr = (__mmask16)~w->live;
  uint32_t left = q->n - q->next;
  if (!left || !fr)
    return;
  fr = (__mmask16)first_lanes(fr, left);
  const __m512 zero = _mm512_setzero_ps(), one = _mm512_set1_ps(1.0f);
  const uint32_t at = q->next;
  w->dx = _mm512_mask_expandloadu_ps(w->dx, fr, q->dx + at);
  w->dy = _mm512_mask_expandloadu_ps(w->dy, fr, q->dy + at);
  w->t = _mm512_mask_expandloadu_ps(w->t, fr, q->t + at);
  w->cx = _mm512_mask_expandloadu_epi32(w->cx, fr, q->cx + at);
  w->cy = _mm512_mask_expandloadu_epi32(w->cy, fr, q->cy + at);
  w->id = _mm512_mask_expandloadu_epi32(w->id, fr, q->id + at);
  q->next += (uint32_t)__builtin_popcount(fr);
  __mmask16 nx = _mm512_cmp_ps_mask(w->dx, zero, _CMP_LT_OQ);
  __mmask16 ny = _mm512_cmp_ps_mask(w->dy, zero, _CMP_LT_OQ);
  __mmask16 zx = _mm512_cmp_ps_mask(w->dx, zero, _CMP_EQ_OQ);
  __mmask16 zy = _mm512_cmp_ps_mask(w->dy, zero, _CMP_EQ_OQ);
  w->zx = (__mmask16)((w->zx & ~fr) | (zx & fr));
  w->zy = (__mmask16)((w->zy & ~fr) | (zy & fr));
  w->ix = _mm512_mask_div_ps(w->ix, fr, one, w->dx);
  w->iy = _mm512_mask_div_ps(w->iy, fr, one, w->dy);
  w->sx = _mm512_mask_mov_epi32(
      w->sx, fr,
      _mm512_mask_blend_epi32(nx, _mm512_set1_epi32(1), _mm512_set1_epi32(-1)));
  w->sy = _mm512_mask_mov_epi32(
      w->sy, fr,
      _mm512_mask_blend_epi32(ny, _mm512_set1_epi32(1), _mm512_set1_epi32(-1)));
  w->bxo = _mm512_mask_mov_ps(w->bxo, fr, _mm512_mask_blend_ps(nx, one, zero));
  w->byo = _mm512_mask_mov_ps(w->byo, fr, _mm512_mask_blend_ps(ny, one, zero));
  w->tl = _mm512_mask_mov_ps(w->tl, fr, w->t);
  w->te = _mm512_mask_mov_ps(w->te, fr, zero);
  w->live |= fr;
}

AVX512_TARGET static inline void walk_step(walk16 *w, const uint8_t *F,
                                           __m512i vW, __m512 ox, __m512 oy,
                                           __m512 aox, __m512 aoy, __m512 maxc,
                                           int32_t *res, float *rt) {
  const __m512 K = _mm512_set1_ps(WALK_K);
  const __m512 big = _mm512_set1_ps(3e37f);
  const __m512 absmask = _mm512_castsi512_ps(_mm512_set1_epi32(0x7fffffff));
  __m512i idx = _mm512_add_epi32(_mm512_mullo_epi32(w->cy, vW), w->cx);
  __m512i v = _mm512_and_si512(
      _mm512_mask_i32gather_epi32(_mm512_setzero_si512(), w->live, idx,
                                  (const void *)F, 1),
      _mm512_set1_epi32(0xff));
  __mmask16 live = w->live;
  /* a blocked cell: the hit (this cell's index is the result) */
  __mmask16 hit = _mm512_mask_cmpeq_epi32_mask(live, v, _mm512_setzero_si512());
  /* open space again, with t known well enough: back to jumping */
  __mmask16 open =
      _mm512_mask_cmpge_epi32_mask(live, v, _mm512_set1_epi32(WALK_OPEN));
  open = _mm512_mask_cmp_ps_mask(open, w->te, _mm512_set1_ps(WALK_OPEN_ERR),
                                 _CMP_LT_OQ);
  __mmask16 wk = (__mmask16)(live & ~hit & ~open);
  __m512 bx = _mm512_add_ps(_mm512_cvtepi32_ps(w->cx), w->bxo);
  __m512 by = _mm512_add_ps(_mm512_cvtepi32_ps(w->cy), w->byo);
  __m512 tx = _mm512_mask_mov_ps(_mm512_mul_ps(_mm512_sub_ps(bx, ox), w->ix),
                                 w->zx, big);
  __m512 ty = _mm512_mask_mov_ps(_mm512_mul_ps(_mm512_sub_ps(by, oy), w->iy),
                                 w->zy, big);
  __m512 ex = _mm512_maskz_mul_ps(
      (__mmask16)~w->zx,
      _mm512_fmadd_ps(_mm512_and_ps(w->ix, absmask),
                      _mm512_add_ps(aox, _mm512_and_ps(bx, absmask)),
                      _mm512_and_ps(tx, absmask)),
      K);
  __m512 ey = _mm512_maskz_mul_ps(
      (__mmask16)~w->zy,
      _mm512_fmadd_ps(_mm512_and_ps(w->iy, absmask),
                      _mm512_add_ps(aoy, _mm512_and_ps(by, absmask)),
                      _mm512_and_ps(ty, absmask)),
      K);
  __mmask16 xs = _mm512_cmp_ps_mask(tx, ty, _CMP_LT_OQ);
  __m512 tn = _mm512_mask_blend_ps(xs, ty, tx);
  __m512 te = _mm512_mask_blend_ps(xs, ey, ex);
  __m512 gap = _mm512_and_ps(_mm512_sub_ps(tx, ty), absmask);
  __mmask16 close =
      _mm512_mask_cmp_ps_mask(wk, gap, _mm512_add_ps(ex, ey), _CMP_LE_OQ);
  __m512 dm = _mm512_and_ps(_mm512_sub_ps(tn, maxc), absmask);
  close |=
      _mm512_mask_cmp_ps_mask(wk, dm, _mm512_fmadd_ps(maxc, K, te), _CMP_LE_OQ);
  wk = (__mmask16)(wk & ~close);
  __mmask16 past = _mm512_mask_cmp_ps_mask(wk, tn, maxc, _CMP_GE_OQ);
  wk = (__mmask16)(wk & ~past);
  __mmask16 fin = (__mmask16)(hit | open | close | past);
  if (fin) {
    __m512i r = _mm512_mask_mov_epi32(_mm512_set1_epi32(RAY_NONE), hit, idx);
    r = _mm512_mask_mov_epi32(r, open, _mm512_set1_epi32(RAY_JUMP));
    r = _mm512_mask_mov_epi32(r, close, _mm512_set1_epi32(RAY_DOUBLE));
    _mm512_mask_i32scatter_epi32(res, fin, w->id, r, 4);
    __mmask16 keep_t = (__mmask16)(open | close);
    if (keep_t) /* open: from here; close: from the landing (t has an error) */
      _mm512_mask_i32scatter_ps(rt, keep_t, w->id,
                                _mm512_mask_mov_ps(w->t, close, w->tl), 4);
    w->live = (__mmask16)(w->live & ~fin);
  }
  w->t = _mm512_mask_mov_ps(w->t, wk, tn);
  w->te = _mm512_mask_mov_ps(w->te, wk, te);
  w->cx = _mm512_mask_add_epi32(w->cx, (__mmask16)(wk & xs), w->cx, w->sx);
  w->cy = _mm512_mask_add_epi32(w->cy, (__mmask16)(wk & ~xs), w->cy, w->sy);
}

AVX512_TARGET static void walk_f32(const pa_sim_model *m, float ox, float oy,
                                   walk_src *q, float maxc, int32_t *res,
                                   float *rt) {
  const __m512 vox = _mm512_set1_ps(ox), voy = _mm512_set1_ps(oy);
  const __m512 aox = _mm512_set1_ps(fabsf(ox)), aoy = _mm512_set1_ps(fabsf(oy));
  const __m512 vmax = _mm512_set1_ps(maxc);
  const __m512i vW = _mm512_set1_epi32((int)m->march_w);
  walk16 w[WALK_WAVES];
  memset(w, 0, sizeof w);
  for (;;) {
    __mmask16 any = 0;
#pragma GCC unroll 4
    for (int k = 0; k < WALK_WAVES; k++) {
      walk_fill(&w[k], q);
      any |= w[k].live;
    }
    if (!any)
      break;
#pragma GCC unroll 4
    for (int k = 0; k < WALK_WAVES; k++)
      walk_step(&w[k], m->march, vW, vox, voy, aox, aoy, vmax, res, rt);
  }
}

/* Rays i < n (padded grid, cell units) in single precision as far as it can
 * be trusted: res[i] = the hit cell's index, RAY_NONE (no return) or
 * RAY_DOUBLE (rt[i]: free up to there; the double pass goes on). */
AVX512_TARGET static void trace_f32(const pa_sim_model *m, double ox, double oy,
                                    const double *dxs, const double *dys,
                                    uint32_t n, double maxc, int32_t *res,
                                    float *rt) {
  enum { N = CAST_CHUNK }; /* n <= CAST_CHUNK: cast_many's chunks */
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
        res[id[i]] = RAY_DOUBLE;
        rt[id[i]] = ft[i];
      }
      break;
    }
    jump_f32(m->march, m->march_w, fox, foy, fdx, fdy, ft, a, fmax);
    land_f32(fox, foy, fdx, fdy, ft, id, a, fmax, c0x, c0y, cx, cy, ok, res,
             rt);
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
    walk_src q = {fdx, fdy, ft, cx, cy, id, 0, b};
    walk_f32(m, fox, foy, &q, fmax, res, rt);
    a = 0; /* those that reached open space jump again from there */
    for (uint32_t i = 0; i < b; i++) {
      if (res[id[i]] != RAY_JUMP)
        continue;
      fdx[a] = fdx[i];
      fdy[a] = fdy[i];
      ft[a] = rt[id[i]];
      id[a++] = id[i];
    }
  }
}

/* n <= CAST_CHUNK rays: the float pass first where its bounds hold, then the
 * rest exactly in double. */
AVX512_TARGET static void cast_avx512(const pa_sim_model *m, double pox,
                                      double poy, const double *dx,
                                      const double *dy, uint32_t k, double maxc,
                                      double *out) {
  enum { CHUNK = CAST_CHUNK };
  double jx[CHUNK], jy[CHUNK], ids[CHUNK], t0[CHUNK];
  double cdx[CHUNK], cdy[CHUNK];
  const double W = m->march_w, H = (double)m->grid.height + 2;
  const bool fpass =
      W <= FLOAT_PASS_MAX && H <= FLOAT_PASS_MAX && maxc <= FLOAT_PASS_MAX;
  int32_t res[CHUNK];
  if (fpass) {
    float rt[CHUNK];
    trace_f32(m, pox, poy, dx, dy, k, maxc, res, rt);
    for (uint32_t q = 0; q < k; q++) {
      if (res[q] >= 0) /* the entry of the hit cell, in double */
        out[q] = cell_range(m, pox, poy, dx[q], dy[q], res[q], maxc);
      else if (res[q] == RAY_NONE)
        out[q] = maxc;
      else
        t0[q] = rt[q];
    }
  } else {
    for (uint32_t q = 0; q < k; q++) {
      res[q] = RAY_DOUBLE;
      t0[q] = 0;
    }
  }
  /* The rest go on exactly in double (ids keep their place in out). */
  uint32_t c = 0;
  for (uint32_t q = 0; q < k; q++) {
    if (res[q] != RAY_DOUBLE)
      continue;
    cdx[c] = dx[q]; /* as in the plain traversal */
    cdy[c] = dy[q];
    jx[c] = dx[q] != 0 ? 1.0 / dx[q] : 1e300;
    jy[c] = dy[q] != 0 ? 1.0 / dy[q] : 1e300;
    ids[c] = (double)q;
    t0[c] = t0[q];
    c++;
  }
  cast_cells_avx512(m, pox, poy, cdx, cdy, jx, jy, ids, t0, c, maxc, out);
}

pa_sim_cast_fn pa_sim_int_caster_avx512(void) { return cast_avx512; }
#else
pa_sim_cast_fn pa_sim_int_caster_avx512(void) { return NULL; }
#endif
