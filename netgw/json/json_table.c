/* json_table.c - the JSON action table: one row per action (name, envelope
 * types, handler, completion, reply size, flags), and the small session and
 * sim_control actions. Adding an action: a row here and its handler. */
#define _GNU_SOURCE
#include "json_int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static json_t *pa_json_act_get_status(jctx *x) {
  pa_netgw *g = x->c->g;
  const pa_tick *t = pa_gw_latest(g);
  json_t *d = json_object();
  json_object_set_new(d, "tick", json_integer(t ? (json_int_t)t->tick : 0));
  x->sim_time = t ? t->sim_time : 0;
  json_object_set_new(d, "sim_time", json_real(x->sim_time));
  json_object_set_new(d, "paused",
                      json_boolean(t && (t->flags & PA_TICK_PAUSED)));
  json_object_set_new(d, "speed", json_real(t ? t->speed : 0));
  json_object_set_new(d, "control_hz", json_real(g->ctl->control_hz));
  json_object_set_new(d, "scan_hz", json_real(g->ctl->scan_hz));
  json_object_set_new(d, "feedback_hz", json_real(g->def.feedback_hz));
  json_object_set_new(d, "robot_count", json_integer(g->ctl->robot_count));
  json_object_set_new(d, "obstacle_count",
                      json_integer(g->ctl->obstacle_count));
  json_object_set_new(d, "clients", json_integer(g->n_clients));
  json_object_set_new(d, "sim_ready",
                      json_boolean(g->ctl->health[PA_PROC_SIM].ready));
  json_object_set_new(d, "status", json_string(pa_json_conn_status(x->c)));
  json_t *sp = pa_json_spectator_status(g);
  json_object_update(d, sp);
  json_decref(sp);
  return d;
}

static json_t *pa_json_act_auth(jctx *x) {
  const char *tok = NULL;
  pa_netgw *g = x->c->g;
  if (pa_json_str(x, "token", PA_NETGW_TOKEN_MAX, &tok) < 0)
    return NULL;
  if (g->token[0] && (!tok || !pa_gw_auth_try(x->c, tok)))
    return pa_json_fail(x, PA_ERR_NOT_AUTHORIZED, "wrong token");
  x->c->authed = true;
  return json_object();
}

static json_t *pa_json_act_ping(jctx *x) {
  (void)x;
  json_t *d = json_object();
  json_object_set_new(d, "pong", json_true());
  return d;
}

static json_t *pa_json_act_get_version(jctx *x) {
  (void)x;
  json_t *d = json_object();
  json_object_set_new(d, "version", json_string(PA_VERSION));
  json_object_set_new(d, "protocol_version", json_integer(2));
  json_object_set_new(d, "shm_layout_version",
                      json_integer(PA_SHM_LAYOUT_VERSION));
  return d;
}

/* A sim_control op without arguments. */
static json_t *sim_op(jctx *x, uint32_t op) {
  pa_cmd cmd;
  memset(&cmd, 0, sizeof cmd);
  cmd.op = op;
  return pa_json_wait_for_sim(x, &cmd, 0);
}

static json_t *pa_json_act_pause(jctx *x) { return sim_op(x, PA_OP_PAUSE); }
static json_t *pa_json_act_resume(jctx *x) { return sim_op(x, PA_OP_RESUME); }
static json_t *pa_json_act_reset(jctx *x) { return sim_op(x, PA_OP_RESET); }

static json_t *pa_json_act_step_n(jctx *x) {
  long long steps = 1;
  if (pa_json_int(x, "steps", 1, PA_NETGW_STEP_MAX, &steps) < 0)
    return NULL;
  pa_cmd cmd;
  memset(&cmd, 0, sizeof cmd);
  cmd.op = PA_OP_STEP;
  cmd.step.ticks = (uint32_t)steps;
  return pa_json_wait_for_sim(x, &cmd, 0);
}

static json_t *pa_json_act_set_time_scale(jctx *x) {
  double f = 1;
  int r = pa_json_num(x, "scale", &f);
  if (r == 0)
    r = pa_json_num(x, "factor", &f);
  if (r == 0)
    pa_json_fail(x, PA_ERR_INVALID_MESSAGE,
                 "data.scale is required (0 = as fast "
                 "as possible)");
  if (r <= 0)
    return NULL;
  if (f < 0 || f > PA_NETGW_SPEED_MAX)
    return pa_json_fail(x, PA_ERR_INVALID_MESSAGE,
                        "data.scale %g is out of range [0, %g]", f,
                        PA_NETGW_SPEED_MAX);
  pa_cmd cmd;
  memset(&cmd, 0, sizeof cmd);
  cmd.op = PA_OP_SPEED;
  cmd.speed.factor = f;
  return pa_json_wait_for_sim(x, &cmd, 0);
}

