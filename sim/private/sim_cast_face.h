/* sim_cast_face.h - the face caster: a fan of rays (a laser scan) against
 * the grid's wall faces (sim_faces.c) instead of cell by cell. Written once
 * with GCC/Clang vector extensions (16 float lanes with 64-byte vectors,
 * else 8), included by the ISA files after sim_cast_vec.h (VEC_TARGET,
 * VEC_FN, VEC_BYTES; FACE_GATHER_I / _F, FACE_PACK and FACE_BITS may give
 * the ISA's gathers, compress and lane masks).
 *
 * A ray from a free cell first enters a blocked cell through a face: the
 * boundary of a free and a blocked cell, met from the free side. So its
 * range is the nearest crossing of the faces it meets, and the faces within
 * its reach are what a scan has to look at (a few hundred in an office,
 * most of them hidden, against ~12 cell steps for each of 360 rays):
 * - faces merged along their grid line into runs cover runs of the fan's
 *   rays in angle order (a pseudo-angle table per half-plane gives them);
 *   each face takes its rays' nearest crossing in float, in windows of
 *   lanes, as a depth buffer;
 * - the faces near the origin go first; a farther face that is farther
 *   than every ray it spans has already met is then dropped unseen;
 * - the plain traversal enters the same face, and its range is then that
 *   face's crossing (X - ox) * (1.0 / dx) in double (cell_entry of the hit
 *   cell), except where a ray passes within eps of a run's end (a corner:
 *   the traversal's tie-breaks decide which cell it enters). Such a ray,
 *   near a corner at or before its nearest face, is cast again by the
 *   scalar caster, as are ties between the two axes' nearest faces. Inside
 *   a run (blocked cells on one side, free on the other) the traversal's
 *   ties change the cell, never the range.
 * eps is far above the float error (every quantity is within the reach lim
 * of the origin: relative errors ~2^-21), so every range is the plain
 * traversal's bit for bit. */

/* lanes of the float passes: 16 with 64-byte vectors (AVX-512), 4 with
 * 16-byte ones (SSE2, NEON: one register; wider vectors there are split
 * lane by lane by the compiler), else 8 */
#if defined(VEC_BYTES) && VEC_BYTES == 64
#define FACE_L 16
#elif defined(VEC_BYTES) && VEC_BYTES == 16
#define FACE_L 4
#else
#define FACE_L 8
#endif
typedef float VEC_FN(v8f) __attribute__((vector_size(4 * FACE_L)));
typedef int32_t VEC_FN(v8i) __attribute__((vector_size(4 * FACE_L)));
typedef uint32_t VEC_FN(v8u) __attribute__((vector_size(4 * FACE_L)));
static const int32_t VEC_FN(face_iota)[16] = {0, 1, 2,  3,  4,  5,  6,  7,
                                              8, 9, 10, 11, 12, 13, 14, 15};
/* the per-ray passes' lanes: doubles, and floats as many */
#define FACE_DL (FACE_L / 2)
#define FACE_ALIGN (FACE_L > 8 ? FACE_L : 8)
typedef float VEC_FN(v4f) __attribute__((vector_size(4 * FACE_DL)));
typedef int32_t VEC_FN(v4i) __attribute__((vector_size(4 * FACE_DL)));
typedef double VEC_FN(v4d) __attribute__((vector_size(8 * FACE_DL)));
typedef int64_t VEC_FN(v4l) __attribute__((vector_size(8 * FACE_DL)));
#define FACE_VF VEC_FN(v8f)
#define FACE_VI VEC_FN(v8i)
#define FACE_VU VEC_FN(v8u)
#define FACE_F4 VEC_FN(v4f)
#define FACE_I4 VEC_FN(v4i)
#define FACE_D4 VEC_FN(v4d)
#define FACE_L4 VEC_FN(v4l)
/* lanes of a where m, else of b (m: all ones or zero) */
#define FACE_SEL(m, a, b)                                                      \
  ((FACE_VF)(((FACE_VI)(a) & (m)) | ((FACE_VI)(b) & ~(m))))
#define FACE_SELI(m, a, b) (((a) & (m)) | ((b) & ~(m)))
/* the same for the per-ray passes' floats (m: FACE_I4) and doubles (m:
 * FACE_L4) */
#define FACE_SEL4(m, a, b)                                                     \
  ((FACE_F4)(((FACE_I4)(a) & (m)) | ((FACE_I4)(b) & ~(m))))
#define FACE_SELD(m, a, b)                                                     \
  ((FACE_D4)(((FACE_L4)(a) & (m)) | ((FACE_L4)(b) & ~(m))))

