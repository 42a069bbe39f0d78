/* json_fast.c - the lockstep `step` reply written straight into one reused
 * buffer, with no jansson tree: the same bytes as the tree's json_dumps
 * (keys in the same order, reals as jansson prints them at precision 12),
 * so every client parses the same values. Anything unusual (an SSL ball,
 * agents, a string needing escapes, a non-finite number, a batch) takes the
 * general road in json.c and json_robot.c. Also the scan ranges' format
 * that both roads share. */
#define _GNU_SOURCE
#include "json_int.h"

#include <inttypes.h>
#include <pthread.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- numbers
 * ---------------------------------------------------------------*/

static const char DIG2[201] = "00010203040506070809"
                              "10111213141516171819"
                              "20212223242526272829"
                              "30313233343536373839"
                              "40414243444546474849"
                              "50515253545556575859"
                              "60616263646566676869"
                              "70717273747576777879"
                              "80818283848586878889"
                              "90919293949596979899";

/* v's decimal digits (no sign) at out: their count. */
static size_t put_u64(char *out, uint64_t v) {
  char tmp[24];
  size_t k = sizeof tmp;
  while (v >= 100) {
    unsigned d = (unsigned)(v % 100) * 2;
    v /= 100;
    tmp[--k] = DIG2[d + 1];
    tmp[--k] = DIG2[d];
  }
  if (v >= 10) {
    tmp[--k] = DIG2[v * 2 + 1];
    tmp[--k] = DIG2[v * 2];
  } else {
    tmp[--k] = (char)('0' + v);
  }
  memcpy(out, tmp + k, sizeof tmp - k);
  return sizeof tmp - k;
}

static size_t put_i64(char *out, int64_t v) {
  if (v < 0) {
    *out = '-';
    return 1 + put_u64(out + 1, (uint64_t)0 - (uint64_t)v);
  }
  return put_u64(out, (uint64_t)v);
}

/* jansson's own text for d (the rare cases of pa_json_fmt_real). */
static size_t real_by_jansson(char *out, double d) {
  json_t *r = json_real(d);
  char *s = r ? json_dumps(r, JSON_ENCODE_ANY | JSON_REAL_PRECISION(12)) : 0;
  json_decref(r);
  size_t n = s ? strlen(s) : 0;
  if (n && n < PA_JSON_REAL_MAX)
    memcpy(out, s, n);
  else
    n = 0;
  free(s);
  return n;
}

static const double P10[23] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                               1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                               1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

/* a * 10^k for 0 <= k <= 44 (powers to 1e22 are exact doubles): at most two
 * roundings. */
static double scale10(double a, int k) {
  return k <= 22 ? a * P10[k] : a * P10[22] * P10[k - 22];
}

/* The decimal exponent e and the 12 significant digits of a (1e-32 <= a <
 * 1e11) as %.12g rounds them; false when a fraction near one half makes the
 * double's arithmetic unsure (jansson decides those). */
static bool digits12(double a, int *e_out, uint64_t *q_out) {
  uint64_t bits;
  memcpy(&bits, &a, sizeof bits);
  int b = (int)((bits >> 52) & 0x7ff) - 1023;
  int e = (b * 78913) >> 18; /* floor(b log10 2): log10(a) in [e, e + 1] */
  double m = scale10(a, 11 - e);
  if (m >= 1e12)
    m = scale10(a, 11 - ++e);
  if (m < 1e11 || m >= 1e12)
    return false;
  /* |error| < 2.3e-4 (two roundings at most) */
  double fl = floor(m), fr = m - fl;
  if (fabs(fr - 0.5) < 1e-3)
    return false;
  uint64_t q = (uint64_t)fl + (fr > 0.5);
  if (q >= 1000000000000ull) { /* 9.99...95 carried to 10.0 */
    q /= 10;
    e++;
  }
  *e_out = e;
  *q_out = q;
  return true;
}

