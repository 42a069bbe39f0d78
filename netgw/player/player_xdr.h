/* player_xdr.h - the Player protocol codec, private to netgw/player/:
 * player_xdr.c (XDR, the 40-byte header and the decoder of what clients send),
 * player.c (the row, connections, the player device, data modes and
 * delivery) and player_dev.c (simulation, position2d, laser, ranger, map).
 * Written from Player 3.x's interface definitions (docs/player.md). */
#ifndef PA_PLAYER_XDR_H
#define PA_PLAYER_XDR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- the protocol's numbers (the interface definitions) ---- */
#define PL_IDENT_LEN 32         /* the greeting: "Player v.3.1.0", NUL-padded */
#define PL_HDR 40               /* XDR header: 6 x 4 + double + 2 x 4 */
#define PL_MAX_BODY (64u << 10) /* a client's message body at most */
#define PL_DRIVER_LEN 64        /* PLAYER_MAX_DRIVER_STRING_LEN */
#define PL_KEYLEN 32            /* PLAYER_KEYLEN */
#define PL_NAME_MAX 256         /* object and property names we accept */

enum { /* message types */
       PL_DATA = 1,
       PL_CMD = 2,
       PL_REQ = 3,
       PL_ACK = 4,
       PL_SYNCH = 5,
       PL_NACK = 6
};
enum { /* interface codes */
       PL_I_PLAYER = 1,
       PL_I_POSITION2D = 4,
       PL_I_LASER = 6,
       PL_I_SIMULATION = 31,
       PL_I_CAMERA = 40,
       PL_I_MAP = 42,
       PL_I_RANGER = 62
};
enum { /* player device requests */
       PL_P_DEVLIST = 1,
       PL_P_DRIVERINFO = 2,
       PL_P_DEV = 3,
       PL_P_DATA = 4,
       PL_P_DATAMODE = 5,
       PL_P_AUTH = 7,
       PL_P_NAMESERVICE = 8,
       PL_P_REPLACE_RULE = 10
};
enum { PL_OPEN = 1, PL_CLOSE = 2, PL_ERROR_MODE = 3 };
enum { PL_PUSH = 1, PL_PULL = 2 };

typedef struct pl_hdr {
  uint32_t host, robot, interf, index, type, subtype;
  double timestamp;
  uint32_t seq, size;
} pl_hdr;

/* ---- XDR (RFC 4506, big-endian, 4-byte units) ---------------------- */
typedef struct pl_rd {
  const uint8_t *p;
  size_t n, off;
  bool bad; /* ran past the end or a length out of bounds */
} pl_rd;
uint32_t pl_rd_u32(pl_rd *r);
float pl_rd_f32(pl_rd *r);
double pl_rd_f64(pl_rd *r);
/* A counted byte array (Player's _count, then XDR's own length, then the
 * bytes padded to 4): at most max bytes into out (NUL-terminated when
 * text), the length in *len. */
void pl_rd_bytes(pl_rd *r, uint8_t *out, size_t max, uint32_t *len);

typedef struct pl_wr {
  uint8_t *p;
  size_t n, cap;
  bool bad; /* out of memory */
} pl_wr;
void pl_wr_u32(pl_wr *w, uint32_t v);
void pl_wr_f32(pl_wr *w, float v);
void pl_wr_f64(pl_wr *w, double v);
/* Counted bytes as pl_rd_bytes reads them. */
void pl_wr_bytes(pl_wr *w, const void *b, uint32_t n);
/* n bytes padded to 4, no length (b NULL: zeros): where they went. */
uint8_t *pl_wr_opaque(pl_wr *w, const void *b, uint32_t n);
void pl_wr_free(pl_wr *w);

void pl_hdr_encode(uint8_t out[PL_HDR], const pl_hdr *h);
void pl_hdr_decode(const uint8_t in[PL_HDR], pl_hdr *h);

/* ---- what a client sends, decoded ---------------------------------- */
typedef struct pl_msg {
  pl_hdr h;
  /* the decoded body, by (interf, type, subtype) */
  double d[9];   /* poses, velocities, config numbers */
  uint32_t u[6]; /* addresses, modes, states, tile */
  char name[PL_NAME_MAX], prop[PL_NAME_MAX];
  uint8_t value[256];
  uint32_t value_len;
} pl_msg;

/* Decodes the body of message h (body: h->size bytes) into m: 0, or -1
 * with what was wrong in err (an unknown message, XDR that does not
 * decode). The fuzz target's entry (tests/fuzz/fuzz_player.c). */
int pa_player_decode(const pl_hdr *h, const uint8_t *body, pl_msg *m, char *err,
                     size_t err_sz);
/* The name of an interface code ("position2d"), NULL if unknown. */
const char *pa_player_interf_name(uint32_t interf);

#endif
