/* json_int.h - private to the JSON side of pa_netgw (json*.c): the action
 * table's row type, the request context handlers get, and what the files
 * share. json.c: envelope, output, batches; json_table.c: the table;
 * json_args.c: request fields and the pa-sim round trip; json_robot.c,
 * json_prop.c, json_world.c: the actions. */
#ifndef PA_JSON_INT_H
#define PA_JSON_INT_H

#include "netgw_int.h"

#include <stdarg.h>

/* its row in the front-end table */
extern const pa_frontend pa_fe_json;

/* json.c */
/* Handles one JSON line (may leave the client waiting for pa-sim). */
void pa_json_line(pa_client *c, const char *line, size_t len);
/* The sim answered (r) or the wait timed out (r == NULL). */
void pa_json_complete(pa_client *c, const pa_reply *r);
/* Releases what a waiting JSON request holds (client closing). */
void pa_json_release(pa_client *c);
/* A JSON error line for a line that never parsed. */
void pa_json_error_line(pa_client *c, pa_status st, const char *msg);
/* The name of action table row i, NULL past the last (tests walk it). */
const char *pa_json_action_name(int i);

/* json_visual.c, at start: repairs a visual block a dead pa-netgw left
 * mid-update. */
void pa_json_visual_recover(pa_netgw *g);

/* Envelope types an action answers (request "type"). */
enum { JT_COMMAND = 1u << 0, JT_SIM_CONTROL = 1u << 1 };

/* What the dispatcher does around an action's handler. */
enum {
  JF_NO_AUTH = 1u << 0, /* answered before a --token client authenticated */
  JF_ROBOT = 1u << 1, /* data.robot is looked up into x->info / x->idx first */
  JF_SIM = 1u << 2,   /* may wait for pa-sim; `done` builds the reply */
  JF_STATE = 1u << 3, /* answered with type "state", not "response" */
  /* RaisimServer's visuals: an unknown key of data is ignored (as the seed
   * says) and named in the reply's data.warnings, not refused */
  JF_LENIENT = 1u << 4,
};

struct jctx;

/* One JSON action: the whole of what the dispatcher knows about it. */
typedef struct jaction {
  const char *name;
  unsigned types; /* JT_*: envelope types that may carry it */
  /* Builds the response data, returns NULL with the error set, or JPENDING
   * after pa_json_wait_for_sim(). */
  json_t *(*run)(struct jctx *x);
  /* With JF_SIM: the response data once pa-sim answered ok (NULL: {tick}). */
  json_t *(*done)(struct jctx *x, const pa_reply *r);
  /* Upper bound of the reply's size in bytes, checked before it is built
   * (NULL: small, PA_JSON_SMALL_REPLY). */
  size_t (*cost)(struct jctx *x);
  unsigned flags; /* JF_* */
  /* The data keys it takes, space-separated ("" = none): any other key is
   * an error by name (a typo, or a 3-D field a planar world lacks). */
  const char *keys;
} jaction;

typedef struct jctx {
  pa_client *c;
  json_t *req;
  json_t *data; /* request data (borrowed), an object */
  const jaction *act;
  pa_robot_info info; /* JF_ROBOT: the robot data.robot names */
  uint32_t idx;
  double sim_time; /* of the response; < 0: the newest tick's */
  pa_status st;
  char msg[256];
} jctx;

/* [bytes] what a reply without a size bound (a NULL `cost`) may take. */
#define PA_JSON_SMALL_REPLY 4096u
#define PA_JSON_AGENT_BYTES 384u /* an agent of get_agents / get_state */

/* Returned by a handler that left the client waiting for pa-sim. */
extern char pa_json_pending;
#define JPENDING ((json_t *)(void *)&pa_json_pending)

/* What pa_json_named_object found. */
enum { P_ROBOT = 1, P_OBSTACLE = 2 };
typedef struct {
  unsigned kind;       /* P_ROBOT or P_OBSTACLE */
  pa_robot_info ri;    /* kind P_ROBOT */
  pa_obstacle_info oi; /* kind P_OBSTACLE */
  uint32_t idx;
} pa_json_obj;