size_t pa_json_fmt_real(char *out, double d) {
  if (!isfinite(d))
    return 0;
  char *p = out;
  if (d == 0) {
    if (signbit(d))
      *p++ = '-';
    memcpy(p, "0.0", 3);
    return (size_t)(p - out) + 3;
  }
  double a = fabs(d);
  int e;
  uint64_t q;
  /* below 1e11 the rounding never reaches 1e12, %.12g's first exponent */
  if (!(a >= 1e-32 && a < 1e11) || !digits12(a, &e, &q))
    return real_by_jansson(out, d);
  char dig[12];
  for (int i = 11; i >= 0; i--) {
    dig[i] = (char)('0' + q % 10);
    q /= 10;
  }
  int last = 11; /* %g drops trailing zeros */
  while (last > 0 && dig[last] == '0')
    last--;
  if (d < 0)
    *p++ = '-';
  if (e < -4) { /* d.ddde-N: jansson drops the exponent's leading zeros */
    *p++ = dig[0];
    if (last > 0) {
      *p++ = '.';
      memcpy(p, dig + 1, (size_t)last);
      p += last;
    }
    *p++ = 'e';
    *p++ = '-';
    p += put_u64(p, (uint64_t)-e);
  } else if (e >= 0) {
    memcpy(p, dig, (size_t)e + 1);
    p += e + 1;
    *p++ = '.';
    if (last > e) {
      memcpy(p, dig + e + 1, (size_t)(last - e));
      p += last - e;
    } else {
      *p++ = '0'; /* jansson's ".0": a real stays a real */
    }
  } else {
    *p++ = '0';
    *p++ = '.';
    for (int z = -1; z > e; z--)
      *p++ = '0';
    memcpy(p, dig, (size_t)last + 1);
    p += last + 1;
  }
  return (size_t)(p - out);
}

size_t pa_json_fmt_range(char *out, float f) {
  double d = (double)f;
  if (!isfinite(d) || fabs(d) > 1e9) {
    memcpy(out, "null", 4);
    return 4;
  }
  /* llround(d * 1e6): half away from zero (x < 2^53: the conversions are
   * exact) */
  double x = fabs(d) * 1e6;
  uint64_t q = (uint64_t)x;
  q += x - (double)q >= 0.5;
  char *p = out;
  if (d < 0 && q)
    *p++ = '-';
  uint64_t ip = q / 1000000;
  unsigned fp = (unsigned)(q - ip * 1000000);
  if (ip < 10) {
    *p++ = (char)('0' + ip);
  } else if (ip < 100) {
    memcpy(p, DIG2 + ip * 2, 2);
    p += 2;
  } else {
    p += put_u64(p, ip);
  }
  if (fp) {
    unsigned hi = fp / 10000, lo = fp - hi * 10000, mid = lo / 100;
    lo -= mid * 100;
    *p = '.';
    memcpy(p + 1, DIG2 + hi * 2, 2);
    memcpy(p + 3, DIG2 + mid * 2, 2);
    memcpy(p + 5, DIG2 + lo * 2, 2);
    int n = 6; /* digits less the trailing zeros */
    while (p[n] == '0')
      n--;
    p += n + 1;
  }
  return (size_t)(p - out);
}

/* ---- the step reply ------------------------------------------------------*/

/* The reply buffer, reused (the JSON side runs on the loop's thread; a
 * process may run more than one gateway in tests, each on its own thread). */
static _Thread_local char *fbuf;
static _Thread_local size_t fcap;
static void tls_arm(void);

typedef struct {
  char *p;
  bool bad; /* a value the fast road does not write: take the general one */
} wr;

static void lit(wr *w, const char *s, size_t n) {
  memcpy(w->p, s, n);
  w->p += n;
}
#define LIT(w, s) lit(w, s, sizeof s - 1)

static void real(wr *w, double d) {
  size_t n = pa_json_fmt_real(w->p, d);
  w->bad |= n == 0;
  w->p += n;
}

static void vec(wr *w, const double *v, int n) {
  *w->p++ = '[';
  for (int i = 0; i < n; i++) {
    if (i)
      *w->p++ = ',';
    real(w, v[i]);
  }
  *w->p++ = ']';
}

/* A string jansson writes as it is (printable ASCII, no '"' or '\\'),
 * quoted, of at most max bytes; else bad. */
