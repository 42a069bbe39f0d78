/* test_json_call.h - one JSON request on a control connection and its
 * parsed reply, asserting success (the RaisimServer visual and video tests).
 * Include after cmocka.h, jansson.h and testutil.h; a test that includes it
 * calls call(). */
#ifndef PA_TEST_JSON_CALL_H
#define PA_TEST_JSON_CALL_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

static json_t *call(int fd, const char *action, const char *data_fmt, ...)
    __attribute__((format(printf, 3, 4)));

static json_t *call(int fd, const char *action, const char *data_fmt, ...) {
  char *data = NULL, *req = NULL;
  va_list ap;
  va_start(ap, data_fmt);
  assert_true(vasprintf(&data, data_fmt, ap) >= 0);
  va_end(ap);
  assert_true(asprintf(&req,
                       "{\"type\":\"command\",\"protocol_version\":2,"
                       "\"action\":\"%s\",\"data\":%s}\n",
                       action, data) >= 0);
  assert_int_equal(pa_test_send_str(fd, req), 0);
  free(req);
  static char line[1 << 20];
  assert_true(pa_test_read_line(fd, line, sizeof line, 20000 * PA_TEST_SLOW) >
              0);
  json_t *r = json_loads(line, 0, NULL);
  assert_non_null(r);
  if (!json_is_true(json_object_get(r, "success")))
    fail_msg("%s %.200s: %.500s", action, data, line);
  free(data);
  return r;
}

#endif /* PA_TEST_JSON_CALL_H */
