/* test_map_util.h - what the map tests assert of a loaded robot def.
 * Header-only (static, cmocka's asserts): include after <cmocka.h>. */
#ifndef PA_TEST_MAP_UTIL_H
#define PA_TEST_MAP_UTIL_H

#include "pa_map.h"

/* r's motion limits are these, exactly. */
static inline void tm_expect_limits(const pa_robot_def *r, double max_v,
                                    double max_vy, double max_w, double acc_v,
                                    double dec_v, double acc_w, double dec_w,
                                    double head_limit, double max_head_rate) {
  assert_true(r->max_v == max_v && r->max_vy == max_vy && r->max_w == max_w);
  assert_true(r->acc_v == acc_v && r->dec_v == dec_v && r->acc_w == acc_w &&
              r->dec_w == dec_w);
  assert_true(r->head_limit == head_limit && r->max_head_rate == max_head_rate);
}

/* r's laser (exactly) and camera (fov within fov_eps) are these. */
static inline void tm_expect_sensors(const pa_robot_def *r, uint32_t beams,
                                     double range_min, double range_max,
                                     double noise, uint32_t width,
                                     uint32_t height, double fov,
                                     double fov_eps) {
  assert_int_equal(r->laser.beams, beams);
  assert_true(r->laser.range_min == range_min &&
              r->laser.range_max == range_max && r->laser.noise == noise);
  assert_int_equal(r->camera.width, width);
  assert_int_equal(r->camera.height, height);
  assert_float_equal(r->camera.fov, fov, fov_eps);
}

#endif