static void str(wr *w, const char *s, size_t max) {
  size_t n = strnlen(s, max + 1);
  bool ok = n <= max;
  for (size_t i = 0; ok && i < n; i++)
    ok = (unsigned char)s[i] >= 0x20 && (unsigned char)s[i] < 0x7f &&
         s[i] != '"' && s[i] != '\\';
  if (!ok) {
    w->bad = true;
    return;
  }
  *w->p++ = '"';
  lit(w, s, n);
  *w->p++ = '"';
}

static void request_id(wr *w, const json_t *req) {
  json_t *id = json_object_get(req, "request_id");
  if (!id)
    return;
  if (json_is_string(id)) {
    LIT(w, "\"request_id\":");
    str(w, json_string_value(id), 256);
  } else if (json_is_integer(id)) {
    LIT(w, "\"request_id\":");
    w->p += put_i64(w->p, (int64_t)json_integer_value(id));
  } else if (json_is_real(id)) {
    LIT(w, "\"request_id\":");
    real(w, json_real_value(id));
  } else {
    return;
  }
  *w->p++ = ',';
}

/* The last ranges written and their text: a lockstep client stepping one
 * tick at a time gets the same scan in ~19 replies of 20 (10 Hz scans at
 * 200 Hz), and the same floats always give the same text. */
static _Thread_local float *rc_in;
static _Thread_local char *rc_out;
static _Thread_local uint32_t rc_n;
static _Thread_local size_t rc_len;

static void ranges(wr *w, const float *r, uint32_t n) {
  size_t bytes = (size_t)n * sizeof *r;
  if (rc_in && n == rc_n && !memcmp(r, rc_in, bytes)) {
    memcpy(w->p, rc_out, rc_len);
    w->p += rc_len;
    return;
  }
  char *start = w->p;
  for (uint32_t i = 0; i < n; i++) {
    if (i)
      *w->p++ = ',';
    w->p += pa_json_fmt_range(w->p, r[i]);
  }
  size_t len = (size_t)(w->p - start);
  float *in = n > rc_n || !rc_in ? realloc(rc_in, bytes ? bytes : 1) : rc_in;
  char *out =
      n > rc_n || !rc_out ? realloc(rc_out, (size_t)n * 20 + 1) : rc_out;
  if (in)
    rc_in = in;
  if (out)
    rc_out = out;
  if (!in || !out) { /* no room to keep them: nothing kept */
    rc_n = 0;
    free(rc_in);
    rc_in = NULL;
    return;
  }
  memcpy(rc_in, r, bytes);
  memcpy(rc_out, start, len);
  rc_n = n;
  rc_len = len;
}

static void scan(wr *w, const pa_scan *s) {
  LIT(w, "{\"seq\":");
  w->p += put_u64(w->p, s->seq);
  LIT(w, ",\"tick\":");
  w->p += put_i64(w->p, (int64_t)s->tick);
  LIT(w, ",\"sim_time\":");
  real(w, s->sim_time);
  LIT(w, ",\"angle_min\":");
  real(w, s->angle_min);
  LIT(w, ",\"angle_increment\":");
  real(w, s->angle_increment);
  LIT(w, ",\"range_min\":");
  real(w, s->range_min);
  LIT(w, ",\"range_max\":");
  real(w, s->range_max);
  LIT(w, ",\"ranges\":[");
  ranges(w, (const float *)(s + 1), s->count);
  LIT(w, "]}");
}