#ifndef FACE_GATHER_I
/* Lanes of 32-bit words at p[idx] (int or float: the bits), one by one. */
VEC_TARGET static inline FACE_VI VEC_FN(face_g32)(const void *p, FACE_VI idx) {
  FACE_VI v;
  for (int l = 0; l < FACE_L; l++) {
    int32_t w;
    memcpy(&w, (const char *)p + 4 * (size_t)idx[l], sizeof w);
    v[l] = w;
  }
  return v;
}
#define FACE_GATHER_I(p, idx) VEC_FN(face_g32)(p, idx)
#define FACE_GATHER_F(p, idx) ((FACE_VF)VEC_FN(face_g32)(p, idx))
#endif

#ifndef FACE_PACK
/* the lanes in bits b of v, packed at dst (FACE_L slots written) */
VEC_TARGET static inline void VEC_FN(face_pack)(int32_t *dst, FACE_VI v,
                                                unsigned b) {
  for (int l = 0; l < FACE_L; l++) {
    *dst = v[l];
    dst += b >> l & 1;
  }
}
#define FACE_PACK(dst, v, b) VEC_FN(face_pack)(dst, v, b)
#endif
#ifndef FACE_BITS
VEC_TARGET static inline unsigned VEC_FN(face_bits)(FACE_VI m) {
  unsigned b = 0;
  for (int l = 0; l < FACE_L; l++)
    b |= (unsigned)(m[l] & 1) << l;
  return b;
}
#define FACE_BITS(m) VEC_FN(face_bits)(m)
#endif

/* FACE_DL doubles from p, of which `left` (fewer: the others are fill). */
VEC_TARGET static inline FACE_D4 VEC_FN(loadd)(const double *p, uint32_t left,
                                               double fill) {
  FACE_D4 v = (FACE_D4){0} + fill;
  if (left >= FACE_DL)
    memcpy(&v, p, sizeof v);
  else
    for (uint32_t l = 0; l < left; l++)
      v[l] = p[l];
  return v;
}

/* Face j (of the candidates) on axis a's rays [g0, g1), in windows of
 * FACE_L lanes from a FACE_ALIGN-aligned ray: each ray's nearest crossing
 * (z, win) and nearest close call (near). Inlined in both loops (~150
 * faces a fan: a call each cost ~10% of the fan). */
VEC_TARGET static inline __attribute__((always_inline)) void
VEC_FN(face_z)(pa_sim_face_scratch *k, int a, int32_t j) {
  const int32_t g0 = k->g0[j], g1 = k->g1[j], line = k->ca[j] & 0xffff;
  const float dl = k->dl[j], ulo = k->ulo[j], uhi = k->uhi[j];
  const float clo = k->clo[j], chi = k->chi[j];
  /* FACE_ALIGN rays from a multiple of it (16 with 16 lanes, else 8: most
   * faces span fewer), more when it spans more (AVX2 and the 4 lanes did
   * 16 always: 3-6% of a fan more) */
  const int32_t b0 = g0 & ~(FACE_ALIGN - 1);
  const int32_t end = g1 > b0 + FACE_ALIGN ? g1 : b0 + FACE_ALIGN;
  for (int32_t base = b0; base < end; base += FACE_L) {
    FACE_VF c, iv, z, nr;
    FACE_VI w;
    memcpy(&c, k->cr[a] + base, sizeof c);
    memcpy(&iv, k->inv[a] + base, sizeof iv);
    memcpy(&z, k->z[a] + base, sizeof z);
    memcpy(&nr, k->near[a] + base, sizeof nr);
    memcpy(&w, k->win[a] + base, sizeof w);
    FACE_VI lane;
    memcpy(&lane, VEC_FN(face_iota), sizeof lane);
    lane += base;
    FACE_VF u = dl * c, t = dl * iv;
    FACE_VI live = (lane >= g0) & (lane < g1);
    FACE_VI in = live & (u >= clo) & (u <= chi);
    FACE_VI close = live & (u >= ulo) & (u <= uhi) & ~in;
    FACE_VI better = in & (t < z);
    z = FACE_SEL(better, t, z);
    w = FACE_SELI(better, (FACE_VI){0} + line, w);
    FACE_VI nb = close & (t < nr);
    nr = FACE_SEL(nb, t, nr);
    memcpy(k->z[a] + base, &z, sizeof z);
    memcpy(k->near[a] + base, &nr, sizeof nr);
    memcpy(k->win[a] + base, &w, sizeof w);
  }
}

/* One half-plane of the fan (o as the faces': 0 dx > 0, 1 dx < 0, 2 dy > 0,
 * 3 dy < 0): its rays are positions [s, s + len) of the doubled fan, in
 * pseudo-angle order; lut[q]: the first of them in slot q or later. */
typedef struct {
  int32_t s, len;
  int32_t lut[PA_SIM_FACE_Q + 1];
} VEC_FN(half);

