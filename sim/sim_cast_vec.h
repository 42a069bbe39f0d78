/* sim_cast_vec.h - the exact vector caster written once with GCC/Clang vector
 * extensions (32-byte vectors: 8 float or 4 double lanes), included by
 * sim_cast_avx2.c (compiled for AVX2 + FMA) and sim_cast_portable.c (the
 * compiler's baseline: SSE2 on x86-64, NEON on AArch64). It mirrors the
 * AVX-512 caster (sim_cast_avx512.c):
 * - a single-precision pass jumps every ray through open space by its cell's
 *   safe step while that is >= 1 cell; the float error of the point stays
 *   inside the field's slack, so the ray is free up to the parameter reached
 *   (the AVX-512 caster's jump_f32, the same operations);
 * - from there, waves of 4 double lanes either jump (landing in the plain
 *   traversal's state by exact comparisons) or take one exact crossing with
 *   the plain traversal's operations (IEEE subtraction and product), and a
 *   lane that stops writes the hit cell's entry with cell_entry's operations.
 * No hit is decided in single precision, so every range equals the plain
 * traversal's bit for bit whatever the lanes.
 *
 * The includer defines VEC_TARGET (a function attribute, may be empty) and
 * VEC_FN(name) (the file's names), and may give faster forms of
 * VEC_GATHER_F(F, idx) (int32 lanes of bytes F[idx]), VEC_GATHER_D(F, idx)
 * (double lanes of bytes F[(int)idx]), VEC_FMA_F(a, b, c) (a * b + c, fused
 * or not), VEC_TRUNC_D(x) (x >= 0 rounded toward zero) and VEC_BITS_D(m)
 * (lane mask -> bits). */
#include "sim_geom_int.h"

#include <math.h>
#include <string.h>

typedef float vec_f __attribute__((vector_size(32)));
typedef int32_t vec_i __attribute__((vector_size(32)));
typedef double vec_d __attribute__((vector_size(32)));
typedef int64_t vec_l __attribute__((vector_size(32)));
#define VEC_FL 8 /* float lanes */
#define VEC_DL 4 /* double lanes */

#ifndef VEC_WAVES
#define VEC_WAVES 4 /* independent dependency chains in flight */
#endif
#define VEC_GROUPS 6        /* float jump groups in lockstep */
#define VEC_FAR_K (1.0f / 1048576.0f) /* 2^-20: a float range's error */

/* The portable forms of the includer's hooks (an ISA file may give its
 * own): lane loads, a product and a sum, trunc by the 2^52 trick (exact
 * for 0 <= x < 2^51), and the lane mask bit by bit. */
#ifndef VEC_GATHER_F
static inline vec_i VEC_FN(gather_f)(const uint8_t *F, vec_i idx) {
  vec_i v;
  for (int l = 0; l < VEC_FL; l++)
    v[l] = F[idx[l]];
  return v;
}
#define VEC_GATHER_F(F, idx) VEC_FN(gather_f)(F, idx)
#endif
#ifndef VEC_GATHER_D
static inline vec_d VEC_FN(gather_d)(const uint8_t *F, vec_d idx) {
  vec_d v;
  for (int l = 0; l < VEC_DL; l++)
    v[l] = F[(int64_t)idx[l]];
  return v;
}
#define VEC_GATHER_D(F, idx) VEC_FN(gather_d)(F, idx)
#endif
#ifndef VEC_FMA_F
#define VEC_FMA_F(a, b, c) ((a) * (b) + (c))
#endif
#ifndef VEC_TRUNC_D
static inline vec_d VEC_FN(trunc_d)(vec_d x) {
  const vec_d big = (vec_d){0} + 4503599627370496.0; /* 2^52 */
  vec_d r = (x + big) - big; /* x rounded to nearest */
  return r - (vec_d)((vec_l)((vec_d){0} + 1.0) & (r > x));
}
#define VEC_TRUNC_D(x) VEC_FN(trunc_d)(x)
#endif
#ifndef VEC_BITS_D
static inline unsigned VEC_FN(bits_d)(vec_l m) {
  unsigned b = 0;
  for (int l = 0; l < VEC_DL; l++)
    b |= (m[l] != 0) << l;
  return b;
}
#define VEC_BITS_D(m) VEC_FN(bits_d)(m)
#endif