/* The reply's data object: state_json's keys in its order. */
static void state(wr *w, uint32_t idx, const pa_robot_info *info,
                  const pa_tick *t, const pa_robot_state *rs,
                  const pa_scan *sc) {
  LIT(w, "{\"robot\":");
  w->p += put_u64(w->p, idx);
  LIT(w, ",\"name\":");
  str(w, info->name, sizeof info->name);
  LIT(w, ",\"drive\":");
  if (info->drive == PA_DRIVE_OMNI)
    LIT(w, "\"omni\"");
  else
    LIT(w, "\"diff\"");
  double c = cos(rs->theta), s = sin(rs->theta);
  const double pose[3] = {rs->x, rs->y, rs->theta},
               odom[3] = {rs->odom_x, rs->odom_y, rs->odom_theta},
               vel[3] = {c * rs->v - s * rs->vy, s * rs->v + c * rs->vy, 0.0},
               twist[3] = {rs->v, rs->vy, rs->w};
  LIT(w, ",\"pose\":");
  vec(w, pose, 3);
  LIT(w, ",\"odom\":");
  vec(w, odom, 3);
  LIT(w, ",\"velocity\":");
  vec(w, vel, 3);
  LIT(w, ",\"twist\":");
  vec(w, twist, 3);
  LIT(w, ",\"head\":");
  real(w, rs->head);
  LIT(w, ",\"position\":");
  vec(w, pose, 2);
  LIT(w, ",\"depth\":0.0,\"speed\":");
  real(w, hypot(rs->v, rs->vy));
  LIT(w, ",\"heading_deg\":");
  real(w, rs->theta * 180.0 / M_PI);
  LIT(w, ",\"yaw_rate\":");
  real(w, rs->w);
  if (rs->flags & PA_RS_BUMPED)
    LIT(w, ",\"bumped\":true,\"tick\":");
  else
    LIT(w, ",\"bumped\":false,\"tick\":");
  w->p += put_i64(w->p, (int64_t)t->tick);
  LIT(w, ",\"sim_time\":");
  real(w, t->sim_time);
  if (t->flags & PA_TICK_PAUSED)
    LIT(w, ",\"paused\":true,\"sensors\":{\"scan\":");
  else
    LIT(w, ",\"paused\":false,\"sensors\":{\"scan\":");
  if (sc)
    scan(w, sc);
  else
    LIT(w, "null");
  LIT(w, "}}");
}

bool pa_json_step_fast(pa_client *c, json_t *req) {
  pa_netgw *g = c->g;
  tls_arm();
  if (c->jbatch || c->n_spl || c->bin || pa_json_agents_count(g))
    return false;
  pa_robot_info info;
  uint32_t idx;
  if (pa_gw_robot(g, NULL, (long)c->pend_robot, &info, &idx) != 0)
    return false; /* the general road says the robot is gone */
  const pa_tick *t = pa_gw_latest(g);
  const pa_robot_state *rs = t ? pa_gw_robot_state(t, idx) : NULL;
  if (!rs || t->ssl)
    return false;
  const pa_scan *sc = pa_gw_scan(g, idx);
  size_t need = 2048 + (sc ? (size_t)sc->count * 20 : 0);
  if (need > fcap) {
    char *nb = realloc(fbuf, need);
    if (!nb)
      return false;
    fbuf = nb;
    fcap = need;
  }
  wr w = {fbuf, false};
  LIT(&w, "{\"type\":\"state\",\"protocol_version\":2,");
  request_id(&w, req);
  LIT(&w, "\"action\":\"step\",\"status\":\"ok\",\"success\":true,"
          "\"sim_time\":");
  real(&w, t->sim_time);
  LIT(&w, ",\"data\":");
  state(&w, idx, &info, t, rs, sc);
  LIT(&w, "}\n");
  if (w.bad)
    return false;
  g->steps++;
  pa_gw_write(c, fbuf, (size_t)(w.p - fbuf));
  return true;
}

/* ---- any reply tree ------------------------------------------------------*/

/* What json_dumps(v, JSON_COMPACT | JSON_REAL_PRECISION(12)) writes, into
 * the reused buffer; false where jansson's own words are needed (a byte
 * past ASCII in a string: jansson checks its UTF-8; very deep trees). */
typedef struct {
  char *p, *end;
} dbuf;

static bool room(dbuf *b, size_t n) {
  if (b->p && (size_t)(b->end - b->p) >= n)
    return true;
  size_t len = b->p ? (size_t)(b->p - fbuf) : 0, cap = fcap ? fcap : 4096;
  while (cap - len < n)
    cap *= 2;
  char *nb = realloc(fbuf, cap);
  if (!nb)
    return false;
  fbuf = nb;
  fcap = cap;
  b->p = nb + len;
  b->end = nb + cap;
  return true;
}