/* The four halves (false: one is not a single run of the fan in key order,
 * i.e. the fan is not in angle order), with their slot tables. */
VEC_TARGET static bool VEC_FN(face_halves)(pa_sim_face_scratch *k, uint32_t n,
                                           VEC_FN(half) * hs) {
  /* bit o of a ray's code (face_rays): it is in half o; the codes of the
   * ray before each (code[i]: ray i - 1's, code[0]: the last ray's) */
  k->code[0] = k->code[n];
  FACE_VI lx = {0}, ly = {0}; /* counts of halves 0, 2 | 1, 3 << 16 */
  int32_t first[4] = {0, 0, 0, 0}, starts[4] = {0, 0, 0, 0};
  FACE_VI iota;
  memcpy(&iota, VEC_FN(face_iota), sizeof iota);
  for (uint32_t i = 0; i < n; i += FACE_L) {
    FACE_VI c, p;
    memcpy(&c, k->code + i + 1, sizeof c);
    memcpy(&p, k->code + i, sizeof p);
    c &= iota + (int32_t)i < (int32_t)n;
    lx += (c & 1) | (c & 2) << 15;
    ly += (c >> 2 & 1) | (c & 8) << 13;
    FACE_VI st = c & ~p;
    if (FACE_BITS(st != 0)) /* a half begins here: rare */
      for (int o = 0; o < 4; o++) {
        const unsigned b = FACE_BITS((st & (1 << o)) != 0);
        if (b) { /* its last lane, as lane by lane */
          first[o] = (int32_t)i + 31 - __builtin_clz(b);
          starts[o] += VEC_POPCNT(b);
        }
      }
  }
  int32_t lens[4] = {0, 0, 0, 0};
  for (int l = 0; l < FACE_L; l++) {
    lens[0] += lx[l] & 0xffff;
    lens[1] += lx[l] >> 16;
    lens[2] += ly[l] & 0xffff;
    lens[3] += ly[l] >> 16;
  }
  for (int o = 0; o < 4; o++) {
    VEC_FN(half) *h = &hs[o];
    if (starts[o] > 1)
      return false;
    h->len = lens[o];
    h->s = first[o];
    const float *key = k->key[o / 2] + h->s;
    FACE_VI down = {0};
    int32_t i = 1; /* rises along the half */
    for (; i + FACE_L <= h->len; i += FACE_L) {
      FACE_VF x, y;
      memcpy(&x, key + i, sizeof x);
      memcpy(&y, key + i - 1, sizeof y);
      down |= x < y;
    }
    bool sorted = true;
    for (int l = 0; l < FACE_L; l++)
      sorted &= down[l] == 0;
    for (; i < h->len; i++)
      sorted &= key[i] >= key[i - 1];
    if (!sorted)
      return false;
    const int32_t *slot = k->slot[o / 2] + h->s;
    for (int q = 0; q <= PA_SIM_FACE_Q; q++)
      h->lut[q] = h->len;
#if FACE_L >= 8
    /* lut[v]: the first p of slot v. That p is where the slot changes (or
     * 0): the changes packed (~64 of ~180 rays), then stored last to first
     * so that the first of a slot's wins */
    int32_t at[CAST_CHUNK + 16], sl[CAST_CHUNK + 16], nch = h->len > 0;
    at[0] = 0;
    sl[0] = slot[0] & (PA_SIM_FACE_Q - 1); /* (in range when len is 0) */
    for (int32_t p = 1; p < h->len; p += FACE_L) {
      FACE_VI cur, prev;
      memcpy(&cur, slot + p, sizeof cur); /* the arrays have slack */
      memcpy(&prev, slot + p - 1, sizeof prev);
      const unsigned b = FACE_BITS((cur != prev) & (iota + p < h->len));
      FACE_PACK(at + nch, iota + p, b);
      FACE_PACK(sl + nch, cur, b);
      nch += VEC_POPCNT(b);
    }
    for (int32_t c = nch - 1; c >= 0; c--)
      h->lut[sl[c]] = at[c];
#else /* packing lane by lane (SSE2, NEON) costs more than a store a ray */
    for (int32_t p = h->len - 1; p >= 0; p--)
      h->lut[slot[p]] = p;
#endif
    int32_t run = h->len; /* in a register: no store to load in the chain */
    for (int q = PA_SIM_FACE_Q - 1; q >= 0; q--) {
      run = h->lut[q] < run ? h->lut[q] : run;
      h->lut[q] = run;
    }
  }
  return true;
}

/* Every ray's nearest face so far (both axes, both copies of the fan), and
 * the farthest of those over 2^l positions from each. */