/* ---- json_table.c ---------------------------------------------------------*/

/* The row named so, or NULL. */
const jaction *pa_json_action_find(const char *name);
/* A row's index (a waiting client keeps it) and back. */
int pa_json_action_id(const jaction *a);
const jaction *pa_json_action_at(int id);

/* ---- json.c ---------------------------------------------------------------*/

/* The newest tick's sim time (0 before the first). */
double pa_json_now(pa_netgw *g);
/* A placeholder for scan ranges, spliced in as numbers when the reply is
 * written; NULL when out of memory. */
json_t *pa_json_ranges(pa_client *c, const float *r, uint32_t n);

/* ---- json_fast.c ----------------------------------------------------------*/

/* [bytes] room pa_json_fmt_real may write */
#define PA_JSON_REAL_MAX 32u
/* d as json_dumps writes json_real(d) at JSON_REAL_PRECISION(12) (the same
 * bytes); 0 when d is not finite (jansson has no such real). */
size_t pa_json_fmt_real(char *out, double d);
/* A scan range rounded to a micrometre ("3.5", "12", "0.000125", "null"
 * when not finite or over 1e9): at most 19 bytes. */
size_t pa_json_fmt_range(char *out, float f);
/* Writes the answered `step`'s reply (pa_json_done_step's, in one buffer,
 * no tree) and returns true; false when it is unusual (a batch, SSL, agents,
 * a string to escape, a non-finite number): nothing written, take the
 * general road. */
bool pa_json_step_fast(pa_client *c, json_t *req);
/* The line json_dumps(v, JSON_COMPACT | JSON_REAL_PRECISION(12)) writes and
 * its '\n', the same bytes, in a buffer reused until the next call (*n its
 * length); NULL where jansson's own dump is needed (a string past ASCII). */
const char *pa_json_dump_line(json_t *v, size_t *n);
/* Frees that buffer when a big reply grew it. */
void pa_json_fast_trim(void);

/* ---- json_lex.c -----------------------------------------------------------*/

/* A long base64 value of root.data that pa_json_load_line puts back
 * without lexing it (json_lex.c). */
typedef struct {
  const char *key; /* "actions_b64" or "robots_b64" */
  size_t at;       /* where `"key":"` begins */
  size_t v0, v1;   /* the value's text: line[v0..v1), '"' at v1 */
} lex_span;
/* The values of a line it takes that way (0..2, in the line's order). */
int pa_json_lex_spans(const char *line, size_t len, lex_span sp[2]);
/* json_loadb(line, len, JSON_REJECT_DUPLICATES, je), the same tree or error,
 * but a long base64 data.actions_b64 / data.robots_b64 is not lexed. */
json_t *pa_json_load_line(const char *line, size_t len, json_error_t *je);

/* ---- json_quick.c ---------------------------------------------------------*/

/* The tree json_loadb(line, len, JSON_REJECT_DUPLICATES) builds when the line
 * is an object of the plain kind requests are (ASCII strings without
 * escapes, short numbers), in one pass; NULL for anything else (jansson
 * then parses it and words its error). */
json_t *pa_json_quick_parse(const char *line, size_t len);

/* ---- json_args.c: request fields (1 found, 0 absent, -1 bad: error set) ---*/

/* pa_json_fail with the arguments as a va_list (for other failing
 * helpers): sets x's error. */
void pa_json_vfail(jctx *x, pa_status st, const char *fmt, va_list ap)
    __attribute__((format(printf, 3, 0)));