static bool dump_str(dbuf *b, const char *s, size_t n) {
  if (!room(b, n * 6 + 2))
    return false;
  char *p = b->p;
  *p++ = '"';
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    if (c >= 0x80)
      return false;
    if (c >= 0x20 && c != '"' && c != '\\') {
      *p++ = (char)c;
      continue;
    }
    *p++ = '\\';
    switch (c) {
    case '"':
    case '\\':
      *p++ = (char)c;
      break;
    case '\b':
      *p++ = 'b';
      break;
    case '\f':
      *p++ = 'f';
      break;
    case '\n':
      *p++ = 'n';
      break;
    case '\r':
      *p++ = 'r';
      break;
    case '\t':
      *p++ = 't';
      break;
    default: /* \u00XX, upper-case hex as jansson writes it */
      memcpy(p, "u00", 3);
      p[3] = "0123456789ABCDEF"[c >> 4];
      p[4] = "0123456789ABCDEF"[c & 15];
      p += 5;
    }
  }
  *p++ = '"';
  b->p = p;
  return true;
}

static bool dump_value(dbuf *b, json_t *v, int depth) {
  if (depth > 64 || !room(b, PA_JSON_REAL_MAX + 2))
    return false;
  switch (json_typeof(v)) {
  case JSON_OBJECT: {
    *b->p++ = '{';
    bool first = true;
    for (void *it = json_object_iter(v); it;
         it = json_object_iter_next(v, it)) {
      if (!first) {
        if (!room(b, 1))
          return false;
        *b->p++ = ',';
      }
      first = false;
      if (!dump_str(b, json_object_iter_key(it),
                    json_object_iter_key_len(it)) ||
          !room(b, 1))
        return false;
      *b->p++ = ':';
      if (!dump_value(b, json_object_iter_value(it), depth + 1))
        return false;
    }
    if (!room(b, 1))
      return false;
    *b->p++ = '}';
    return true;
  }
  case JSON_ARRAY: {
    *b->p++ = '[';
    size_t n = json_array_size(v);
    for (size_t i = 0; i < n; i++) {
      if (i) {
        if (!room(b, 1))
          return false;
        *b->p++ = ',';
      }
      if (!dump_value(b, json_array_get(v, i), depth + 1))
        return false;
    }
    if (!room(b, 1))
      return false;
    *b->p++ = ']';
    return true;
  }
  case JSON_STRING:
    return dump_str(b, json_string_value(v), json_string_length(v));
  case JSON_INTEGER:
    b->p += put_i64(b->p, (int64_t)json_integer_value(v));
    return true;
  case JSON_REAL: {
    size_t n = pa_json_fmt_real(b->p, json_real_value(v));
    b->p += n;
    return n > 0;
  }
  case JSON_TRUE:
    memcpy(b->p, "true", 4);
    b->p += 4;
    return true;
  case JSON_FALSE:
    memcpy(b->p, "false", 5);
    b->p += 5;
    return true;
  case JSON_NULL:
    memcpy(b->p, "null", 4);
    b->p += 4;
    return true;
  }
  return false;
}

const char *pa_json_dump_line(json_t *v, size_t *n) {
  if (!json_is_object(v) && !json_is_array(v))
    return NULL; /* json_dumps wants a container */
  tls_arm();
  dbuf b = {fbuf, fbuf ? fbuf + fcap : NULL};
  if (!dump_value(&b, v, 0) || !room(&b, 1))
    return NULL;
  *b.p++ = '\n';
  *n = (size_t)(b.p - fbuf);
  return fbuf;
}

void pa_json_fast_trim(void) {
  if (fcap > (1u << 20)) { /* a big reply's buffer is not kept */
    free(fbuf);
    fbuf = NULL;
    fcap = 0;
  }
}

/* A thread's buffers are freed when it ends (tests run gateways on
 * threads): a key's destructor runs on the ending thread, its thread-local
 * pointers still there. */
static pthread_key_t tls_key;
static pthread_once_t tls_once = PTHREAD_ONCE_INIT;
static _Thread_local bool tls_armed;

static void tls_free(void *unused) {
  (void)unused;
  free(fbuf);
  free(rc_in);
  free(rc_out);
  fbuf = rc_out = NULL;
  rc_in = NULL;
  fcap = rc_len = 0;
  rc_n = 0;
  tls_armed = false;
}

static void tls_key_make(void) { (void)pthread_key_create(&tls_key, tls_free); }

static void tls_arm(void) {
  if (tls_armed)
    return;
  (void)pthread_once(&tls_once, tls_key_make);
  tls_armed = pthread_setspecific(tls_key, &tls_armed) == 0;
}