VEC_TARGET static void VEC_FN(face_best)(pa_sim_face_scratch *k, uint32_t n) {
  for (uint32_t i = 0; i < n; i += FACE_L) { /* lanes past n: copied over */
    FACE_VF a, b, c, d;
    memcpy(&a, k->z[0] + i, sizeof a);
    memcpy(&b, k->z[0] + i + n, sizeof b);
    memcpy(&c, k->z[1] + i, sizeof c);
    memcpy(&d, k->z[1] + i + n, sizeof d);
    a = FACE_SEL(b < a, b, a);
    c = FACE_SEL(d < c, d, c);
    a = FACE_SEL(c < a, c, a);
    memcpy(k->best[0] + i, &a, sizeof a);
  }
  memcpy(k->best[0] + n, k->best[0], n * sizeof(float));
  for (int l = 1; l < PA_SIM_FACE_LEVELS; l++) {
    const uint32_t span = 1u << (l - 1);
    if (2 * span > 2 * n)
      break;
    for (uint32_t g = 0; g + 2 * span <= 2 * n; g += FACE_L) {
      FACE_VF x, y;
      memcpy(&x, k->best[l - 1] + g, sizeof x);
      memcpy(&y, k->best[l - 1] + g + span, sizeof y);
      x = FACE_SEL(y > x, y, x);
      memcpy(k->best[l] + g, &x, sizeof x);
    }
  }
}

/* The scan's constants for one orientation of faces. */
typedef struct {
  int32_t oli, ovi; /* the origin's cell along the line axis, the other */
  float olf, ovf;   /* and its place in that cell */
  float sg, ks, lim, eps;
} VEC_FN(face_ctx);

/* Candidates [c0, c0 + cnt) of one orientation: their offsets, rays and
 * distance, and (their indices) the near ones in k->nearf from *nn, the
 * far ones in k->farf from *nf; a face that spans no ray is neither. */
VEC_TARGET static void VEC_FN(face_prep)(pa_sim_face_scratch *k, int32_t c0,
                                         int32_t cnt,
                                         const VEC_FN(face_ctx) * c,
                                         const VEC_FN(half) * h, int32_t *nn,
                                         int32_t *nf) {
  const float half_q = PA_SIM_FACE_Q / 2;
  FACE_VI iota;
  memcpy(&iota, VEC_FN(face_iota), sizeof iota);
  const FACE_VI abs_mask = (FACE_VI){0} + 0x7fffffff;
  const FACE_VI lo16 = (FACE_VI){0} + 0xffff;
  const FACE_VI qmax = (FACE_VI){0} + (PA_SIM_FACE_Q - 1);
  const FACE_VF zero = {0}, one = zero + 1;
  const float r2 = PA_SIM_FACE_NEAR * PA_SIM_FACE_NEAR;
  int32_t na = *nn, nb = *nf;
  for (int32_t i = c0; i < c0 + cnt; i += FACE_L) {
    FACE_VI pa, pb; /* the arrays have a vector of slack */
    memcpy(&pa, k->ca + i, sizeof pa);
    memcpy(&pb, k->cb + i, sizeof pb);
    FACE_VI lo = pb & lo16, hi = (FACE_VI)((FACE_VU)pb >> 16);
    FACE_VF dl =
        __builtin_convertvector((pa & lo16) - c->oli, FACE_VF) - c->olf;
    FACE_VF flo = __builtin_convertvector(lo - c->ovi, FACE_VF) - c->ovf;
    FACE_VF fhi = __builtin_convertvector(hi - c->ovi, FACE_VF) - c->ovf;
    FACE_VF adl = c->sg * dl;
    FACE_VI ok = (adl > 0) & (adl <= c->lim) & (iota + i < c0 + cnt);
    /* the keys of its ends, a margin out */
    FACE_VF e0 = flo - 2 * c->eps, e1 = fhi + 2 * c->eps;
    FACE_VF den0 = FACE_SEL(ok, adl + (FACE_VF)((FACE_VI)e0 & abs_mask), one);
    FACE_VF den1 = FACE_SEL(ok, adl + (FACE_VF)((FACE_VI)e1 & abs_mask), one);
    FACE_VF k0 = c->ks * e0 / den0, k1 = c->ks * e1 / den1;
    FACE_VI lt = k0 < k1;
    FACE_VF kmin = FACE_SEL(ok, FACE_SEL(lt, k0, k1), zero);
    FACE_VF kmax = FACE_SEL(ok, FACE_SEL(lt, k1, k0), zero);
    FACE_VI sa = __builtin_convertvector((kmin + 1) * half_q, FACE_VI);
    FACE_VI sb = __builtin_convertvector((kmax + 1) * half_q, FACE_VI);
    sa = FACE_SELI(sa > 0, sa, (FACE_VI){0});
    sa = FACE_SELI(sa > qmax, qmax, sa);
    sb = FACE_SELI(sb > 0, sb, (FACE_VI){0});
    sb = FACE_SELI(sb > qmax, qmax, sb);
    FACE_VI i0 = FACE_GATHER_I(h->lut, sa);
    FACE_VI i1 = FACE_GATHER_I(h->lut, sb + 1);
    ok &= i0 < i1;
    FACE_VF du = FACE_SEL(flo > 0, flo, FACE_SEL(fhi < 0, -fhi, zero));
    FACE_VF d2 = dl * dl + du * du;
    FACE_VI close = d2 < r2;
    i0 += h->s;
    i1 += h->s;
    /* the crossings of the run's inside (certain), and of it and its
     * ends' margins (a close call outside the inside) */
    const FACE_VI ends = pa >> 16;
    FACE_VF ulo = flo - c->eps, uhi = fhi + c->eps;
    FACE_VF clo = FACE_SEL((ends & 1) != 0, flo + c->eps, ulo);
    FACE_VF chi = FACE_SEL((ends & 2) != 0, fhi - c->eps, uhi);
    memcpy(k->dl + i, &dl, sizeof dl);
    memcpy(k->ulo + i, &ulo, sizeof ulo);
    memcpy(k->uhi + i, &uhi, sizeof uhi);
    memcpy(k->clo + i, &clo, sizeof clo);
    memcpy(k->chi + i, &chi, sizeof chi);
    memcpy(k->g0 + i, &i0, sizeof i0);
    memcpy(k->g1 + i, &i1, sizeof i1);
    const unsigned bn = FACE_BITS(ok & close), bf = FACE_BITS(ok & ~close);
    FACE_PACK(k->nearf + na, iota + i, bn);
    FACE_PACK(k->farf + nb, iota + i, bf);
    FACE_PACK(k->fg0 + nb, i0, bf);
    FACE_PACK(k->fg1 + nb, i1, bf);
    FACE_PACK(k->fd2 + nb, (FACE_VI)d2, bf);
    na += VEC_POPCNT(bn);
    nb += VEC_POPCNT(bf);
  }
  *nn = na;
  *nf = nb;
}

