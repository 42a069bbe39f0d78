/* sim_opts.c - pa-sim's flag table: one row per flag (name, field, type,
 * range, default, help) and the checks that span several flags. pa-sim's
 * main, the launcher (`playarea`) and the docs test all read these rows. */
#include "pa_sim.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static const char *const simd_names[PA_SIM_SIMD_COUNT] = {
    "auto", "avx512", "avx2", "portable", "scalar"};

const char *pa_sim_simd_name(pa_sim_simd p) {
  return (unsigned)p < PA_SIM_SIMD_COUNT ? simd_names[p] : "?";
}

int pa_sim_simd_parse(const char *name, pa_sim_simd *p) {
  for (int i = 0; i < PA_SIM_SIMD_COUNT; i++)
    if (name && strcmp(name, simd_names[i]) == 0) {
      *p = (pa_sim_simd)i;
      return 0;
    }
  return -1;
}

char pa_sim_ssl_world_division(const char *world) {
  if (!world)
    return 0;
  if (!strcmp(world, "ssl-a"))
    return 'A';
  if (!strcmp(world, "ssl-b"))
    return 'B';
  return 0;
}

#define ROW(FIELD, NAME, TYPE, MIN, MAX, DEF, HELP)                            \
  PA_OPT_ROW(pa_sim_args, FIELD, NAME, TYPE, MIN, MAX, DEF, NULL, HELP)
#define STR(FIELD, NAME, TYPE, DEF, HELP)                                      \
  PA_OPT_ROW(pa_sim_args, FIELD, NAME, TYPE, 0, -1, 0, DEF, HELP)

static const pa_opt_row rows[] = {
    {STR(def.instance, "instance", PA_OPT_STRBUF, "p9000",
         "shared-memory instance name")},
    {STR(map.world, "world", PA_OPT_STR, NULL,
         "world file: map, robots, obstacles (docs/world-format.md); "
         "ssl-a / ssl-b = the built-in RoboCup SSL fields (docs/ssl.md)")},
    {STR(map.map_yaml, "map_yaml", PA_OPT_STR, NULL,
         "ROS map_server map.yaml ('' = use --map_image)")},
    {STR(map.map_image, "map_image", PA_OPT_STR, NULL,
         "map image, with --map_yaml ''")},
    {ROW(map.map_resolution, "map_resolution", PA_OPT_DOUBLE, 1e-6, 1e6, 0.05,
         "[m/pixel] of --map_image")},
    {ROW(map.map_origin_x, "map_origin_x", PA_OPT_DOUBLE, -1e9, 1e9, 0,
         "[m] x of --map_image's bottom-left pixel")},
    {ROW(map.map_origin_y, "map_origin_y", PA_OPT_DOUBLE, -1e9, 1e9, 0,
         "[m] y of --map_image's bottom-left pixel")},
    {ROW(map.map_negate, "map_negate", PA_OPT_INT, 0, 1, 0,
         "1 = dark pixels are free (as map_server)")},
    {ROW(map.map_occupied_thresh, "map_occupied_thresh", PA_OPT_DOUBLE, 0, 1,
         0.65, "occupied above this darkness")},
    {ROW(map.map_free_thresh, "map_free_thresh", PA_OPT_DOUBLE, 0, 1, 0.196,
         "free below this darkness (< --map_occupied_thresh)")},
    {STR(map.map_unknown, "map_unknown", PA_OPT_STR, NULL,
         "blocked|free: how unknown map cells act (unset = the world file's "
         "unknown_blocks, blocked by default)")},
    {STR(map.robot_pose, "robot_pose", PA_OPT_STR, NULL,
         "x,y,yaw [m, m, rad]: robot 0's start pose (unset = the world "
         "file's, else the free pose nearest (0, 0))")},
    {ROW(def.control_hz, "control_hz", PA_OPT_DOUBLE, 1, 100000, 200,
         "[Hz] physics rate")},
    {ROW(def.scan_hz, "scan_hz", PA_OPT_DOUBLE, 0.01, 100000, 10,
         "[Hz] laser scans")},
    {ROW(def.seed, "seed", PA_OPT_U64, 0, 9.2e18, 0, "noise seed")},
    {ROW(def.speed, "speed", PA_OPT_DOUBLE, 0, 1e6, 1,
         "time scale (0 = as fast as possible)")},
    {ROW(def.paused, "paused", PA_OPT_FLAG, 0, -1, 0,
         "start paused (lockstep with step)")},
    {ROW(def.ghost_robots, "ghost_robots", PA_OPT_FLAG, 0, -1, 0,
         "robots neither collide with nor see each other in scans "
         "(independent RL episodes in one world)")},
    {ROW(def.laser_beams, "laser_beams", PA_OPT_U32, 1, 65536, 360,
         "beams per 360 deg scan"),
     .tag = PA_SIM_FORCE_LASER_BEAMS},
    {ROW(def.laser_range_min, "laser_range_min", PA_OPT_DOUBLE, 0, 1000, 0.15,
         "[m] (< --laser_range_max)"),
     .tag = PA_SIM_FORCE_LASER_RANGE_MIN},
    {ROW(def.laser_range_max, "laser_range_max", PA_OPT_DOUBLE, 0.01, 1000, 12,
         "[m]"),
     .tag = PA_SIM_FORCE_LASER_RANGE_MAX},
    {ROW(def.laser_noise, "laser_noise", PA_OPT_DOUBLE, 0, 100, 0,
         "[m] Gaussian sigma"),
     .tag = PA_SIM_FORCE_LASER_NOISE},
    {ROW(def.camera_width, "camera_width", PA_OPT_U32, 1, 4096, 640,
         "[px] head camera"),
     .tag = PA_SIM_FORCE_CAMERA_WIDTH},
    {ROW(def.camera_height, "camera_height", PA_OPT_U32, 1, 4096, 480,
         "[px] head camera"),
     .tag = PA_SIM_FORCE_CAMERA_HEIGHT},
    {ROW(def.camera_fov, "camera_fov_deg", PA_OPT_DOUBLE, 1, 179, 60,
         "[deg] horizontal field of view"),
     .scale = M_PI / 180.0, .tag = PA_SIM_FORCE_CAMERA_FOV},
    {ROW(
        def.robots, "robots", PA_OPT_U32, 1, 100000, 1,
        "at least this many robots (extras on the free poses nearest (0, 0))")},
    {ROW(def.odom_error[0], "odom_error_x", PA_OPT_DOUBLE, 0, 1, 0,
         "odometry error ratio, forward (Stage-like, seeded)")},
    {ROW(def.odom_error[1], "odom_error_y", PA_OPT_DOUBLE, 0, 1, 0,
         "odometry error ratio, sideways")},
    {ROW(def.odom_error[2], "odom_error_theta", PA_OPT_DOUBLE, 0, 1, 0,
         "odometry error ratio, rotation")},
    {ROW(def.threads, "threads", PA_OPT_U32, 0, 64, 0,
         "threads casting the scans of a tick (0 = auto: <= 2 for <= 8 "
         "robots, else online CPUs up to 8)")},
    {ROW(def.realtime, "realtime", PA_OPT_FLAG, 0, -1, 0,
         "pa-sim: SCHED_FIFO + mlockall, --spin_us 300 (needs CAP_SYS_NICE; "
         "best effort)")},
    {ROW(def.spin_us, "spin_us", PA_OPT_I32, -1, 2000, -1,
         "[us] spin before each deadline (-1 = auto: the machine's wake-up "
         "lateness, at most 250 us, 5-25% of the period; 0 = never; 300 with "
         "--realtime)")},
    {STR(def.dataset_dir, "dataset_dir", PA_OPT_STRBUF, "",
         "export_dataset {name} writes recordings under this directory, "
         "created if missing ('' = off; export_dir goes under --data_dir)")},
    {STR(def.data_dir, "data_dir", PA_OPT_STR, NULL,
         "set_map / set_scenario read, save_snapshot_json / save_world / "
         "export_dataset write files only under this directory, created if "
         "missing "
         "(unset or '' = pa-sim's working directory)")},
    {STR(simd, "simd", PA_OPT_STRBUF, "auto",
         "ray caster path: auto|avx512|avx2|portable|scalar (the same ranges "
         "on every path; auto = the fastest this CPU has)")},
    {ROW(def.ssl_robots, "ssl_robots", PA_OPT_U32, 0, 16, 0,
         "robots per team of --world ssl-a / ssl-b (0 = 11 in A, 6 in B)")},
    {STR(dynamics, "dynamics", PA_OPT_STRBUF, "world",
         "robots' bodies: world (as the world file says: kinematic unless "
         "it sets dynamics) or dynamic (every robot a dynamic body that "
         "takes forces, OceanSim's: max_force 200 N where the world leaves "
         "the 40 N default, thrusters port and starboard of 100 N where it "
         "declares none)")},
    {ROW(def.ssl_cmd_timeout_ms, "ssl_command_timeout_ms", PA_OPT_U32, 0,
         3600000, 100,
         "[ms] of sim time an SSL robot keeps the last command of its team "
         "port; then it stops, dribbler off, kicker disarmed (0 = keeps it)")},
};