/* ---- the action table -------------------------------------------------------
 * One row per action. Adding one: a row here and its handler. */

#define CMD JT_COMMAND
#define CTL (JT_COMMAND | JT_SIM_CONTROL) /* sim_control, also as command */
/* The handler of action `name` is pa_json_act_<name>. */
#define ROW(name, types, done, cost, flags, keys)                              \
  { #name, types, pa_json_act_##name, done, cost, flags, keys }
#define DONE(name) pa_json_done_##name
#define COST(name) pa_json_cost_##name

static const jaction actions[] = {
    /* name, envelope types, completion, reply size bound, flags, data keys */
    ROW(get_state, CMD, NULL, COST(state), JF_ROBOT | JF_STATE, "robot"),
    ROW(get_sensors, CMD, NULL, COST(sensors), JF_ROBOT | JF_STATE, "robot"),
    ROW(step, CMD, DONE(step), COST(state), JF_ROBOT | JF_SIM | JF_STATE,
        "robot steps v vx vy w head force thrusters"),
    ROW(step_batch, CMD, DONE(step_batch), COST(step_batch), JF_SIM | JF_STATE,
        "robots robots_b64 robots_range actions steps binary observe "
        "actions_b64 forces beams"),
    ROW(set_velocity, CMD, NULL, NULL, JF_ROBOT, "robot v vx vy w head"),
    ROW(set_velocity_local, CMD, NULL, NULL, JF_ROBOT,
        "robot forward left angular head"),
    ROW(set_velocity_global, CMD, NULL, NULL, JF_ROBOT,
        "robot x y angular head"),
    ROW(set_wheels, CMD, NULL, NULL, JF_ROBOT, "robot left right head"),
    ROW(stop, CMD, NULL, NULL, JF_ROBOT, "robot"),
    ROW(get_pose, CMD, NULL, NULL, 0, "name robot"),
    ROW(set_pose, CMD, DONE(set_pose), NULL, JF_SIM,
        "name robot pose v_x v_y v_angular"),
    ROW(subscribe, CMD, NULL, NULL, 0, "channel robot udp_port"),
    ROW(unsubscribe, CMD, NULL, NULL, 0, "channel robot udp_port"),
    ROW(list_robots, CMD, NULL, COST(list_robots), 0, ""),
    ROW(spawn_robot, CMD, DONE(spawn_robot), NULL, JF_SIM,
        "name pose radius drive dynamics"),
    ROW(remove_robot, CMD, DONE(remove_robot), NULL, JF_ROBOT | JF_SIM,
        "robot"),
    ROW(spawn_obstacle, CMD, NULL, NULL, JF_SIM,
        "name shape pose size radius height"),
    ROW(remove_obstacle, CMD, NULL, NULL, JF_SIM, "name"),
    ROW(list_obstacles, CMD, NULL, COST(list_obstacles), 0, ""),
    ROW(get_map_info, CMD, NULL, NULL, 0, ""),
    ROW(get_terrain_grid, CMD, NULL, COST(get_terrain_grid), 0,
        "inflation stride threshold unknown_blocks cell_size inflation_radius "
        "include_static_obstacles include_dynamic_agents format auv_y"),
    ROW(get_property, CMD, NULL, NULL, 0, "name robot property index"),
    ROW(set_property, CMD, DONE(set_property), NULL, JF_SIM,
        "name robot property value index"),
    ROW(save_snapshot, CMD, DONE(snapshot), NULL, JF_SIM, "name"),
    ROW(load_snapshot, CMD, DONE(snapshot), NULL, JF_SIM, "name"),
    ROW(set_map, CMD, DONE(map), NULL, JF_SIM, "map_yaml map"),
    ROW(generate_map, CMD, DONE(map), NULL, JF_SIM,
        "width height resolution seed rooms clutter"),
    ROW(set_scenario, CMD, DONE(set_scenario), NULL, JF_SIM,
        "world scenario seed"),
    ROW(set_nav_path, CMD, NULL, NULL, 0, "robot path"),
    ROW(set_waypoints, CMD, NULL, NULL, 0, "robot waypoints"),
    ROW(clear_nav, CMD, NULL, NULL, 0, "robot"),
    ROW(export_dataset, CMD, DONE(export_dataset), COST(export_dataset), JF_SIM,
        "name seconds ticks export_dir render_image pack_dataset robot wait "
        "overwrite"),
    ROW(auth, CMD, NULL, NULL, JF_NO_AUTH, "token"),
    ROW(ping, CMD, NULL, NULL, 0, ""),
    ROW(get_version, CMD, NULL, NULL, 0, ""),
    ROW(pause, CTL, NULL, NULL, JF_SIM, ""),
    ROW(resume, CTL, NULL, NULL, JF_SIM, ""),
    ROW(reset, CTL, NULL, NULL, JF_SIM, ""),
    ROW(step_n, CTL, NULL, NULL, JF_SIM, "steps"),
    ROW(set_time_scale, CTL, NULL, NULL, JF_SIM, "scale factor"),
    ROW(get_status, CTL, NULL, NULL, 0, ""),
    ROW(get_pose3d, CMD, NULL, NULL, 0, "name robot"),
    ROW(set_pose3d, CMD, DONE(set_pose3d), NULL, JF_SIM, "name robot pose"),
    ROW(toggle_pause, CTL, DONE(toggle_pause), NULL, JF_SIM, ""),
    ROW(save_snapshot_json, CMD, DONE(snapshot_json), NULL, JF_SIM,
        "path overwrite"),
    ROW(load_snapshot_json, CMD, DONE(snapshot_json), NULL, JF_SIM, "path"),
    ROW(save, CTL, DONE(snapshot_json), NULL, JF_SIM, "path overwrite"),
    ROW(save_world, CMD, DONE(snapshot_json), NULL, JF_SIM, "path overwrite"),
    ROW(list_scenarios, CMD, NULL, NULL, 0, ""),
    ROW(set_waypoint, CMD, NULL, NULL, 0, "robot waypoint"),
    ROW(set_pred_trajectory, CMD, NULL, NULL, 0, "robot trajectory"),
    ROW(hibernate, CMD, NULL, NULL, 0, ""),
    ROW(wakeup, CMD, NULL, NULL, 0, ""),
/* mesh, height map and instanced visuals (json_visual_geom.c) */
#define GEOM_KEYS                                                              \
  " file vertices indices vertex_colors samples heights colormap shape "       \
  "positions orientations scales colors"
    ROW(add_visual, CMD, DONE(add_visual), NULL, JF_LENIENT,
        "name type position orientation yaw size color visible text points "
        "points_b64 point_format camera_visible" GEOM_KEYS),
    ROW(update_visual, CMD, DONE(update_visual), NULL, JF_LENIENT,
        "name position orientation yaw size color visible text points "
        "points_b64 point_format append camera_visible" GEOM_KEYS),
    ROW(remove_visual, CMD, NULL, NULL, 0, "name"),
    ROW(clear_visuals, CMD, NULL, NULL, 0, ""),
    ROW(list_visuals, CMD, NULL, COST(list_visuals), 0, ""),
    ROW(set_camera, CMD, NULL, NULL, 0, "position look_at width height"),
    ROW(camera_batch, CMD, NULL, NULL, 0, "width height robots_range tick"),
    ROW(focus_on, CMD, NULL, NULL, 0, "object"),
    ROW(request_screenshot, CMD, NULL, NULL, 0, "name overwrite"),
    ROW(start_recording_video, CMD, NULL, NULL, 0, "name fps frames overwrite"),
    ROW(stop_recording_video, CMD, NULL, NULL, 0, ""),
#define VIS_KEYS                                                               \
  "name position orientation yaw size color visible camera_visible"
#define PTS_KEYS VIS_KEYS " points points_b64 point_format"
    ROW(add_visual_sphere, CMD, NULL, NULL, JF_LENIENT, VIS_KEYS),
    ROW(add_visual_box, CMD, NULL, NULL, JF_LENIENT, VIS_KEYS),
    ROW(add_visual_cylinder, CMD, NULL, NULL, JF_LENIENT, VIS_KEYS),
    ROW(add_visual_capsule, CMD, NULL, NULL, JF_LENIENT, VIS_KEYS),
    ROW(add_visual_arrow, CMD, NULL, NULL, JF_LENIENT, VIS_KEYS),
    ROW(add_visual_polyline, CMD, NULL, NULL, JF_LENIENT, PTS_KEYS),
    ROW(add_point_cloud, CMD, NULL, NULL, JF_LENIENT, PTS_KEYS),
    ROW(add_visual_mesh, CMD, DONE(add_visual_mesh), NULL, JF_LENIENT,
        VIS_KEYS " file vertices indices vertex_colors"),
    ROW(add_visual_heightmap, CMD, NULL, NULL, JF_LENIENT,
        VIS_KEYS " samples heights colormap"),
    ROW(add_instanced_visuals, CMD, NULL, NULL, JF_LENIENT,
        VIS_KEYS " shape positions orientations scales colors"),
#undef GEOM_KEYS
#undef VIS_KEYS
#undef PTS_KEYS
    ROW(kick, CMD, DONE(ssl), NULL, JF_ROBOT | JF_SIM, "robot speed angle"),
    ROW(set_dribbler, CMD, DONE(ssl), NULL, JF_ROBOT | JF_SIM, "robot rpm"),
    ROW(teleport_ball, CMD, DONE(teleport_ball), NULL, JF_SIM,
        "position velocity roll present"),
    ROW(get_ball, CMD, NULL, NULL, 0, ""),
    ROW(get_ssl_info, CMD, NULL, NULL, 0, ""),
    ROW(record_mcap, CMD, NULL, NULL, 0, "path topics seconds"),
    ROW(stop_record_mcap, CMD, NULL, NULL, 0, ""),
    ROW(foxglove_info, CMD, NULL, NULL, 0, ""),
    ROW(replay_mcap, CMD, DONE(replay_mcap), NULL, JF_SIM, "path"),
    ROW(set_force, CMD, NULL, NULL, JF_ROBOT | JF_SIM, "robot force"),
    ROW(set_force_world, CMD, NULL, NULL, JF_ROBOT | JF_SIM, "robot force"),
    ROW(set_force_body, CMD, NULL, NULL, JF_ROBOT | JF_SIM, "robot force"),
    ROW(set_body_wrench, CMD, NULL, NULL, JF_ROBOT | JF_SIM, "robot wrench"),
    ROW(set_body_velocity, CMD, NULL, NULL, JF_ROBOT, "robot velocity"),
    ROW(set_thrust, CMD, NULL, NULL, JF_ROBOT | JF_SIM, "robot thrusters"),
    ROW(set_thrusters, CMD, NULL, NULL, JF_ROBOT | JF_SIM, "robot thrusters"),
    ROW(apply_force, CMD, NULL, NULL, JF_ROBOT | JF_SIM,
        "robot force point frame seconds"),
    ROW(apply_torque, CMD, NULL, NULL, JF_ROBOT | JF_SIM,
        "robot torque seconds"),
    ROW(spawn_agent, CMD, DONE(spawn_agent), NULL, JF_SIM,
        "name shape pose size radius behaviour speed velocity waypoints goal"),
    ROW(move_agent, CMD, NULL, NULL, JF_SIM,
        "name agent pose speed velocity waypoints goal"),
    ROW(remove_agent, CMD, NULL, NULL, JF_SIM, "name agent"),
    ROW(clear_agents, CMD, DONE(clear_agents), NULL, JF_SIM, ""),
    ROW(get_agents, CMD, NULL, COST(get_agents), 0, ""),
};

#undef CMD
#undef CTL
#undef ROW
#undef DONE
#undef COST

#define N_ACTIONS (sizeof actions / sizeof actions[0])

int pa_json_action_id(const jaction *a) { return (int)(a - actions); }

const jaction *pa_json_action_at(int id) {
  return id >= 0 && (size_t)id < N_ACTIONS ? &actions[id] : NULL;
}

const char *pa_json_action_name(int i) {
  return i >= 0 && (size_t)i < N_ACTIONS ? actions[i].name : NULL;
}

const jaction *pa_json_action_find(const char *name) {
  for (size_t i = 0; i < N_ACTIONS; i++)
    if (!strcmp(name, actions[i].name))
      return &actions[i];
  return NULL;
}

/* ---- the action reference ---------------------------------------------------
 * docs/actions.md's table, from the rows (a test compares the two). */

/* The keys as `a` `b` (— for none). */
static void md_keys(FILE *f, const char *keys) {
  if (!*keys) {
    fputs("—", f);
    return;
  }
  for (const char *p = keys; *p;) {
    size_t n = strcspn(p, " ");
    fprintf(f, "%s`%.*s`", p == keys ? "" : " ", (int)n, p);
    p += n;
    p += strspn(p, " ");
  }
}

void pa_netgw_actions_markdown(FILE *f) {
  fputs("| action | envelope types | data keys | waits for pa-sim | notes |\n"
        "|---|---|---|---|---|\n",
        f);
  for (size_t i = 0; i < N_ACTIONS; i++) {
    const jaction *a = &actions[i];
    fprintf(f, "| `%s` | ", a->name);
    fputs(a->types & JT_SIM_CONTROL ? "`command`, `sim_control`" : "`command`",
          f);
    fputs(" | ", f);
    md_keys(f, a->keys);
    fputs(a->flags & JF_SIM ? " | yes | " : " | no | ", f);
    const char *sep = "";
    if (a->flags & JF_ROBOT) {
      fputs("`robot` must name a robot", f);
      sep = "; ";
    }
    if (a->flags & JF_STATE) {
      fprintf(f, "%sreply type `state`", sep);
      sep = "; ";
    }
    if (a->flags & JF_NO_AUTH) {
      fprintf(f, "%sanswered before `auth`", sep);
      sep = "; ";
    }
    if (a->cost) {
      fprintf(f, "%sreply size checked first", sep);
      sep = "; ";
    }
    fputs(*sep ? " |\n" : "— |\n", f);
  }
}