/* Sets x's error; returns NULL so a handler can `return pa_json_fail(...)`. */
json_t *pa_json_fail(jctx *x, pa_status st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Optional finite number. */
int pa_json_num(jctx *x, const char *key, double *out);
/* Optional integer in [lo, hi]. */
int pa_json_int(jctx *x, const char *key, long long lo, long long hi,
                long long *out);
/* Optional string of 1..max-1 bytes. */
int pa_json_str(jctx *x, const char *key, size_t max, const char **out);
/* Optional boolean. */
int pa_json_bool(jctx *x, const char *key, bool *out);
/* A required string: 0, or -1 (error set). */
int pa_json_need_str(jctx *x, const char *key, size_t max, const char **out);
/* A numeric vector of one of the allowed lengths (n2 = 0: only n1). */
int pa_json_vec(jctx *x, const char *key, size_t n1, size_t n2, double *out,
                size_t *n);
/* A required data.pose [x, y, theta]: 0, or -1. */
int pa_json_need_pose3(jctx *x, double p[3]);
/* rc == PA_GW_BUSY: sets busy and returns true. */
bool pa_json_lookup_busy(jctx *x, int rc);
/* data.robot (id or name), default the connection's robot: 0 or -1. */
int pa_json_robot(jctx *x, pa_robot_info *info, uint32_t *idx);
/* data.name (a robot or an obstacle) or data.robot: 0 or -1; *kind P_*. */
int pa_json_named_object(jctx *x, pa_json_obj *o);
/* An untorn malloc'd copy of the world's obstacles, *n of them, or NULL
 * (busy set). */
pa_obstacle_info *pa_json_obstacles_copy(jctx *x, uint32_t *n);
json_t *pa_json_vec3(double a, double b, double c);
/* {"count": its size, key: list} (list's reference taken). */
json_t *pa_json_counted(const char *key, json_t *list);
/* {"tick": the reply's tick} */
json_t *pa_json_tick(const pa_reply *r);
/* Pushes cmd for robot and leaves the client waiting (JPENDING), or NULL
 * (busy). Only rows with JF_SIM may. */
json_t *pa_json_wait_for_sim(jctx *x, pa_cmd *cmd, uint32_t robot);
/* Pushes a command nobody waits for: {"robot"}, or NULL (busy). */
json_t *pa_json_push_nowait(jctx *x, pa_cmd *cmd, uint32_t robot);

/* ---- json_robot.c ---------------------------------------------------------*/

json_t *pa_json_drive_name(const pa_robot_info *i);
/* A scan as JSON: seq, tick, sim_time (with_time), angles, limits, ranges. */
json_t *pa_json_scan(pa_client *c, const pa_scan *s, bool with_time);
/* Reply size bounds (the table's cost column). */
size_t pa_json_cost_list_robots(jctx *x);
size_t pa_json_cost_state(jctx *x);
size_t pa_json_cost_sensors(jctx *x);
json_t *pa_json_act_get_pose(jctx *x);
json_t *pa_json_act_set_pose(jctx *x);
json_t *pa_json_act_subscribe(jctx *x);
json_t *pa_json_act_unsubscribe(jctx *x);
json_t *pa_json_act_list_robots(jctx *x);
json_t *pa_json_act_spawn_robot(jctx *x);
json_t *pa_json_act_get_state(jctx *x);
json_t *pa_json_act_get_sensors(jctx *x);
json_t *pa_json_act_step(jctx *x);
json_t *pa_json_done_step(jctx *x, const pa_reply *r);
json_t *pa_json_act_set_velocity(jctx *x);
json_t *pa_json_act_set_velocity_local(jctx *x);
json_t *pa_json_act_set_velocity_global(jctx *x);
json_t *pa_json_act_set_wheels(jctx *x);
json_t *pa_json_act_stop(jctx *x);
json_t *pa_json_act_remove_robot(jctx *x);
json_t *pa_json_done_set_pose(jctx *x, const pa_reply *r);
json_t *pa_json_done_spawn_robot(jctx *x, const pa_reply *r);
json_t *pa_json_done_remove_robot(jctx *x, const pa_reply *r);

/* ---- json_batch.c ---------------------------------------------------------*/

size_t pa_json_cost_step_batch(jctx *x);
json_t *pa_json_act_step_batch(jctx *x);
json_t *pa_json_done_step_batch(jctx *x, const pa_reply *r);

/* ---- json_obs_block.c -----------------------------------------------------*/

/* The binary block of the robots ids[n]' states in t and newest scans (from
 * the scan ring when ring, else the gateway's cache; each as `sectors`
 * sectors when not 0: pa_obs_sectors) into *blk (malloc'd), *len bytes,
 * *beams the widest scan (sectors when any): 0, 1 when a scan read from
 * the ring was overwritten while copied (nothing returned), -1 out of
 * memory. */
int pa_json_obs_block(pa_netgw *g, const pa_tick *t, const uint32_t *ids,
                      size_t n, bool ring, uint32_t sectors, char **blk,
                      size_t *len, uint32_t *beams);

/* ---- json_prop.c ----------------------------------------------------------*/

json_t *pa_json_shape(const pa_obstacle_info *o);
/* An obstacle's radius (circle) or size (box), into j. */
void pa_json_extent(json_t *j, const pa_obstacle_info *o);
/* v within the range of pa_props.h row `row`; else the error set (false). */
bool pa_json_prop_in(jctx *x, int row, const char *what, double v);
json_t *pa_json_act_get_property(jctx *x);
json_t *pa_json_act_set_property(jctx *x);
json_t *pa_json_done_set_property(jctx *x, const pa_reply *r);

/* ---- json_world.c ---------------------------------------------------------*/

/* What pa_json_nav sets: the plan (path), waypoints, clears, OceanSim's
 * one goal waypoint (json_overlay.c) and a predicted trajectory. */
enum { NAV_PATH, NAV_WAYPOINTS, NAV_CLEAR, NAV_GOAL, NAV_PRED };
json_t *pa_json_nav(jctx *x, int mode);
/* Removes robot idx's drawings (a removed robot's must not pass on). */
void pa_json_nav_clear_robot(pa_netgw *g, uint32_t idx);
size_t pa_json_cost_list_obstacles(jctx *x);
size_t pa_json_cost_get_terrain_grid(jctx *x);
json_t *pa_json_act_list_obstacles(jctx *x);
json_t *pa_json_act_spawn_obstacle(jctx *x);
json_t *pa_json_act_set_map(jctx *x);
json_t *pa_json_act_set_nav_path(jctx *x);
json_t *pa_json_act_set_waypoints(jctx *x);
json_t *pa_json_act_clear_nav(jctx *x);
json_t *pa_json_act_export_dataset(jctx *x);
json_t *pa_json_act_set_scenario(jctx *x);
json_t *pa_json_act_generate_map(jctx *x);
json_t *pa_json_act_save_snapshot(jctx *x);
json_t *pa_json_act_load_snapshot(jctx *x);
json_t *pa_json_act_get_map_info(jctx *x);
json_t *pa_json_act_get_terrain_grid(jctx *x);
json_t *pa_json_act_remove_obstacle(jctx *x);
json_t *pa_json_done_snapshot(jctx *x, const pa_reply *r);
json_t *pa_json_done_export_dataset(jctx *x, const pa_reply *r);
json_t *pa_json_done_map(jctx *x, const pa_reply *r);
json_t *pa_json_done_set_scenario(jctx *x, const pa_reply *r);

/* ---- json_player.c --------------------------------------------------------*/

json_t *pa_json_act_get_pose3d(jctx *x);
json_t *pa_json_act_set_pose3d(jctx *x);
json_t *pa_json_done_set_pose3d(jctx *x, const pa_reply *r);
json_t *pa_json_act_toggle_pause(jctx *x);
json_t *pa_json_done_toggle_pause(jctx *x, const pa_reply *r);

/* ---- json_save.c ----------------------------------------------------------*/

json_t *pa_json_act_save_snapshot_json(jctx *x);
json_t *pa_json_act_load_snapshot_json(jctx *x);
json_t *pa_json_act_save(jctx *x);
json_t *pa_json_act_save_world(jctx *x);
json_t *pa_json_done_snapshot_json(jctx *x, const pa_reply *r);

/* ---- json_scenario.c ------------------------------------------------------*/

/* set_scenario with data.scenario (a built-in by name). */
json_t *pa_json_set_scenario_named(jctx *x);
/* Adds a named scenario's name, seed and description to set_scenario's
 * reply d (nothing for a world file). */
void pa_json_scenario_reply(jctx *x, json_t *d);
json_t *pa_json_act_list_scenarios(jctx *x);

/* ---- json_terrain.c -------------------------------------------------------*/

/* get_terrain_grid with any of OceanSim's keys (cell_size, ...). */
bool pa_json_terrain_is_oceansim(jctx *x);
/* ---- json_overlay.c: set_waypoint, set_pred_trajectory ---- */
json_t *pa_json_act_set_waypoint(jctx *x);
json_t *pa_json_act_set_pred_trajectory(jctx *x);
size_t pa_json_cost_terrain_oceansim(jctx *x);
/* json_dataset.c: export_dataset's reply bound (its image paths) */
size_t pa_json_cost_export_dataset(jctx *x);
json_t *pa_json_terrain_oceansim(jctx *x);
/* ---- json_visual.c --------------------------------------------------------*/

/* [m] the largest coordinate a visual or the spectator camera takes */
#define VIS_COORD_MAX 1e6

/* "rendering", "hibernating" or "terminating" (RaisimServer's Status). */
const char *pa_json_conn_status(const pa_client *c);
json_t *pa_json_act_hibernate(jctx *x);
json_t *pa_json_act_wakeup(jctx *x);
json_t *pa_json_act_add_visual(jctx *x);
json_t *pa_json_act_update_visual(jctx *x);
json_t *pa_json_act_remove_visual(jctx *x);
json_t *pa_json_act_clear_visuals(jctx *x);
json_t *pa_json_act_list_visuals(jctx *x);
size_t pa_json_cost_list_visuals(jctx *x);
json_t *pa_json_act_add_visual_sphere(jctx *x);
json_t *pa_json_act_add_visual_box(jctx *x);
json_t *pa_json_act_add_visual_cylinder(jctx *x);
json_t *pa_json_act_add_visual_capsule(jctx *x);
json_t *pa_json_act_add_visual_arrow(jctx *x);
json_t *pa_json_act_add_visual_polyline(jctx *x);
json_t *pa_json_act_add_point_cloud(jctx *x);
json_t *pa_json_act_add_visual_mesh(jctx *x);
json_t *pa_json_act_add_visual_heightmap(jctx *x);
json_t *pa_json_act_add_instanced_visuals(jctx *x);
/* The size a new visual of type t has when none is given. */
void pa_json_vis_default_size(uint32_t t, float s[3]);
/* json_visual_geom.c: the points of a mesh, height map or instanced visual
 * from the request (v: the visual as it will be, its grid, stride and
 * colormap set here; idx: its index in b, -1 when added): 1 with *pts
 * (malloc'd, *n), 0 when its points stay, -1 refused (error set), 2 while
 * a mesh file is decoded off the loop (pa_json_vis_mesh_file). */
int pa_json_vis_geom(jctx *x, const pa_visual_block *b, int idx, pa_visual *v,
                     pa_vis_point **pts, uint32_t *n);
/* A height map's colormap by number (pa_visual.colormap). */
const char *pa_json_vis_colormap_name(uint32_t c);
/* json_visual_mesh.c: data.file rel (.obj, .stl, .ply under --data_dir)
 * decoded into triangles' points: 0, or -1 (error set); 2 when the decoder
 * runs off the loop and the request waits for it (its row's done handler
 * runs the request again, and the points are then there). */
int pa_json_vis_mesh_file(jctx *x, const char *rel, pa_vis_point **pts,
                          uint32_t *n);
/* The client's decode in flight, if any: killed, freed. */
void pa_json_vis_mesh_cancel(pa_client *c);
json_t *pa_json_done_add_visual(jctx *x, const pa_reply *r);
json_t *pa_json_done_update_visual(jctx *x, const pa_reply *r);
json_t *pa_json_done_add_visual_mesh(jctx *x, const pa_reply *r);
/* ---- json_spectator.c -----------------------------------------------------*/
json_t *pa_json_act_set_camera(jctx *x);
json_t *pa_json_act_focus_on(jctx *x);
json_t *pa_json_act_request_screenshot(jctx *x);
json_t *pa_json_act_start_recording_video(jctx *x);
json_t *pa_json_act_stop_recording_video(jctx *x);
/* {"recording": {...}, "screenshot": {...}} for get_status. */
json_t *pa_json_spectator_status(pa_netgw *g);
/* ---- json_camera_batch.c --------------------------------------------------*/
json_t *pa_json_act_camera_batch(jctx *x);
/* ---- json_ssl.c -----------------------------------------------------------*/

/* The ball of an SSL tick (t->ssl != 0) as JSON. */
json_t *pa_json_ssl_ball(const pa_tick *t);
/* set_pose's v_x, v_y, v_angular: 1 and cmd a TELEPORT_MOVING to pose p
 * when any is given, 0 when none, -1 bad (error set). */
int pa_json_moving_pose(jctx *x, const double p[3], pa_cmd *cmd);
json_t *pa_json_act_kick(jctx *x);
json_t *pa_json_act_set_dribbler(jctx *x);
json_t *pa_json_act_teleport_ball(jctx *x);
json_t *pa_json_act_get_ball(jctx *x);
json_t *pa_json_act_get_ssl_info(jctx *x);
json_t *pa_json_done_ssl(jctx *x, const pa_reply *r);
json_t *pa_json_done_teleport_ball(jctx *x, const pa_reply *r);
/* ---- json_mcap.c ----------------------------------------------------------*/

json_t *pa_json_act_record_mcap(jctx *x);
json_t *pa_json_act_stop_record_mcap(jctx *x);
json_t *pa_json_act_foxglove_info(jctx *x);
json_t *pa_json_act_replay_mcap(jctx *x);
json_t *pa_json_done_replay_mcap(jctx *x, const pa_reply *r);
/* ---- json_force.c ---------------------------------------------------------*/

json_t *pa_json_act_set_force(jctx *x);
json_t *pa_json_act_set_force_world(jctx *x);
json_t *pa_json_act_set_force_body(jctx *x);
json_t *pa_json_act_set_body_wrench(jctx *x);
json_t *pa_json_act_set_body_velocity(jctx *x);
json_t *pa_json_act_set_thrust(jctx *x);
json_t *pa_json_act_set_thrusters(jctx *x);
json_t *pa_json_act_apply_force(jctx *x);
json_t *pa_json_act_apply_torque(jctx *x);
/* step's force / thrusters: pushes them (held, as set_force_world /
 * set_thrusters) ahead of the step; *drive = whether the step's velocities
 * go too. 0, or -1 with the error set. */
int pa_json_step_inputs(jctx *x, bool *drive);

/* ---- json_agents.c --------------------------------------------------------*/

json_t *pa_json_act_spawn_agent(jctx *x);
json_t *pa_json_done_spawn_agent(jctx *x, const pa_reply *r);
json_t *pa_json_act_move_agent(jctx *x);
json_t *pa_json_act_remove_agent(jctx *x);
json_t *pa_json_act_clear_agents(jctx *x);
json_t *pa_json_done_clear_agents(jctx *x, const pa_reply *r);
size_t pa_json_cost_get_agents(jctx *x);
json_t *pa_json_act_get_agents(jctx *x);
/* The world snapshot's agents as get_agents lists them (NULL: error set),
 * and about how many there are (for a reply's cost). */
json_t *pa_json_agents_list(jctx *x);
uint32_t pa_json_agents_count(pa_netgw *g);

#endif
