/* test_netgw_lex.c - pa_json_load_line (netgw/json/json_lex.c) against
 * jansson's own json_loadb(line, JSON_REJECT_DUPLICATES): the same tree (equal,
 * keys in the same order) or the same error (text, line, column, position), on
 * the real 1,000-robot step_batch line, on every near miss of the fast
 * path (keys in strings, other objects, escapes, short or non-base64
 * values, duplicates, truncations, whitespace) and on seeded random
 * mutations of the real line; and that the real line's value is the one
 * taken without lexing. The quick parse of plain lines (json_quick.c) the
 * same way: numbers of every form and its near misses (each real bit for
 * bit), nesting, duplicates, escapes, and random mutations of a lockstep
 * `step` line; and that the lines clients send most take it. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "json_int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* base64 of n bytes into out (4 * ceil(n / 3) + 1 bytes). */
static void b64(const unsigned char *in, size_t n, char *out) {
  static const char a[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  size_t w = 0;
  for (size_t i = 0; i < n; i += 3) {
    unsigned v = (unsigned)in[i] << 16;
    if (i + 1 < n)
      v |= (unsigned)in[i + 1] << 8;
    if (i + 2 < n)
      v |= in[i + 2];
    out[w++] = a[v >> 18 & 63];
    out[w++] = a[v >> 12 & 63];
    out[w++] = i + 1 < n ? a[v >> 6 & 63] : '=';
    out[w++] = i + 2 < n ? a[v & 63] : '=';
  }
  out[w] = 0;
}

/* base64 of n bytes of a seeded pattern (malloc'd). */
static char *b64_of(size_t n, unsigned seed) {
  unsigned char *raw = malloc(n);
  char *out = malloc(4 * (n / 3 + 1) + 1);
  assert_non_null(raw);
  assert_non_null(out);
  for (size_t i = 0; i < n; i++)
    raw[i] = (unsigned char)((i * 2654435761u + seed) >> 7);
  b64(raw, n, out);
  free(raw);
  return out;
}

/* The line NavVectorEnv(1000) sends: float32 [v, w] per robot. */
static char *real_line(void) {
  float a[2000];
  for (int i = 0; i < 2000; i++)
    a[i] = (float)((i % 2 ? 1.5 : 0.4) * ((i * 37 % 201) - 100) / 100.0);
  char *s = malloc(sizeof a * 4 / 3 + 4);
  assert_non_null(s);
  b64((const unsigned char *)a, sizeof a, s);
  char *line = malloc(strlen(s) + 256);
  assert_non_null(line);
  sprintf(line,
          "{\"type\":\"command\",\"action\":\"step_batch\",\"request_id\":7,"
          "\"data\":{\"robots_range\":[0,1000],\"steps\":20,\"binary\":true,"
          "\"actions_b64\":\"%s\",\"observe\":false}}",
          s);
  free(s);
  return line;
}

/* pa_json_load_line and json_loadb agree on line[0..len). */
static void same(const char *line, size_t len) {
  json_error_t e1, e2;
  memset(&e1, 0x5a, sizeof e1);
  memset(&e2, 0x5a, sizeof e2);
  json_t *want = json_loadb(line, len, JSON_REJECT_DUPLICATES, &e1);
  json_t *got = pa_json_load_line(line, len, &e2);
  if (!want || !got) {
    if (want || got)
      fail_msg("one parsed, one did not (%s): %.120s", want ? e2.text : e1.text,
               line);
    assert_string_equal(e1.text, e2.text);
    assert_string_equal(e1.source, e2.source);
    assert_int_equal(e1.line, e2.line);
    assert_int_equal(e1.column, e2.column);
    assert_int_equal(e1.position, e2.position);
    return;
  }
  assert_true(json_equal(want, got));
  /* insertion order too: a reply echoing the request keeps its shape */
  char *d1 = json_dumps(want, JSON_COMPACT);
  char *d2 = json_dumps(got, JSON_COMPACT);
  assert_non_null(d1);
  assert_non_null(d2);
  assert_string_equal(d1, d2);
  free(d1);
  free(d2);
  json_decref(want);
  json_decref(got);
}

static void same_str(const char *line) { same(line, strlen(line)); }

/* A line from a format with one %s, the long value, and a second %s (the
 * same value again, or nothing when the format has one). */
static void same_fmt(const char *fmt, const char *v) {
  size_t n = strlen(fmt) + 2 * strlen(v) + 1;
  char *line = malloc(n);
  assert_non_null(line);
  snprintf(line, n, fmt, v, v);
  same_str(line);
  free(line);
}

static void test_real_line(void **state) {
  (void)state;
  char *line = real_line();
  size_t len = strlen(line);
  assert_true(len > 10000);
  same(line, len);
  json_error_t je;
  json_t *j = pa_json_load_line(line, len, &je);
  assert_non_null(j);
  const char *v = json_string_value(
      json_object_get(json_object_get(j, "data"), "actions_b64"));
  assert_non_null(v);
  assert_int_equal(strlen(v), 10668);
  assert_memory_equal(v, strstr(line, "\"actions_b64\":\"") + 15, 10668);
  json_decref(j);
  /* with a newline or CRLF left on, as the framing may pass it */
  char *nl = malloc(len + 3);
  assert_non_null(nl);
  memcpy(nl, line, len);
  memcpy(nl + len, "\r\n", 3);
  same(nl, len + 1);
  same(nl, len + 2);
  free(nl);
  free(line);
}

/* Both keys, either order, and robots_b64 alone. */
static void test_both_keys(void **state) {
  (void)state;
  char *r = b64_of(4000, 1), *a = b64_of(8000, 2);
  size_t n = strlen(r) + strlen(a) + 256;
  char *line = malloc(n);
  assert_non_null(line);
  snprintf(line, n,
           "{\"type\":\"command\",\"action\":\"step_batch\",\"data\":{"
           "\"robots_b64\":\"%s\",\"steps\":3,\"actions_b64\":\"%s\"}}",
           r, a);
  same_str(line);
  snprintf(line, n,
           "{\"data\":{\"actions_b64\":\"%s\",\"robots_b64\":\"%s\"},"
           "\"type\":\"command\"}",
           a, r);
  same_str(line);
  snprintf(line, n, "{\"data\":{\"robots_b64\":\"%s\"},\"action\":\"x\"}", r);
  same_str(line);
  /* a short robots_b64 before a long actions_b64, and the reverse */
  snprintf(
      line, n,
      "{\"data\":{\"robots_b64\":\"AAAAAAEAAAA=\",\"actions_b64\":\"%s\"}}", a);
  same_str(line);
  snprintf(
      line, n,
      "{\"data\":{\"actions_b64\":\"%s\",\"robots_b64\":\"AAAAAAEAAAA=\"}}", a);
  same_str(line);
  /* the second key a duplicate of the first's spelling elsewhere */
  snprintf(line, n,
           "{\"data\":{\"robots_b64\":\"%s\",\"x\":{\"actions_b64\":\"%s\"}}}",
           r, a);
  same_str(line);
  free(line);
  free(r);
  free(a);
}

/* The literal where it is not a key of root.data. */
static void test_not_data_key(void **state) {
  (void)state;
  char *v = b64_of(2000, 3);
  static const char *fmts[] = {
      /* in a key that holds an escaped quote, and in a string value */
      "{\"data\":{\"k\\\"actions_b64\":\"%s\"}}",
      "{\"data\":{\"note\":\"x\\\"actions_b64\":\"%s\"}}",
      "{\"note\":\"\\\"actions_b64\\\":\\\"%s\",\"data\":{}}",
      /* another object, deeper, the root, an array */
      "{\"data\":{\"foo\":{\"actions_b64\":\"%s\"}}}",
      "{\"data\":{\"a\":{\"b\":{\"actions_b64\":\"%s\"}}}}",
      "{\"data\":{\"a\":[{\"actions_b64\":\"%s\"}]}}",
      "{\"other\":{\"actions_b64\":\"%s\"},\"data\":{}}",
      "{\"actions_b64\":\"%s\",\"data\":{}}",
      "[{\"data\":{\"actions_b64\":\"%s\"}}]",
      "{\"data\":[{\"actions_b64\":\"%s\"}]}",
      "{\"data\":[\"actions_b64\",\"%s\"]}",
      "{\"x\":{\"data\":{\"actions_b64\":\"%s\"}}}",
      "{\"datum\":{\"actions_b64\":\"%s\"}}",
      "{\"data\":{},\"data2\":{\"actions_b64\":\"%s\"}}",
      "{\"dat\":{\"actions_b64\":\"%s\"}}",
      "{\"Data\":{\"actions_b64\":\"%s\"}}",
      /* data spelled with an escape: jansson's key "data", parsed as is */
      "{\"d\\u0061ta\":{\"actions_b64\":\"%s\"}}",
      /* a value, not a key: the literal after a colon */
      "{\"data\":{\"a\":\"actions_b64\":\"%s\"}}",
      /* "data" a value, then an object */
      "{\"k\":\"data\",\"x\":{\"actions_b64\":\"%s\"}}",
      "{\"data\":1,\"x\":{\"actions_b64\":\"%s\"}}",
      /* after data closed */
      "{\"data\":{},\"y\":{\"actions_b64\":\"%s\"}}",
      "{\"data\":{}}{\"data\":{\"actions_b64\":\"%s\"}}",
  };
  for (size_t i = 0; i < sizeof fmts / sizeof *fmts; i++)
    same_fmt(fmts[i], v);
  free(v);
}

/* Escapes before the match: the tokenizer must end its strings right. */
static void test_escapes_before(void **state) {
  (void)state;
  char *v = b64_of(2000, 4);
  static const char *fmts[] = {
      "{\"q\":\"a\\\\\",\"data\":{\"actions_b64\":\"%s\"}}",
      "{\"q\":\"a\\\\\\\"\",\"data\":{\"actions_b64\":\"%s\"}}",
      "{\"q\":\"\\\\\\\\\",\"data\":{\"x\":\"}{\",\"actions_b64\":\"%s\"}}",
      "{\"data\":{\"x\":\"\\\"}\",\"actions_b64\":\"%s\"}}",
      "{\"data\":{\"x\":\"\\u0022\",\"actions_b64\":\"%s\"}}",
      "{\"data\":{\"x\\\\\":1,\"actions_b64\":\"%s\"}}",
      "{\"q\":\"\\\"data\\\":{\",\"data\":{\"actions_b64\":\"%s\"}}",
      "{\"data\":{\"x\":\"\\\\\\\"actions_b64\\\":\\\"\",\"y\":\"%s\"}}",
      /* a brace in a string after an escaped quote: still in foo */
      "{\"data\":{\"foo\":{\"x\":\"\\\"}\\\"\",\"actions_b64\":\"%s\"}}}",
      "{\"data\":{\"foo\":{\"x\":\"\\\\\",\"y\":\"}\\\\\",\"z\":\"\\\"\","
      "\"actions_b64\":\"%s\"}}}",
      "{\"x\":\"\\\"\\\"{\\\"\",\"data\":{\"actions_b64\":\"%s\"}}",
      /* an unpaired escape: bad JSON either way */
      "{\"q\":\"a\\\",\"data\":{\"actions_b64\":\"%s\"}}",
      "{\"q\":\"\\x\",\"data\":{\"actions_b64\":\"%s\"}}",
      /* other values in data before the key */
      "{\"data\":{\"a\":[1,{\"b\":[]}],\"t\":true,\"n\":null,\"f\":-1.5e3,"
      "\"actions_b64\":\"%s\"}}",
      "{\"data\":{\"a\":{},\"actions_b64\":\"%s\",\"b\":[\"%s\"]}}",
  };
  for (size_t i = 0; i < sizeof fmts / sizeof *fmts; i++)
    same_fmt(fmts[i], v);
  free(v);
}

/* The value: non-base64 bytes, lengths around the threshold. */
static void test_values(void **state) {
  (void)state;
  char *v = b64_of(2000, 5);
  size_t vl = strlen(v);
  char *line = malloc(vl + 256);
  assert_non_null(line);
  static const char *bad[] = {"-",   "_", " ",    "\\\"", "\\u0041",
                              "\\/", "é", "\xff", "\x01", "\t"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
    for (size_t at = 0; at < vl; at += vl / 3) {
      int n = sprintf(line, "{\"data\":{\"actions_b64\":\"%.*s%s%s\"}}",
                      (int)at, v, bad[i], v + at);
      same(line, (size_t)n);
    }
  /* 255, 256, 257 chars; a line just under and over 1 KiB */
  for (size_t k = 250; k < 262; k++) {
    sprintf(line, "{\"data\":{\"actions_b64\":\"%.*s\",\"p\":\"%.*s\"}}",
            (int)k, v, 1000, v);
    same_str(line);
  }
  for (size_t k = 960; k < 1000; k++) {
    sprintf(line, "{\"data\":{\"actions_b64\":\"%.*s\"}}", (int)k, v);
    same_str(line);
  }
  /* empty and all padding */
  same_fmt("{\"data\":{\"actions_b64\":\"\",\"p\":\"%s\"}}", v);
  memset(line, '=', 600);
  line[600] = 0;
  same_fmt("{\"data\":{\"actions_b64\":\"%s\"}}", line);
  free(line);
  free(v);
}

/* Duplicates, bad JSON after the value, truncations, whitespace. */
static void test_errors_and_spacing(void **state) {
  (void)state;
  char *v = b64_of(2000, 6);
  static const char *fmts[] = {
      "{\"data\":{\"actions_b64\":\"%s\",\"actions_b64\":\"%s\"}}",
      "{\"data\":{\"actions_b64\":\"%s\",\"actions_b64\":\"AAAA\"}}",
      "{\"data\":{\"actions_b64\":\"AAAA\",\"actions_b64\":\"%s\"}}",
      "{\"data\":{\"robots_b64\":\"%s\",\"robots_b64\":\"%s\"}}",
      "{\"data\":{\"actions_b64\":\"%s\"},\"data\":{}}",
      "{\"data\":{},\"data\":{\"actions_b64\":\"%s\"}}",
      "{\"data\":{\"actions_b64\":\"%s\",}}",
      "{\"data\":{\"actions_b64\":\"%s\"\"x\"}}",
      "{\"data\":{\"actions_b64\":\"%s\"}",
      "{\"data\":{\"actions_b64\":\"%s\"}}}",
      "{\"data\":{\"actions_b64\":\"%s\"}} x",
      "{\"data\":{\"actions_b64\":\"%s\"}}\n{}",
      "{\"data\":{\"actions_b64\":\"%s\",\"x\":[}}",
      "{\"data\":{\"actions_b64\":\"%s\",\"x\":\"\xc3\x28\"}}",
      "{\"data\":{\"actions_b64\":\"%s\",\"x\":\"\\u0000\"}}",
      "{\"data\":{,\"actions_b64\":\"%s\"}}",
      "{\"data\"{\"actions_b64\":\"%s\"}}",
      "{\"data\":{\"actions_b64\":\"%s\"]}",
      "{\"data\":{\"actions_b64\":\"%s\"}]",
      "{{\"data\":{\"actions_b64\":\"%s\"}}",
      "}{\"data\":{\"actions_b64\":\"%s\"}}",
      /* whitespace: another spelling of the literal takes jansson's path */
      "{ \"data\" : { \"actions_b64\":\"%s\" } }",
      "{\n\t\"data\":\r\n{\"x\":1 ,\"actions_b64\":\"%s\"}}",
      "{\"data\":{\"actions_b64\": \"%s\"}}",
      "{\"data\":{\"actions_b64\" :\"%s\"}}",
      "  {\"data\":{\"actions_b64\":\"%s\"}}  \n",
  };
  for (size_t i = 0; i < sizeof fmts / sizeof *fmts; i++)
    same_fmt(fmts[i], v);
  /* a line with a NUL byte before, in or after the value */
  char *line = real_line();
  size_t len = strlen(line);
  size_t at[] = {20, 120, 5000, len - 3};
  for (size_t i = 0; i < sizeof at / sizeof *at; i++) {
    char c = line[at[i]];
    line[at[i]] = 0;
    same(line, len);
    line[at[i]] = c;
  }
  /* truncated at every byte of the head and the tail, and in the value */
  for (size_t n = 0; n < len; n += n < 200 || n > len - 60 ? 1 : 997)
    same(line, n);
  free(line);
  free(v);
}

/* Seeded random edits of the real line: 1-3 bytes changed, inserted or
 * deleted, mostly in the JSON around the value. */
static void test_mutations(void **state) {
  (void)state;
  char *line = real_line();
  size_t len = strlen(line);
  size_t v0 = (size_t)(strstr(line, "\"actions_b64\":\"") - line);
  char *m = malloc(len + 8);
  assert_non_null(m);
  static const char pick[] = "{}[]\":,\\ \t\nadtA0+/=_-u\xff";
  unsigned seed = 20261201u;
  for (int iter = 0; iter < 4000; iter++) {
    memcpy(m, line, len);
    size_t n = len;
    int edits = 1 + (int)(rand_r(&seed) % 3);
    for (int e = 0; e < edits; e++) {
      unsigned r = (unsigned)rand_r(&seed);
      size_t p;
      if (r % 4 == 0) /* anywhere */
        p = (size_t)rand_r(&seed) % n;
      else if (r % 4 == 3) /* the tail */
        p = n - 1 - (size_t)rand_r(&seed) % 24;
      else /* the head, up to just past the literal */
        p = (size_t)rand_r(&seed) % (v0 + 20);
      char c = (char)(r / 4 % 3 == 0
                          ? rand_r(&seed) & 0xff
                          : pick[(size_t)rand_r(&seed) % (sizeof pick - 1)]);
      switch (r / 16 % 3) {
      case 0:
        m[p] = c;
        break;
      case 1: /* insert */
        memmove(m + p + 1, m + p, n - p);
        m[p] = c;
        n++;
        break;
      default: /* delete */
        memmove(m + p, m + p + 1, n - p - 1);
        n--;
        break;
      }
    }
    same(m, n);
  }
  free(m);
  free(line);
}

/* The point of it: the real line's actions are taken without jansson
 * lexing them (its result is the same either way, so this is asked of the
 * span finder), and a line it must not touch is left to jansson. */
static void test_spans(void **state) {
  (void)state;
  char *line = real_line();
  size_t len = strlen(line);
  lex_span sp[2];
  assert_int_equal(pa_json_lex_spans(line, len, sp), 1);
  assert_string_equal(sp[0].key, "actions_b64");
  assert_int_equal(line[sp[0].v1], '"');
  assert_int_equal(sp[0].v1 - sp[0].v0, 10668); /* 8,000 bytes in base64 */
  assert_memory_equal(line + sp[0].at, "\"actions_b64\":\"", 15);
  /* both keys, in the line's order */
  char *a = b64_of(3000, 1), *r = b64_of(800, 2);
  size_t n = strlen(a) + strlen(r) + 128;
  char *two = malloc(n);
  assert_non_null(two);
  snprintf(two, n, "{\"data\":{\"robots_b64\":\"%s\",\"actions_b64\":\"%s\"}}",
           r, a);
  assert_int_equal(pa_json_lex_spans(two, strlen(two), sp), 2);
  assert_string_equal(sp[0].key, "robots_b64");
  assert_string_equal(sp[1].key, "actions_b64");
  assert_true(sp[0].v1 < sp[1].at);
  /* not a key of root.data, and a line too short to bother */
  snprintf(two, n, "{\"data\":{\"foo\":{\"actions_b64\":\"%s\"}}}", a);
  assert_int_equal(pa_json_lex_spans(two, strlen(two), sp), 0);
  assert_int_equal(pa_json_lex_spans(line, 512, sp), 0);
  free(two);
  free(a);
  free(r);
  free(line);
}

/* ---- json_quick.c ---------------------------------------------------------*/

static void same_num(const char *num) {
  char line[256];
  snprintf(line, sizeof line,
           "{\"type\":\"command\",\"action\":\"step\",\"data\":{\"v\":%s,"
           "\"w\":[%s]}}",
           num, num);
  same_str(line);
  json_error_t e;
  json_t *a = json_loadb(line, strlen(line), JSON_REJECT_DUPLICATES, &e);
  json_t *b = pa_json_load_line(line, strlen(line), &e);
  if (a && b) { /* the very bits, the sign of zero too */
    json_t *va = json_object_get(json_object_get(a, "data"), "v");
    json_t *vb = json_object_get(json_object_get(b, "data"), "v");
    assert_int_equal(json_typeof(va), json_typeof(vb));
    if (json_is_real(va)) {
      double x = json_real_value(va), y = json_real_value(vb);
      if (memcmp(&x, &y, sizeof x) != 0)
        fail_msg("%s: jansson %.17g, quick %.17g", num, x, y);
    }
  }
  json_decref(a);
  json_decref(b);
}

static void test_quick_numbers(void **state) {
  (void)state;
  static const char *fixed[] = {"0",
                                "-0",
                                "0.0",
                                "-0.0",
                                "1",
                                "-1",
                                "0.2",
                                "-0.2",
                                "1e5",
                                "1E5",
                                "1e+5",
                                "1e-5",
                                "2.5e-3",
                                "123456789012345678",
                                "-123456789012345678",
                                "1234567890123456789",
                                "9223372036854775807",
                                "-9223372036854775808",
                                "9223372036854775808",
                                "123456789012345.6",
                                "1234567890123456.7",
                                "0.000000000000000000001",
                                "1e22",
                                "1e23",
                                "1e-22",
                                "1e-23",
                                "1e308",
                                "1e309",
                                "1e400",
                                "1e-400",
                                "0e500",
                                "01",
                                "-01",
                                "1.",
                                ".5",
                                "-",
                                "+1",
                                "1e",
                                "1e+",
                                "1.5x",
                                "1.5.2",
                                "0x10",
                                "1ee5",
                                "--1",
                                "1-",
                                "Infinity",
                                "NaN",
                                "true",
                                "false",
                                "null",
                                "tru",
                                "nul",
                                "1.0e0",
                                "5e-324",
                                "2.2250738585072014e-308",
                                "0.1e1",
                                "100e-2",
                                "3.141592653589793",
                                "3.14159265358979",
                                "1 ",
                                " 1",
                                "1\t"};
  for (size_t i = 0; i < sizeof fixed / sizeof *fixed; i++)
    same_num(fixed[i]);
  unsigned seed = 37u;
  char num[64];
  for (int i = 0; i < 20000; i++) {
    double d = ((double)rand_r(&seed) / RAND_MAX - 0.5) *
               pow(10.0, (double)(rand_r(&seed) % 40) - 20.0);
    int prec = 1 + rand_r(&seed) % 17;
    switch (i % 4) {
    case 0:
      snprintf(num, sizeof num, "%.*g", prec, d);
      break;
    case 1:
      snprintf(num, sizeof num, "%.*e", prec, d);
      break;
    case 2:
      snprintf(num, sizeof num, "%.*f", prec % 12, d);
      break;
    default:
      snprintf(num, sizeof num, "%lld",
               (long long)rand_r(&seed) * rand_r(&seed) * (i % 8 ? 1 : -1));
      break;
    }
    same_num(num);
  }
}

static void test_quick_shapes(void **state) {
  (void)state;
  static const char *lines[] = {"{}",
                                " {} ",
                                "{\"a\":{}}",
                                "{\"a\":[]}",
                                "{\"a\":[1,[2,{\"b\":[]}]]}",
                                "{\"a\":1,\"a\":2}",
                                "{\"d\":{\"a\":1,\"a\":2}}",
                                "{\"a\":\"x\\\"y\"}",
                                "{\"a\":\"\\u00e9\"}",
                                "{\"a\":\"\xc3\xa9\"}",
                                "{\"a\":\"\x7f\"}",
                                "{\"a\":\"tab\there\"}",
                                "{\"a\\n\":1}",
                                "{\"\":1}",
                                "{\"a\":1,}",
                                "{\"a\":1",
                                "{\"a\" 1}",
                                "{\"a\":1}x",
                                "{\"a\":1}{}",
                                "[1,2]",
                                "\"s\"",
                                "1",
                                "",
                                " ",
                                "{\"a\":[1,2,]}",
                                "{\"a\":[[[[[[[[[[[[1]]]]]]]]]]]]}",
                                "{\"a\":true,\"b\":false,\"c\":null}",
                                "{\"a\":truex}",
                                "{\"type\":\"command\",\"action\":\"step\","
                                "\"data\":{\"v\":0.2,\"w\":0.1}}"
                                "\r\n"};
  for (size_t i = 0; i < sizeof lines / sizeof *lines; i++)
    same_str(lines[i]);
  char nul[] = "{\"a\":\"x\0y\"}";
  same(nul, sizeof nul - 1);
  /* what clients send most is taken by the quick road */
  static const char *common[] = {
      "{\"type\":\"command\",\"action\":\"step\",\"data\":{\"v\":0.2,"
      "\"w\":-0.1}}\n",
      "{\"type\":\"command\",\"action\":\"step_batch\",\"request_id\":12,"
      "\"data\":{\"robots\":[0],\"steps\":20,\"binary\":true,\"observe\":"
      "false,\"actions_b64\":\"AAAAAAAA8D8AAAAAAAAAAA==\"}}\n",
      "{\"type\":\"sim_control\",\"action\":\"step_n\",\"data\":{\"steps\":"
      "20}}\n"};
  for (size_t i = 0; i < sizeof common / sizeof *common; i++) {
    json_t *q = pa_json_quick_parse(common[i], strlen(common[i]));
    assert_non_null(q);
    json_decref(q);
    same_str(common[i]);
  }
  char *line = real_line();
  json_t *q = pa_json_quick_parse(line, strlen(line));
  assert_non_null(q);
  json_decref(q);
  free(line);
}

static void test_quick_mutations(void **state) {
  (void)state;
  static const char base[] =
      "{\"type\":\"command\",\"request_id\":\"r7\",\"action\":\"step\","
      "\"data\":{\"v\":0.25,\"w\":-1.5e-3,\"steps\":20,\"pose\":[1,2.5,-3]}}";
  static const char pick[] = "{}[]\":,\\ \t\nadtA0+/=_-.eE1u\xff";
  char m[sizeof base + 8];
  unsigned seed = 20261202u;
  for (int iter = 0; iter < 20000; iter++) {
    size_t n = sizeof base - 1;
    memcpy(m, base, n);
    int edits = 1 + (int)(rand_r(&seed) % 3);
    for (int e = 0; e < edits; e++) {
      size_t p = (size_t)rand_r(&seed) % n;
      unsigned r = (unsigned)rand_r(&seed);
      char c =
          (char)(r % 3 == 0 ? rand_r(&seed) & 0xff
                            : pick[(size_t)rand_r(&seed) % (sizeof pick - 1)]);
      switch (r / 4 % 3) {
      case 0:
        m[p] = c;
        break;
      case 1:
        if (n + 1 >= sizeof m)
          break;
        memmove(m + p + 1, m + p, n - p);
        m[p] = c;
        n++;
        break;
      default:
        memmove(m + p, m + p + 1, n - p - 1);
        n--;
        break;
      }
    }
    same(m, n);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_real_line),
      cmocka_unit_test(test_both_keys),
      cmocka_unit_test(test_not_data_key),
      cmocka_unit_test(test_escapes_before),
      cmocka_unit_test(test_values),
      cmocka_unit_test(test_errors_and_spacing),
      cmocka_unit_test(test_mutations),
      cmocka_unit_test(test_spans),
      cmocka_unit_test(test_quick_numbers),
      cmocka_unit_test(test_quick_shapes),
      cmocka_unit_test(test_quick_mutations),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
