/* json_overlay.c - OceanSim's navigation overlays beside the plan and
 * waypoints: set_waypoint (one goal point) and set_pred_trajectory (a
 * predicted path), per robot, kept in the instance's pa_nav_block and drawn
 * by the viewer unlike the plan (json_world.c writes the block). */
#define _GNU_SOURCE
#include "json_int.h"

/* set_waypoint {robot, waypoint: [x, y]} ([] clears it) */
json_t *pa_json_act_set_waypoint(jctx *x) { return pa_json_nav(x, NAV_GOAL); }

/* set_pred_trajectory {robot, trajectory: [[x, y], ...]} (at most 1024
 * points; [] clears it) */
json_t *pa_json_act_set_pred_trajectory(jctx *x) {
  return pa_json_nav(x, NAV_PRED);
}