/* m ? a : b, lane by lane (m: 0 or all ones). */
#define SEL_D(m, a, b) ((vec_d)(((vec_l)(a) & (m)) | ((vec_l)(b) & ~(m))))
#define SEL_F(m, a, b) ((vec_f)(((vec_i)(a) & (m)) | ((vec_i)(b) & ~(m))))

/* Jumps rays [0, n) from t[i] (updated) through open space. */
VEC_TARGET static void VEC_FN(jump)(const uint8_t *F, uint32_t W, float ox,
                                    float oy, const float *dxs,
                                    const float *dys, float *ts, uint32_t n,
                                    float maxc) {
  const vec_f vox = {ox, ox, ox, ox, ox, ox, ox, ox};
  const vec_f voy = {oy, oy, oy, oy, oy, oy, oy, oy};
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
      bool more = false;
      for (int l = 0; l < VEC_FL; l++)
        more |= any[l] != 0;
      if (!more)
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
  vec_d dx, dy, jx, jy, fsx, fsy, bxo, byo, t, bx, by, idx;
  vec_l live;
  unsigned bits;          /* live lanes */
  uint32_t id[VEC_DL];    /* each lane's ray */
} VEC_FN(wave);

typedef struct VEC_FN(src) {
  const double *dx, *dy, *jx, *jy, *t0; /* rays waiting, in order */
  const uint32_t *id;
  uint32_t next, n;
  double c0x, c0y, idx0;                /* the origin's cell */
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
  if (w->bits == full || q->next >= q->n)
    return;
  vec_l fm = {0};
  for (int l = 0; l < VEC_DL && q->next < q->n; l++) {
    if (w->bits >> l & 1)
      continue;
    uint32_t i = q->next++;
    w->dx[l] = q->dx[i];
    w->dy[l] = q->dy[i];
    w->jx[l] = q->jx[i];
    w->jy[l] = q->jy[i];
    w->t[l] = q->t0[i];
    w->id[l] = q->id[i];
    fm[l] = -1;
    w->bits |= 1u << l;
  }
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
        out[w->id[l]] = e[l];
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

/* n <= CAST_CHUNK rays (see pa_sim_cast_fn). */
VEC_TARGET static void VEC_FN(cast)(const pa_sim_model *m, double pox,
                                    double poy, const double *dx,
                                    const double *dy, uint32_t n, double maxc,
                                    double *out) {
  enum { N = CAST_CHUNK };
  double cdx[N], cdy[N], jx[N], jy[N], t0[N];
  uint32_t id[N];
  float ft[N];
  const double W = m->march_w, H = (double)m->grid.height + 2;
  const bool fpass =
      W <= FLOAT_PASS_MAX && H <= FLOAT_PASS_MAX && maxc <= FLOAT_PASS_MAX;
  if (fpass) {
    float fdx[N], fdy[N];
    for (uint32_t i = 0; i < n; i++) {
      fdx[i] = (float)dx[i];
      fdy[i] = (float)dy[i];
      ft[i] = 0;
    }
    const float fmax = (float)maxc;
    VEC_FN(jump)(m->march, m->march_w, (float)pox, (float)poy, fdx, fdy, ft,
                 n, fmax);
    const float far = fmax * (1.0f + VEC_FAR_K);
    for (uint32_t i = 0; i < n; i++)
      if (ft[i] >= far) /* free past range_max: no return */
        out[i] = maxc;
  }
  uint32_t c = 0; /* the rest, exactly in double from where they are */
  for (uint32_t i = 0; i < n; i++) {
    if (fpass && ft[i] >= (float)maxc * (1.0f + VEC_FAR_K))
      continue;
    cdx[c] = dx[i];
    cdy[c] = dy[i];
    jx[c] = dx[i] != 0 ? 1.0 / dx[i] : 1e300;
    jy[c] = dy[i] != 0 ? 1.0 / dy[i] : 1e300;
    t0[c] = fpass ? (double)ft[i] : 0;
    id[c++] = i;
  }
  VEC_FN(src) q = {cdx, cdy, jx, jy, t0, id, 0, c, 0, 0, 0};
  VEC_FN(cells)(m, pox, poy, &q, maxc, out);
}