/* The far faces [f0, f1) of k->farf that may be nearer than the nearest
 * face so far of a ray they span (with a cell's margin) go to k->kept. */
VEC_TARGET static int32_t VEC_FN(face_cull)(pa_sim_face_scratch *k, int32_t f0,
                                            int32_t f1, int32_t nk) {
  FACE_VI iota;
  memcpy(&iota, VEC_FN(face_iota), sizeof iota);
  for (int32_t i = f0; i < f1; i += FACE_L) {
    FACE_VI idx, g0, g1;
    FACE_VF d2;
    memcpy(&idx, k->farf + i, sizeof idx);
    memcpy(&g0, k->fg0 + i, sizeof g0);
    memcpy(&g1, k->fg1 + i, sizeof g1);
    memcpy(&d2, k->fd2 + i, sizeof d2);
    FACE_VI live = iota + i < f1;
    g0 = FACE_SELI(live, g0, (FACE_VI){0});
    g1 = FACE_SELI(live, g1, (FACE_VI){0} + 1);
    FACE_VI span = g1 - g0; /* >= 1; over the table's spans: kept */
    live &= span < (1 << PA_SIM_FACE_LEVELS);
    const FACE_VI s2 = span >= 2, s4 = span >= 4, s8 = span >= 8;
    const FACE_VI s16 = span >= 16;
    FACE_VI lv = -(s2 + s4 + s8 + s16);
    /* 2^lv without a shift by lanes (SSE2 and NEON's baseline: none) */
    FACE_VI pw = 1 + (s2 & 1) + (s4 & 2) + (s8 & 4) + (s16 & 8);
    FACE_VI at0 = lv * PA_SIM_FACE_ARR + g0;
    FACE_VI at1 = lv * PA_SIM_FACE_ARR + g1 - pw;
    at0 = FACE_SELI(live, at0, (FACE_VI){0});
    at1 = FACE_SELI(live, at1, (FACE_VI){0});
    FACE_VF x = FACE_GATHER_F(k->best[0], at0);
    FACE_VF y = FACE_GATHER_F(k->best[0], at1);
    FACE_VF reach = FACE_SEL(y > x, y, x) + 1;
    const unsigned bk =
        FACE_BITS((iota + i < f1) & ~(live & (d2 > reach * reach)));
    FACE_PACK(k->kept + nk, idx, bk);
    nk += VEC_POPCNT(bk);
  }
  return nk;
}

/* The rays' keys (pseudo-angles, rising with the angle in each half-plane),
 * crossing slopes and inverses by axis, and the fan twice over. */
