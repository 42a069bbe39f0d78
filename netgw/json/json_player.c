/* json_player.c - Player's simulation interface as JSON actions: the 3-D
 * pose get/set of a named object (planar: z, roll and pitch are 0) and
 * PAUSE as a toggle. */
#define _GNU_SOURCE
#include "json_int.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* A [x, y, theta] pose in d turned into [x, y, z, roll, pitch, yaw]. */
static void pose_to_3d(json_t *d) {
  json_t *p = json_object_get(d, "pose");
  if (!json_is_array(p) || json_array_size(p) != 3)
    return;
  json_t *yaw = json_array_get(p, 2);
  json_incref(yaw);
  json_array_remove(p, 2);
  for (int i = 0; i < 3; i++)
    json_array_append_new(p, json_real(0));
  json_array_append_new(p, yaw);
}

json_t *pa_json_act_get_pose3d(jctx *x) {
  json_t *d = pa_json_act_get_pose(x);
  if (d)
    pose_to_3d(d);
  return d;
}

json_t *pa_json_act_set_pose3d(jctx *x) {
  json_t *v = json_object_get(x->data, "pose");
  if (!json_is_array(v) || json_array_size(v) != 6)
    return pa_json_fail(x, PA_ERR_INVALID_ACTION_SHAPE,
                        "data.pose is required: [x, y, z, roll, pitch, yaw]");
  return pa_json_act_set_pose(x);
}

json_t *pa_json_done_set_pose3d(jctx *x, const pa_reply *r) {
  json_t *d = pa_json_done_set_pose(x, r);
  if (d)
    pose_to_3d(d);
  return d;
}

/* Player's PAUSE: pause if running, resume if paused (as of the newest
 * tick; two toggles in flight each see the state before them). */
json_t *pa_json_act_toggle_pause(jctx *x) {
  const pa_tick *t = pa_gw_latest(x->c->g);
  if (!t)
    return pa_json_fail(x, PA_ERR_BUSY,
                        "the simulator has not written a tick yet");
  pa_cmd cmd;
  memset(&cmd, 0, sizeof cmd);
  cmd.op = (t->flags & PA_TICK_PAUSED) ? PA_OP_RESUME : PA_OP_PAUSE;
  return pa_json_wait_for_sim(x, &cmd, 0);
}

json_t *pa_json_done_toggle_pause(jctx *x, const pa_reply *r) {
  (void)x;
  json_t *d = pa_json_tick(r);
  json_object_set_new(d, "paused", json_boolean(r->op == PA_OP_PAUSE));
  return d;
}