static int finish(void *args, const bool *given, char *err, size_t err_sz) {
  pa_sim_args *a = args;
  /* Given on the command line: wins over a world file's robots even at the
   * built-in default value. */
  for (size_t k = 0; k < sizeof rows / sizeof rows[0]; k++)
    if (given[k])
      a->def.force |= rows[k].tag;
  if (a->def.laser_range_min >= a->def.laser_range_max) {
    snprintf(err, err_sz,
             "--laser_range_min: %g must be below --laser_range_max %g",
             a->def.laser_range_min, a->def.laser_range_max);
    return -1;
  }
  if (pa_sim_simd_parse(a->simd, &a->def.simd) != 0) {
    snprintf(err, err_sz,
             "--simd: '%s' is not auto|avx512|avx2|portable|scalar", a->simd);
    return -1;
  }
  if (!pa_sim_simd_cpu_has(a->def.simd)) {
    snprintf(err, err_sz, "--simd: this CPU lacks the %s instructions",
             a->simd);
    return -1;
  }
  if (!strcmp(a->dynamics, "dynamic")) {
    a->def.dynamics = PA_DYN_DYNAMIC;
  } else if (strcmp(a->dynamics, "world")) {
    snprintf(err, err_sz, "--dynamics: '%s' is not world or dynamic",
             a->dynamics);
    return -1;
  }
  if (a->map.map_free_thresh >= a->map.map_occupied_thresh) {
    snprintf(err, err_sz,
             "--map_free_thresh: %g must be below --map_occupied_thresh %g",
             a->map.map_free_thresh, a->map.map_occupied_thresh);
    return -1;
  }
  return 0;
}

static const pa_opt_table table = {
    .prog = "pa-sim",
    .summary = "The playarea physics process: robots, collisions, odometry, "
               "laser, fixed-rate loop.",
    .rows = rows,
    .n = sizeof rows / sizeof rows[0],
    .args_size = sizeof(pa_sim_args),
    .finish = finish,
};

const pa_opt_table *pa_sim_opts(void) { return &table; }