VEC_TARGET static void VEC_FN(face_rays)(pa_sim_face_scratch *k,
                                         const double *dx, const double *dy,
                                         uint32_t n, int32_t arr) {
  const FACE_I4 abs_mask = (FACE_I4){0} + 0x7fffffff;
  for (uint32_t i = 0; i < n; i += FACE_DL) { /* lanes past n: overwritten */
    FACE_D4 ddx = VEC_FN(loadd)(dx + i, n - i, 1.0);
    FACE_D4 ddy = VEC_FN(loadd)(dy + i, n - i, 1.0);
    FACE_F4 fx = __builtin_convertvector(ddx, FACE_F4);
    FACE_F4 fy = __builtin_convertvector(ddy, FACE_F4);
    FACE_F4 r = 1.0f / ((FACE_F4)((FACE_I4)fx & abs_mask) +
                        (FACE_F4)((FACE_I4)fy & abs_mask));
    FACE_F4 ix = 1.0f / fx, iy = 1.0f / fy;
    FACE_I4 px = __builtin_convertvector(ddx > 0, FACE_I4);
    FACE_I4 py = __builtin_convertvector(ddy > 0, FACE_I4);
    FACE_F4 kx = FACE_SEL4(px, fy, -fy) * r;
    FACE_F4 ky = FACE_SEL4(py, -fx, fx) * r;
    FACE_F4 cx = fy * ix, cy = fx * iy;
    FACE_I4 code = (px & 1) | (__builtin_convertvector(ddx < 0, FACE_I4) & 2) |
                   (py & 4) | (__builtin_convertvector(ddy < 0, FACE_I4) & 8);
    memcpy(k->code + i + 1, &code, sizeof code);
    memcpy(k->key[0] + i, &kx, sizeof kx);
    memcpy(k->key[1] + i, &ky, sizeof ky);
    memcpy(k->inv[0] + i, &ix, sizeof ix);
    memcpy(k->inv[1] + i, &iy, sizeof iy);
    memcpy(k->cr[0] + i, &cx, sizeof cx);
    memcpy(k->cr[1] + i, &cy, sizeof cy);
  }
  /* the depth buffer (win, the faces' lines, is read only where z is
   * finite: not cleared) and the rays' slots */
  const FACE_VF inf = (FACE_VF){0} + INFINITY;
  const FACE_VI zero = {0}, qmax = zero + (PA_SIM_FACE_Q - 1);
  for (int a = 0; a < 2; a++) {
    memcpy(k->key[a] + n, k->key[a], n * sizeof(float));
    memcpy(k->cr[a] + n, k->cr[a], n * sizeof(float));
    memcpy(k->inv[a] + n, k->inv[a], n * sizeof(float));
    for (int32_t i = 0; i < arr; i += FACE_L) {
      memcpy(k->z[a] + i, &inf, sizeof inf);
      memcpy(k->near[a] + i, &inf, sizeof inf);
      FACE_VF key;
      memcpy(&key, k->key[a] + i, sizeof key);
      FACE_VI s =
          __builtin_convertvector((key + 1.0f) * (PA_SIM_FACE_Q / 2), FACE_VI);
      s = FACE_SELI(s > 0, s, zero);
      s = FACE_SELI(s > qmax, qmax, s);
      memcpy(k->slot[a] + i, &s, sizeof s);
    }
  }
}

