/* json_quick.c - the request lines clients send most (lockstep `step`,
 * `step_batch`, `step_n`: objects of plain ASCII strings, short numbers,
 * true/false/null, objects and arrays) parsed in one pass into the tree
 * json_loadb(line, JSON_REJECT_DUPLICATES) builds, without jansson's
 * character stream. Anything else - an escape, a byte outside printable
 * ASCII in a string, a duplicate key, a number outside the exact fast
 * conversions, bad JSON of any kind - gives NULL and jansson parses the line
 * (and words its errors) as before. test_netgw_lex holds the two equal. */
#define _GNU_SOURCE
#include "json_int.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define QUICK_DEPTH 8 /* deeper: jansson */

typedef struct {
  const char *p, *end;
} qp;

static void ws(qp *q) {
  while (q->p < q->end &&
         (*q->p == ' ' || *q->p == '\t' || *q->p == '\n' || *q->p == '\r'))
    q->p++;
}

/* A string's text (after its '"'): printable ASCII without '\\'; *n its
 * length, q past the closing '"'. NULL: not one the quick road takes. */
static const char *str_text(qp *q, size_t *n) {
  const char *s = q->p;
  const char *p = s;
  while (p < q->end) {
    unsigned char c = (unsigned char)*p;
    if (c == '"')
      break;
    if (c < 0x20 || c >= 0x7f || c == '\\')
      return NULL;
    p++;
  }
  if (p >= q->end)
    return NULL;
  *n = (size_t)(p - s);
  q->p = p + 1;
  return s;
}

static const double P10[23] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                               1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                               1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

/* A JSON number as jansson makes it: an integer when it has no '.', 'e' or
 * 'E' (up to 18 digits here), else a real, exactly as strtod rounds it (at
 * most 15 significant digits and a power of ten up to 22: one correctly
 * rounded operation). NULL: not one the quick road takes. */
static json_t *number(qp *q) {
  const char *p = q->p, *end = q->end;
  bool neg = p < end && *p == '-';
  p += neg;
  if (p >= end || *p < '0' || *p > '9')
    return NULL;
  if (*p == '0' && p + 1 < end && p[1] >= '0' && p[1] <= '9')
    return NULL; /* a leading zero: jansson's error */
  uint64_t m = 0;
  int digits = 0, frac = 0; /* significant digits; of them after the '.' */
  bool real = false;
  for (; p < end && *p >= '0' && *p <= '9'; p++) {
    if (digits || *p != '0')
      digits++;
    m = m * 10 + (uint64_t)(*p - '0');
    if (digits > 18)
      return NULL;
  }
  if (p < end && *p == '.') {
    real = true;
    p++;
    if (p >= end || *p < '0' || *p > '9')
      return NULL;
    for (; p < end && *p >= '0' && *p <= '9'; p++, frac++) {
      if (digits || *p != '0')
        digits++;
      m = m * 10 + (uint64_t)(*p - '0');
      if (digits > 15)
        return NULL;
    }
  }
  int ex = 0;
  if (p < end && (*p == 'e' || *p == 'E')) {
    real = true;
    p++;
    bool eneg = p < end && *p == '-';
    p += p < end && (*p == '-' || *p == '+');
    if (p >= end || *p < '0' || *p > '9')
      return NULL;
    for (; p < end && *p >= '0' && *p <= '9'; p++) {
      ex = ex * 10 + (*p - '0');
      if (ex > 999)
        return NULL;
    }
    ex = eneg ? -ex : ex;
  }
  if (p < end &&
      (*p == '.' || *p == 'e' || *p == 'E' || *p == '+' || *p == '-' ||
       (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z')))
    return NULL; /* jansson's lexer decides what that is */
  q->p = p;
  if (!real) {
    int64_t v = (int64_t)m;
    return json_integer((json_int_t)(neg ? -v : v));
  }
  if (digits > 15)
    return NULL;
  int e10 = ex - frac;
  double d = (double)m; /* exact: m < 10^15 */
  if (e10 >= 0 && e10 <= 22)
    d *= P10[e10];
  else if (e10 < 0 && e10 >= -22)
    d /= P10[-e10];
  else if (m != 0)
    return NULL;
  return json_real(neg ? -d : d);
}

static json_t *value(qp *q, int depth);

static json_t *object(qp *q, int depth) {
  json_t *o = json_object();
  if (!o)
    return NULL;
  ws(q);
  if (q->p < q->end && *q->p == '}') {
    q->p++;
    return o;
  }
  for (;;) {
    ws(q);
    if (q->p >= q->end || *q->p != '"')
      break;
    q->p++;
    size_t n;
    const char *k = str_text(q, &n);
    char key[128];
    if (!k || n >= sizeof key)
      break;
    memcpy(key, k, n);
    key[n] = 0;
    ws(q);
    if (q->p >= q->end || *q->p != ':')
      break;
    q->p++;
    if (json_object_get(o, key)) /* a duplicate: jansson refuses it */
      break;
    json_t *v = value(q, depth + 1);
    if (!v || json_object_set_new_nocheck(o, key, v) != 0)
      break;
    ws(q);
    if (q->p < q->end && *q->p == ',') {
      q->p++;
      continue;
    }
    if (q->p < q->end && *q->p == '}') {
      q->p++;
      return o;
    }
    break;
  }
  json_decref(o);
  return NULL;
}

static json_t *array(qp *q, int depth) {
  json_t *a = json_array();
  if (!a)
    return NULL;
  ws(q);
  if (q->p < q->end && *q->p == ']') {
    q->p++;
    return a;
  }
  for (;;) {
    json_t *v = value(q, depth + 1);
    if (!v || json_array_append_new(a, v) != 0)
      break;
    ws(q);
    if (q->p < q->end && *q->p == ',') {
      q->p++;
      continue;
    }
    if (q->p < q->end && *q->p == ']') {
      q->p++;
      return a;
    }
    break;
  }
  json_decref(a);
  return NULL;
}

static bool word(qp *q, const char *w, size_t n) {
  if ((size_t)(q->end - q->p) < n || memcmp(q->p, w, n) != 0)
    return false;
  q->p += n;
  return true;
}

static json_t *value(qp *q, int depth) {
  if (depth > QUICK_DEPTH)
    return NULL;
  ws(q);
  if (q->p >= q->end)
    return NULL;
  char c = *q->p;
  if (c == '{') {
    q->p++;
    return object(q, depth);
  }
  if (c == '[') {
    q->p++;
    return array(q, depth);
  }
  if (c == '"') {
    q->p++;
    size_t n;
    const char *s = str_text(q, &n);
    return s ? json_stringn_nocheck(s, n) : NULL; /* ASCII: valid UTF-8 */
  }
  if (c == '-' || (c >= '0' && c <= '9'))
    return number(q);
  if (word(q, "true", 4))
    return json_true();
  if (word(q, "false", 5))
    return json_false();
  if (word(q, "null", 4))
    return json_null();
  return NULL;
}

json_t *pa_json_quick_parse(const char *line, size_t len) {
  qp q = {line, line + len};
  ws(&q);
  if (q.p >= q.end || *q.p != '{')
    return NULL;
  json_t *root = value(&q, 0);
  if (!root)
    return NULL;
  ws(&q);
  if (q.p != q.end) { /* more after the object: jansson's error */
    json_decref(root);
    return NULL;
  }
  return root;
}
