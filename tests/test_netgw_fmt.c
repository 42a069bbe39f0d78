/* test_netgw_fmt.c - the step reply's number formats (netgw/json/json_fast.c)
 * against what they replace, byte for byte: pa_json_fmt_real against
 * jansson's json_dumps of json_real(d) at JSON_REAL_PRECISION(12) (poses,
 * times, angles, every range of exponents, the roundings at each of the
 * 12 digits, ties, random bit patterns), and pa_json_fmt_range against the
 * llround formatter json.c used before (every float from 4 to 64 m, the
 * half-micrometre ties, random bit patterns); and pa_json_dump_line, the
 * dump of any reply tree, against json_dumps on random trees. */
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

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint64_t next(void) { /* splitmix64 */
  uint64_t z = (rng += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}
static double unit(void) { return (double)(next() >> 11) / 9007199254740992.0; }

static long checked, mismatches;

static void check_real(double d) {
  char got[PA_JSON_REAL_MAX + 1];
  size_t n = pa_json_fmt_real(got, d);
  got[n] = 0;
  json_t *r = json_real(d);
  char *want =
      r ? json_dumps(r, JSON_ENCODE_ANY | JSON_REAL_PRECISION(12)) : NULL;
  json_decref(r);
  checked++;
  if (!want ? n != 0 : strcmp(got, want) != 0) {
    if (mismatches++ < 10)
      fprintf(stderr, "%.17g: got '%s', jansson '%s'\n", d, got,
              want ? want : "(no real)");
  }
  free(want);
}

static void real_matches_jansson(void **state) {
  (void)state;
  static const double fixed[] = {0.0,
                                 -0.0,
                                 1.0,
                                 -1.0,
                                 0.1,
                                 0.2,
                                 0.3,
                                 0.1 + 0.2,
                                 1e-4,
                                 9.99999999999e-5,
                                 0.000099999999999999,
                                 1e-5,
                                 1e11,
                                 99999999999.99999,
                                 1e12,
                                 999999999999.5,
                                 1e15,
                                 1e300,
                                 -1e-300,
                                 5e-324,
                                 M_PI,
                                 -M_PI,
                                 M_PI / 2,
                                 180.0,
                                 0.005,
                                 0.05,
                                 2.5,
                                 0.125,
                                 9.9999999999995,
                                 9.99999999999949,
                                 0.00049999999999995,
                                 123456789012.5,
                                 12345678901.25,
                                 1.00000000000049,
                                 1.0000000000005,
                                 1.0000000000015,
                                 0.017453292519943295,
                                 (double)0.017453292f,
                                 (double)-3.14159274f,
                                 (double)25.0f,
                                 NAN,
                                 INFINITY,
                                 -INFINITY};
  for (size_t i = 0; i < sizeof fixed / sizeof *fixed; i++)
    check_real(fixed[i]);
  /* sim times: multiples of 5 ms and 1 ms */
  for (long k = 0; k < 200000; k++) {
    check_real(k * 0.005);
    check_real(k / 1000.0);
  }
  /* every exponent, the digits rounded at each place, and their ties */
  for (int e = -330; e <= 310; e++) {
    for (int i = 0; i < 300; i++) {
      double m = 1.0 + 9.0 * unit();
      double d = m * pow(10.0, e);
      check_real(d);
      check_real(-d);
      double t = floor(m * 1e11) / 1e11 + 5e-12; /* near a tie */
      check_real(t * pow(10.0, e));
      check_real(nextafter(t, 0) * pow(10.0, e));
      check_real(nextafter(t, 10) * pow(10.0, e));
    }
  }
  /* what a robot's state holds: metres, radians, degrees, velocities */
  for (int i = 0; i < 1000000; i++) {
    double span = (i & 3) == 0   ? 1e-3
                  : (i & 3) == 1 ? 10
                  : (i & 3) == 2 ? 100
                                 : 1e4;
    check_real((unit() * 2 - 1) * span);
    check_real((double)(float)((unit() * 2 - 1) * span));
  }
  /* any bit pattern */
  for (int i = 0; i < 1000000; i++) {
    uint64_t b = next();
    double d;
    memcpy(&d, &b, sizeof d);
    check_real(d);
  }
  fprintf(stderr, "pa_json_fmt_real: %ld values, %ld differ from jansson\n",
          checked, mismatches);
  assert_int_equal(mismatches, 0);
}

/* json.c's range format before json_fast.c (the reference). */
static size_t old_range(char *out, float f) {
  double d = (double)f;
  if (!isfinite(d) || fabs(d) > 1e9) {
    memcpy(out, "null", 4);
    return 4;
  }
  char *p = out;
  long long q = llround(d * 1e6);
  if (q < 0) {
    *p++ = '-';
    q = -q;
  }
  long long ip = q / 1000000, fp = q % 1000000;
  char tmp[24];
  int k = 0;
  do {
    tmp[k++] = (char)('0' + ip % 10);
    ip /= 10;
  } while (ip);
  while (k)
    *p++ = tmp[--k];
  if (fp) {
    *p++ = '.';
    char frac[6];
    for (int i = 5; i >= 0; i--) {
      frac[i] = (char)('0' + fp % 10);
      fp /= 10;
    }
    int last = 5;
    while (frac[last] == '0')
      last--;
    memcpy(p, frac, (size_t)last + 1);
    p += last + 1;
  }
  return (size_t)(p - out);
}

static long range_bad;
static void check_range(float f) {
  char a[32], b[32];
  size_t n = pa_json_fmt_range(a, f), m = old_range(b, f);
  if (n != m || memcmp(a, b, n) != 0) {
    if (range_bad++ < 10)
      fprintf(stderr, "%.9g: got '%.*s', before '%.*s'\n", (double)f, (int)n, a,
              (int)m, b);
  }
}

static void range_matches_before(void **state) {
  (void)state;
  long n = 0;
  /* every float from 4 to 64 m (a scan's ranges), both signs */
  for (float f = 4.0f; f < 64.0f; f = nextafterf(f, 100.0f), n++) {
    check_range(f);
    if ((n & 15) == 0)
      check_range(-f);
  }
  static const float fixed[] = {
      0.0000005f, 0.0000015f, 0.0000025f, -0.0000005f, 1e-7f, -1e-7f,
      1e9f,       -1e9f,      1.1e9f,     1e10f,       NAN,   INFINITY,
      -INFINITY,  0.5f,       1000000.0f, 999999.94f,  3e38f};
  for (size_t i = 0; i < sizeof fixed / sizeof *fixed; i++, n++)
    check_range(fixed[i]);
  for (int i = 0; i < 2000000; i++, n++) {
    uint32_t b = (uint32_t)next();
    float f;
    memcpy(&f, &b, sizeof f);
    check_range(f);
  }
  fprintf(stderr, "pa_json_fmt_range: %ld values, %ld differ\n", n, range_bad);
  assert_int_equal(range_bad, 0);
}

/* ---- pa_json_dump_line against json_dumps --------------------------------*/

static json_t *random_tree(int depth) {
  unsigned r = (unsigned)(next() % (depth > 4 ? 6 : 8));
  switch (r) {
  case 0:
    return json_integer((json_int_t)(next() % 2000001) - 1000000);
  case 1: {
    double d = (unit() - 0.5) * pow(10.0, (double)(next() % 40) - 20.0);
    return json_real(d);
  }
  case 2: {
    char s[24];
    size_t n = (size_t)(next() % sizeof s);
    for (size_t i = 0; i < n; i++) { /* printable, escapes, controls */
      unsigned k = (unsigned)(next() % 10);
      s[i] = k == 0   ? (char)(next() % 0x20)
             : k == 1 ? "\"\\/\x7f"[next() % 4]
                      : (char)(0x20 + next() % 0x5f);
    }
    return json_stringn(s, n);
  }
  case 3:
    return next() % 3 ? json_true() : next() % 2 ? json_false() : json_null();
  case 4:
    return json_string("caf\xc3\xa9"); /* past ASCII: jansson's dump */
  case 5:
    return json_integer((json_int_t)next());
  case 6: {
    json_t *a = json_array();
    for (int i = (int)(next() % 6); i > 0; i--)
      json_array_append_new(a, random_tree(depth + 1));
    return a;
  }
  default: {
    json_t *o = json_object();
    for (int i = (int)(next() % 6); i > 0; i--) {
      char k[8];
      snprintf(k, sizeof k, "k%d%c", i, (char)(i == 3 ? '\n' : 'x'));
      json_object_set_new(o, k, random_tree(depth + 1));
    }
    return o;
  }
  }
}

static void dump_matches_jansson(void **state) {
  (void)state;
  long fast = 0;
  for (int i = 0; i < 30000; i++) {
    json_t *t = json_object();
    json_object_set_new(t, "type", json_string("response"));
    json_object_set_new(t, "data", random_tree(0));
    if (i % 7 == 0)
      json_object_set_new(t, "more", random_tree(0));
    char *want = json_dumps(t, JSON_COMPACT | JSON_REAL_PRECISION(12));
    assert_non_null(want);
    size_t n;
    const char *got = pa_json_dump_line(t, &n);
    if (got) {
      fast++;
      if (n != strlen(want) + 1 || memcmp(got, want, n - 1) != 0 ||
          got[n - 1] != '\n')
        fail_msg("dump differs:\n%.*s\njansson:\n%s", (int)n, got, want);
    } else if (strstr(want, "caf") == NULL) {
      fail_msg("not dumped, though all ASCII: %s", want);
    }
    free(want);
    json_decref(t);
  }
  fprintf(stderr,
          "pa_json_dump_line: 30000 trees, %ld dumped equal, the "
          "rest (past ASCII) left to jansson\n",
          fast);
  assert_true(fast > 1000);
  pa_json_fast_trim();
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(real_matches_jansson),
      cmocka_unit_test(range_matches_before),
      cmocka_unit_test(dump_matches_jansson),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