VEC_TARGET static bool VEC_FN(faces)(const pa_sim_model *m, double pox,
                                     double poy, const double *dx,
                                     const double *dy, uint32_t n, double maxc,
                                     double *out, pa_sim_face_scratch *k) {
  const pa_sim_faces *fc = m->faces;
  const double lim = maxc + 1.0;
  if (!fc || n < 2 || n > CAST_CHUNK || !(maxc > 0) || lim > FLOAT_PASS_MAX)
    return false;
  const float eps = lim <= 256 ? 1.0f / 1024 : (float)lim * (1.0f / 262144);
  /* an origin on a grid line (within eps) meets a face at 0: not here */
  const double fx0 = pox - floor(pox), fy0 = poy - floor(poy);
  if (fx0 < eps || fx0 > 1 - eps || fy0 < eps || fy0 > 1 - eps)
    return false;
  const int32_t T = PA_SIM_FACE_TILE;
  int32_t tx0 = (int32_t)floor((pox - lim) / T);
  int32_t ty0 = (int32_t)floor((poy - lim) / T);
  int32_t tx1 = (int32_t)((pox + lim) / T), ty1 = (int32_t)((poy + lim) / T);
  tx0 = tx0 < 0 ? 0 : tx0;
  ty0 = ty0 < 0 ? 0 : ty0;
  tx1 = tx1 >= (int32_t)fc->tiles_x ? (int32_t)fc->tiles_x - 1 : tx1;
  ty1 = ty1 >= (int32_t)fc->tiles_y ? (int32_t)fc->tiles_y - 1 : ty1;
  /* The faces in reach, by orientation: the tiles within reach of the
   * origin (a disc: the square's corners left out), but for the columns
   * wholly behind it. Too many (a cluttered map, a long range): the march
   * caster. */
  int32_t off[5] = {0}, nc = 0;
  for (int o = 0; o < 4; o++) {
    const pa_sim_face_set *fs = &fc->o[o];
    const double ol = o < 2 ? pox : poy, ov = o < 2 ? poy : pox;
    int32_t a0 = o < 2 ? tx0 : ty0, a1 = o < 2 ? tx1 : ty1;
    int32_t b0 = o < 2 ? ty0 : tx0, b1 = o < 2 ? ty1 : tx1;
    off[o] = nc;
    for (int32_t ta = a0; ta <= a1; ta++) {
      if (o % 2 == 0 ? (ta + 1) * T <= (int32_t)ol : ta * T > (int32_t)ol + 1)
        continue;
      /* the column's lines' nearest to the origin, and the reach along
       * them there (+ a cell) */
      const double lx0 = ta * T - ol, lx1 = ol - (ta * T + T);
      const double dmin = lx0 > 0 ? lx0 : lx1 > 0 ? lx1 : 0;
      const double h =
          sqrt(lim * lim - (dmin < lim ? dmin * dmin : lim * lim)) + 1;
      int32_t c0 = (int32_t)floor((ov - h) / T) - 1;
      int32_t c1 = (int32_t)floor((ov + h) / T);
      c0 = c0 < b0 ? b0 : c0;
      c1 = c1 > b1 ? b1 : c1;
      if (c0 > c1)
        continue;
      const uint32_t *row = fs->start + (size_t)ta * fs->tiles_v;
      uint32_t s = row[c0], e = row[c1 + 1];
      if ((uint32_t)nc + (e - s) > PA_SIM_FACE_CAND ||
          (uint32_t)nc + (e - s) > 8 * n + 512)
        return false;
      for (uint32_t q = 0; q < e - s; q += 16) { /* both have slack */
        memcpy(k->ca + nc + q, fs->a + s + q, 16 * sizeof(int32_t));
        memcpy(k->cb + nc + q, fs->b + s + q, 16 * sizeof(int32_t));
      }
      nc += (int32_t)(e - s);
    }
  }
  off[4] = nc;
  const int32_t arr = (int32_t)(2 * n + FACE_L) & ~(FACE_L - 1);
  VEC_FN(face_rays)(k, dx, dy, n, arr);
  VEC_FN(half) hs[4];
  if (!VEC_FN(face_halves)(k, n, hs))
    return false; /* not a fan in angle order */
  /* Every face: its rays, near or far. The near ones go into the depth
   * buffer first; then the far ones that may still be nearer than what
   * their rays have met. */
  int32_t nn[5] = {0}, nf[5] = {0}, an = 0, af = 0;
  for (int o = 0; o < 4; o++) {
    nn[o] = an;
    nf[o] = af;
    if (!hs[o].len)
      continue;
    const double ol = o < 2 ? pox : poy, ov = o < 2 ? poy : pox;
    const VEC_FN(face_ctx) c = {.oli = (int32_t)ol,
                                .ovi = (int32_t)ov,
                                .olf = (float)(ol - floor(ol)),
                                .ovf = (float)(ov - floor(ov)),
                                .sg = o & 1 ? -1.0f : 1.0f,
                                .ks = (o & 1) == (o >= 2) ? 1.0f : -1.0f,
                                .lim = (float)lim,
                                .eps = eps};
    VEC_FN(face_prep)(k, off[o], off[o + 1] - off[o], &c, &hs[o], &an, &af);
  }
  nn[4] = an;
  nf[4] = af;
  for (int o = 0; o < 4; o++)
    for (int32_t q = nn[o]; q < nn[o + 1]; q++)
      VEC_FN(face_z)(k, o / 2, k->nearf[q]);
  if (af > 0) {
    VEC_FN(face_best)(k, n);
    for (int o = 0; o < 4; o++) {
      int32_t nk = VEC_FN(face_cull)(k, nf[o], nf[o + 1], 0);
      for (int32_t q = 0; q < nk; q++)
        VEC_FN(face_z)(k, o / 2, k->kept[q]);
    }
  }
  /* each ray: its nearest face of either axis, FACE_DL at a time, the range in
   * double as cell_entry; close calls to the scalar caster after */
  uint32_t close[CAST_CHUNK], nclose = 0;
  /* each ray's close call (lanes, past n: 0), and whether there is one */
  int32_t unsure_at[CAST_CHUNK + FACE_L];
  FACE_I4 iota4, any_unsure = {0};
  memcpy(&iota4, VEC_FN(face_iota), sizeof iota4);
  const FACE_D4 pox4 = (FACE_D4){0} + pox, poy4 = (FACE_D4){0} + poy;
  const FACE_D4 maxc4 = (FACE_D4){0} + maxc;
  for (uint32_t i = 0; i < n; i += FACE_DL) {
    const uint32_t j = i + n, left = n - i < FACE_DL ? n - i : FACE_DL;
    FACE_F4 zxi, zxj, zyi, zyj, nxi, nxj, nyi, nyj;
    FACE_I4 wxi, wxj, wyi, wyj;
    memcpy(&zxi, k->z[0] + i, sizeof zxi);
    memcpy(&zxj, k->z[0] + j, sizeof zxj);
    memcpy(&zyi, k->z[1] + i, sizeof zyi);
    memcpy(&zyj, k->z[1] + j, sizeof zyj);
    memcpy(&nxi, k->near[0] + i, sizeof nxi);
    memcpy(&nxj, k->near[0] + j, sizeof nxj);
    memcpy(&nyi, k->near[1] + i, sizeof nyi);
    memcpy(&nyj, k->near[1] + j, sizeof nyj);
    memcpy(&wxi, k->win[0] + i, sizeof wxi);
    memcpy(&wxj, k->win[0] + j, sizeof wxj);
    memcpy(&wyi, k->win[1] + i, sizeof wyi);
    memcpy(&wyj, k->win[1] + j, sizeof wyj);
    /* each axis: the nearer of the fan's two copies; then the nearer axis */
    FACE_I4 xj = zxj < zxi, yj = zyj < zyi;
    FACE_F4 zx = FACE_SEL4(xj, zxj, zxi), zy = FACE_SEL4(yj, zyj, zyi);
    FACE_I4 wx = FACE_SELI(xj, wxj, wxi), wy = FACE_SELI(yj, wyj, wyi);
    FACE_F4 nx = FACE_SEL4(nxj < nxi, nxj, nxi);
    FACE_F4 ny = FACE_SEL4(nyj < nyi, nyj, nyi);
    FACE_I4 xs = zx < zy;
    FACE_F4 z = FACE_SEL4(xs, zx, zy), nr = FACE_SEL4(nx < ny, nx, ny);
    FACE_F4 dz = (FACE_F4)((FACE_I4)(zx - zy) & 0x7fffffff);
    FACE_I4 unsure =
        ((nr <= z + eps) & (nr <= (float)lim)) | (dz <= eps) | (z <= eps);
    unsure &= iota4 + (int32_t)i < (int32_t)n;
    any_unsure |= unsure;
    memcpy(unsure_at + i, &unsure, sizeof unsure);
    FACE_I4 none = z == INFINITY;
    FACE_D4 ddx = VEC_FN(loadd)(dx + i, left, 1.0);
    FACE_D4 ddy = VEC_FN(loadd)(dy + i, left, 1.0);
    FACE_L4 xs2 = __builtin_convertvector(xs, FACE_L4);
    FACE_D4 d = FACE_SELD(xs2, ddx, ddy), o = FACE_SELD(xs2, pox4, poy4);
    FACE_D4 w = __builtin_convertvector(FACE_SELI(xs, wx, wy), FACE_D4);
    FACE_D4 t = (w - o) * (1.0 / d);
    t = FACE_SELD(t < maxc4, t, maxc4);
    t = FACE_SELD(__builtin_convertvector(none, FACE_L4), maxc4, t);
    if (left == FACE_DL)
      memcpy(out + i, &t, sizeof t);
    else
      for (uint32_t l = 0; l < left; l++)
        out[i + l] = t[l];
  }
  /* the close calls in ray order (0.06 a fan on the office: rare) */
  bool unsure = false;
  for (int l = 0; l < FACE_DL; l++)
    unsure |= any_unsure[l] != 0;
  if (unsure)
    for (uint32_t i = 0; i < n; i++) {
      close[nclose] = i;
      nclose += unsure_at[i] & 1;
    }
  k->fans++;
  k->closes += nclose;
  for (uint32_t q = 0; q < nclose; q++) {
    uint32_t i = close[q];
    out[i] = pa_sim_int_cast_one(m, pox - 1.0, poy - 1.0, dx[i], dy[i], maxc);
  }
  return true;
}

#undef FACE_VF
#undef FACE_VI
#undef FACE_VU
#undef FACE_L
#undef FACE_DL
#undef FACE_F4
#undef FACE_I4
#undef FACE_D4
#undef FACE_L4
#undef FACE_SEL
#undef FACE_SELI
#undef FACE_SEL4
#undef FACE_SELD
