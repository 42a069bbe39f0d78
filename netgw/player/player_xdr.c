/* player_xdr.c - Player's wire format, written from the protocol (RFC 4506
 * XDR as libplayerxdr lays out Player's structs: every integer and uint8
 * in 4 bytes, a counted array as its _count field then XDR's own length,
 * byte arrays packed and padded to 4): the 40-byte header, a reader and a
 * writer, and the decoder of every message a client may send, by one
 * table of (interface, type, subtype) -> body layout. */
#define _GNU_SOURCE
#include "player_xdr.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- reader ---------------------------------------------------------- */

uint32_t pl_rd_u32(pl_rd *r) {
  if (r->bad || r->n - r->off < 4) {
    r->bad = true;
    return 0;
  }
  const uint8_t *p = r->p + r->off;
  r->off += 4;
  return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 |
         p[3];
}

float pl_rd_f32(pl_rd *r) {
  uint32_t u = pl_rd_u32(r);
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

double pl_rd_f64(pl_rd *r) {
  uint64_t u = (uint64_t)pl_rd_u32(r) << 32;
  u |= pl_rd_u32(r);
  double d;
  memcpy(&d, &u, sizeof d);
  return d;
}

void pl_rd_bytes(pl_rd *r, uint8_t *out, size_t max, uint32_t *len) {
  uint32_t count = pl_rd_u32(r);
  uint32_t n = pl_rd_u32(r);
  size_t padded = ((size_t)n + 3) & ~(size_t)3;
  if (r->bad || n != count || n > max || r->n - r->off < padded) {
    r->bad = true;
    *len = 0;
    return;
  }
  memcpy(out, r->p + r->off, n);
  r->off += padded;
  *len = n;
}

/* ---- writer ---------------------------------------------------------- */

static uint8_t *wr_room(pl_wr *w, size_t k) {
  if (w->bad)
    return NULL;
  if (w->cap - w->n < k) {
    size_t cap = w->cap ? w->cap : 256;
    while (cap - w->n < k)
      cap *= 2;
    uint8_t *p = realloc(w->p, cap);
    if (!p) {
      w->bad = true;
      return NULL;
    }
    w->p = p;
    w->cap = cap;
  }
  uint8_t *p = w->p + w->n;
  w->n += k;
  return p;
}

void pl_wr_u32(pl_wr *w, uint32_t v) {
  uint8_t *p = wr_room(w, 4);
  if (!p)
    return;
  p[0] = (uint8_t)(v >> 24);
  p[1] = (uint8_t)(v >> 16);
  p[2] = (uint8_t)(v >> 8);
  p[3] = (uint8_t)v;
}

void pl_wr_f32(pl_wr *w, float v) {
  uint32_t u;
  memcpy(&u, &v, sizeof u);
  pl_wr_u32(w, u);
}

void pl_wr_f64(pl_wr *w, double v) {
  uint64_t u;
  memcpy(&u, &v, sizeof u);
  pl_wr_u32(w, (uint32_t)(u >> 32));
  pl_wr_u32(w, (uint32_t)u);
}

void pl_wr_bytes(pl_wr *w, const void *b, uint32_t n) {
  pl_wr_u32(w, n);
  pl_wr_u32(w, n);
  pl_wr_opaque(w, b, n);
}

uint8_t *pl_wr_opaque(pl_wr *w, const void *b, uint32_t n) {
  size_t padded = ((size_t)n + 3) & ~(size_t)3;
  uint8_t *p = wr_room(w, padded);
  if (!p)
    return NULL;
  if (n && b)
    memcpy(p, b, n);
  memset(p + (b ? n : 0), 0, padded - (b ? n : 0));
  return p;
}

void pl_wr_free(pl_wr *w) {
  free(w->p);
  memset(w, 0, sizeof *w);
}

/* ---- header ---------------------------------------------------------- */

void pl_hdr_encode(uint8_t out[PL_HDR], const pl_hdr *h) {
  uint8_t buf[PL_HDR];
  pl_wr w = {.p = buf, .cap = sizeof buf};
  pl_wr_u32(&w, h->host);
  pl_wr_u32(&w, h->robot);
  pl_wr_u32(&w, h->interf);
  pl_wr_u32(&w, h->index);
  pl_wr_u32(&w, h->type);
  pl_wr_u32(&w, h->subtype);
  pl_wr_f64(&w, h->timestamp);
  pl_wr_u32(&w, h->seq);
  pl_wr_u32(&w, h->size);
  memcpy(out, buf, PL_HDR);
}

void pl_hdr_decode(const uint8_t in[PL_HDR], pl_hdr *h) {
  pl_rd r = {.p = in, .n = PL_HDR};
  h->host = pl_rd_u32(&r);
  h->robot = pl_rd_u32(&r);
  h->interf = pl_rd_u32(&r);
  h->index = pl_rd_u32(&r);
  h->type = pl_rd_u32(&r);
  h->subtype = pl_rd_u32(&r);
  h->timestamp = pl_rd_f64(&r);
  h->seq = pl_rd_u32(&r);
  h->size = pl_rd_u32(&r);
}

/* ---- the messages a client sends ------------------------------------- */

/* Body layouts. */
enum {
  B_ANY,       /* a null message: its body, if any, is not read */
  B_U32,       /* n x uint32 (uint8 too) into u */
  B_F64,       /* n x double into d */
  B_F32,       /* n x float into d */
  B_DEV,       /* devaddr, [access], driver name (DEV, DRIVERINFO) */
  B_KEY,       /* counted bytes into value (AUTH) */
  B_POSE2D,    /* name, pose2d */
  B_POSE3D,    /* name, pose3d, simtime */
  B_PROP,      /* name, prop, index, value */
  B_LASER_CFG, /* 5 floats, uint8, float */
  B_POS_CMD,   /* pose2d pos, pose2d vel, uint8 state */
  B_VEL_CMD,   /* pose2d vel, uint8 state */
  B_MAP_TILE,  /* col, row, width, height, data (empty), data_range */
};

typedef struct pl_layout {
  uint16_t interf;
  uint8_t type, subtype;
  uint8_t body, n;
} pl_layout;

static const pl_layout layouts[] = {
    {PL_I_PLAYER, PL_REQ, PL_P_DEVLIST, B_ANY, 0},
    {PL_I_PLAYER, PL_REQ, PL_P_DRIVERINFO, B_DEV, 0},
    {PL_I_PLAYER, PL_REQ, PL_P_DEV, B_DEV, 1},
    {PL_I_PLAYER, PL_REQ, PL_P_DATA, B_ANY, 0},
    {PL_I_PLAYER, PL_REQ, PL_P_DATAMODE, B_U32, 1},
    {PL_I_PLAYER, PL_REQ, PL_P_AUTH, B_KEY, 0},
    {PL_I_PLAYER, PL_REQ, PL_P_NAMESERVICE, B_ANY, 0},
    {PL_I_PLAYER, PL_REQ, PL_P_REPLACE_RULE, B_U32, 5},
    {PL_I_SIMULATION, PL_REQ, 1, B_POSE2D, 0},
    {PL_I_SIMULATION, PL_REQ, 2, B_POSE2D, 0},
    {PL_I_SIMULATION, PL_REQ, 3, B_POSE3D, 0},
    {PL_I_SIMULATION, PL_REQ, 4, B_POSE3D, 0},
    {PL_I_SIMULATION, PL_REQ, 5, B_PROP, 0},
    {PL_I_SIMULATION, PL_REQ, 6, B_PROP, 0},
    {PL_I_SIMULATION, PL_CMD, 1, B_ANY, 0},
    {PL_I_SIMULATION, PL_CMD, 2, B_ANY, 0},
    {PL_I_SIMULATION, PL_CMD, 3, B_ANY, 0},
    {PL_I_POSITION2D, PL_CMD, 1, B_VEL_CMD, 0},
    {PL_I_POSITION2D, PL_CMD, 2, B_POS_CMD, 0},
    {PL_I_POSITION2D, PL_CMD, 3, B_F64, 2},
    {PL_I_POSITION2D, PL_CMD, 4, B_F64, 2},
    {PL_I_POSITION2D, PL_REQ, 1, B_ANY, 0},
    {PL_I_POSITION2D, PL_REQ, 2, B_U32, 1},
    {PL_I_POSITION2D, PL_REQ, 3, B_U32, 1},
    {PL_I_POSITION2D, PL_REQ, 4, B_U32, 1},
    {PL_I_POSITION2D, PL_REQ, 5, B_F64, 3},
    {PL_I_POSITION2D, PL_REQ, 6, B_ANY, 0},
    {PL_I_POSITION2D, PL_REQ, 7, B_F32, 3},
    {PL_I_POSITION2D, PL_REQ, 8, B_F32, 3},
    {PL_I_POSITION2D, PL_REQ, 9, B_F32, 2},
    {PL_I_LASER, PL_REQ, 1, B_ANY, 0},
    {PL_I_LASER, PL_REQ, 2, B_LASER_CFG, 0},
    {PL_I_LASER, PL_REQ, 3, B_ANY, 0},
    {PL_I_LASER, PL_REQ, 4, B_U32, 1},
    {PL_I_LASER, PL_REQ, 5, B_ANY, 0},
    {PL_I_LASER, PL_REQ, 6, B_ANY, 0},
    {PL_I_RANGER, PL_REQ, 1, B_ANY, 0},
    {PL_I_RANGER, PL_REQ, 2, B_U32, 1},
    {PL_I_RANGER, PL_REQ, 3, B_U32, 1},
    {PL_I_RANGER, PL_REQ, 4, B_F64, 7},
    {PL_I_RANGER, PL_REQ, 5, B_ANY, 0},
    {PL_I_CAMERA, PL_REQ, 1, B_ANY, 0},
    {PL_I_CAMERA, PL_REQ, 2, B_ANY, 0},
    {PL_I_CAMERA, PL_REQ, 3, B_ANY, 0},
    {PL_I_MAP, PL_REQ, 1, B_ANY, 0},
    {PL_I_MAP, PL_REQ, 2, B_MAP_TILE, 0},
    {PL_I_MAP, PL_REQ, 3, B_ANY, 0},
};

const char *pa_player_interf_name(uint32_t interf) {
  switch (interf) {
  case PL_I_PLAYER:
    return "player";
  case PL_I_POSITION2D:
    return "position2d";
  case PL_I_LASER:
    return "laser";
  case PL_I_SIMULATION:
    return "simulation";
  case PL_I_MAP:
    return "map";
  case PL_I_CAMERA:
    return "camera";
  case PL_I_RANGER:
    return "ranger";
  default:
    return NULL;
  }
}

static void rd_name(pl_rd *r, char *out) {
  uint32_t n;
  pl_rd_bytes(r, (uint8_t *)out, PL_NAME_MAX - 1, &n);
  out[n] = '\0'; /* Player's strings carry their NUL; the rest is cut */
}

static void rd_body(pl_rd *r, const pl_layout *l, pl_msg *m) {
  uint32_t n;
  switch (l->body) {
  case B_U32:
    for (int i = 0; i < l->n; i++)
      m->u[i] = pl_rd_u32(r);
    break;
  case B_F64:
    for (int i = 0; i < l->n; i++)
      m->d[i] = pl_rd_f64(r);
    break;
  case B_F32:
    for (int i = 0; i < l->n; i++)
      m->d[i] = pl_rd_f32(r);
    break;
  case B_DEV:
    for (int i = 0; i < 4; i++)
      m->u[i] = pl_rd_u32(r);
    if (l->n)
      m->u[4] = pl_rd_u32(r); /* access */
    rd_name(r, m->name);
    break;
  case B_KEY:
    pl_rd_bytes(r, m->value, sizeof m->value - 1, &m->value_len);
    break;
  case B_POSE2D:
  case B_POSE3D:
    rd_name(r, m->name);
    for (int i = 0; i < (l->body == B_POSE2D ? 3 : 7); i++)
      m->d[i] = pl_rd_f64(r);
    break;
  case B_PROP:
    rd_name(r, m->name);
    rd_name(r, m->prop);
    m->u[0] = pl_rd_u32(r);
    pl_rd_bytes(r, m->value, 64, &m->value_len); /* a property: 4 doubles */
    break;
  case B_LASER_CFG:
    for (int i = 0; i < 5; i++)
      m->d[i] = pl_rd_f32(r);
    m->u[0] = pl_rd_u32(r);
    m->d[5] = pl_rd_f32(r);
    break;
  case B_POS_CMD:
  case B_VEL_CMD:
    for (int i = 0; i < (l->body == B_POS_CMD ? 6 : 3); i++)
      m->d[i] = pl_rd_f64(r);
    m->u[0] = pl_rd_u32(r);
    break;
  case B_MAP_TILE:
    for (int i = 0; i < 4; i++)
      m->u[i] = pl_rd_u32(r);
    m->u[4] = pl_rd_u32(r); /* data_count */
    m->u[5] = pl_rd_u32(r); /* data_range, between the count and the data */
    n = pl_rd_u32(r);       /* the data's XDR length: a request sends none */
    if (n != m->u[4] || n)
      r->bad = true;
    break;
  default:
    break;
  }
}

int pa_player_decode(const pl_hdr *h, const uint8_t *body, pl_msg *m, char *err,
                     size_t err_sz) {
  memset(m, 0, sizeof *m);
  m->h = *h;
  const char *in = pa_player_interf_name(h->interf);
  if (!in) {
    snprintf(err, err_sz, "unknown interface %u", h->interf);
    return -1;
  }
  if (h->size > PL_MAX_BODY) {
    snprintf(err, err_sz, "%s: a body of %u bytes (at most %u)", in, h->size,
             PL_MAX_BODY);
    return -1;
  }
  const pl_layout *l = NULL;
  for (size_t i = 0; i < sizeof layouts / sizeof layouts[0] && !l; i++)
    if (layouts[i].interf == h->interf && layouts[i].type == h->type &&
        layouts[i].subtype == h->subtype)
      l = &layouts[i];
  if (!l) {
    snprintf(err, err_sz, "%s: no message of type %u subtype %u", in, h->type,
             h->subtype);
    return -1;
  }
  if (l->body == B_ANY)
    return 0;
  pl_rd r = {.p = body, .n = h->size};
  rd_body(&r, l, m);
  if (r.bad || r.off != r.n) {
    snprintf(err, err_sz,
             "%s: type %u subtype %u: the XDR body (%u bytes) does not decode",
             in, h->type, h->subtype, h->size);
    return -1;
  }
  return 0;
}
