/* pa-sim: the physics process. options -> model, state, stack -> loop ->
 * cleanup. */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <sched.h>
#include <stdio.h>
#include <sys/mman.h>
#include <string.h>
#include <unistd.h>

#include "pa_map.h"
#include "pa_shm.h"
#include "pa_sim.h"
#include "pa_util.h"

static volatile sig_atomic_t stop_flag;

int main(int argc, char **argv) {
  int status = PA_EXIT_CONFIG;
  char err[512];
  const char *instance = "p9000", *dataset_dir = "";
  pa_map_flags mf = pa_map_flags_default();
  pa_sim_def d = pa_sim_def_default();
  long seed = 0, beams = d.laser_beams, robots = 1, threads = 0, spin_us = -1;
  long cam_w = d.camera_width, cam_h = d.camera_height;
  double fov_deg = 60;
  bool paused = false;
  pa_world world;
  pa_grid grid;
  pa_sim_model model;
  pa_sim_state state;
  pa_stack stack;
  bool have_world = false, have_grid = false, have_model = false,
       have_state = false, have_stack = false;
  memset(&world, 0, sizeof world);
  memset(&grid, 0, sizeof grid);
  memset(&stack, 0, sizeof stack);

  const pa_opt opts[] = {
      {"instance", PA_OPT_STR, &instance, 0, -1, "instance name"},
      {"dataset_dir", PA_OPT_STR, &dataset_dir, 0, -1, "export_dataset writes recordings here (\"\" = off)"},
      {"data_dir", PA_OPT_STR, &d.data_dir, 0, -1, "set_map / set_scenario read files only under this directory (\"\" = the working directory)"},
      {"world", PA_OPT_STR, &mf.world, 0, -1, "world file (map + robots + obstacles)"},
      {"map_yaml", PA_OPT_STR, &mf.map_yaml, 0, -1, "map.yaml (\"\" = use --map_image)"},
      {"map_image", PA_OPT_STR, &mf.map_image, 0, -1, "map image"},
      {"map_resolution", PA_OPT_DOUBLE, &mf.map_resolution, 1e-6, 1e6, "[m/pixel]"},
      {"map_origin_x", PA_OPT_DOUBLE, &mf.map_origin_x, -1e9, 1e9, "[m]"},
      {"map_origin_y", PA_OPT_DOUBLE, &mf.map_origin_y, -1e9, 1e9, "[m]"},
      {"map_negate", PA_OPT_INT, &mf.map_negate, 0, 1, "0 or 1"},
      {"map_occupied_thresh", PA_OPT_DOUBLE, &mf.map_occupied_thresh, 0, 1, "[0, 1]"},
      {"map_free_thresh", PA_OPT_DOUBLE, &mf.map_free_thresh, 0, 1, "[0, 1]"},
      {"control_hz", PA_OPT_DOUBLE, &d.control_hz, 1, 100000, "physics rate [Hz]"},
      {"scan_hz", PA_OPT_DOUBLE, &d.scan_hz, 0.01, 100000, "laser rate [Hz]"},
      {"seed", PA_OPT_INT, &seed, 0, 9.2e18, "noise seed"},
      {"speed", PA_OPT_DOUBLE, &d.speed, 0, 1e6, "time scale (0 = as fast as possible)"},
      {"paused", PA_OPT_FLAG, &paused, 0, -1, "start paused"},
      {"laser_beams", PA_OPT_INT, &beams, 1, 65536, "beams per 360 deg scan"},
      {"laser_range_min", PA_OPT_DOUBLE, &d.laser_range_min, 0, 1000, "[m]"},
      {"laser_range_max", PA_OPT_DOUBLE, &d.laser_range_max, 0.01, 1000, "[m]"},
      {"laser_noise", PA_OPT_DOUBLE, &d.laser_noise, 0, 100, "Gaussian sigma [m]"},
      {"camera_width", PA_OPT_INT, &cam_w, 1, 4096, "[px]"},
      {"camera_height", PA_OPT_INT, &cam_h, 1, 4096, "[px]"},
      {"camera_fov_deg", PA_OPT_DOUBLE, &fov_deg, 1, 179, "horizontal [deg]"},
      {"robots", PA_OPT_INT, &robots, 1, 100000, "at least this many robots (extras on free cells)"},
      {"odom_error_x", PA_OPT_DOUBLE, &d.odom_error[0], 0, 1, "odometry error ratio, forward"},
      {"odom_error_y", PA_OPT_DOUBLE, &d.odom_error[1], 0, 1, "odometry error ratio, sideways"},
      {"odom_error_theta", PA_OPT_DOUBLE, &d.odom_error[2], 0, 1, "odometry error ratio, rotation"},
      {"threads", PA_OPT_INT, &threads, 0, 64, "threads casting the scans of a tick (0 = auto: <= 2 for <= 8 robots, else online CPUs up to 8)"},
      {"realtime", PA_OPT_FLAG, &d.realtime, 0, -1, "SCHED_FIFO + mlockall + spin 300 us before each deadline (needs CAP_SYS_NICE; off by default)"},
      {"spin_us", PA_OPT_INT, &spin_us, -1, 2000, "[us] spin before each deadline (-1 = auto: the machine's wake-up lateness, at most 250 us, 5-25% of the period; 0 = never)"},
  };
  const size_t nopts = sizeof opts / sizeof opts[0];
  pa_log_init("pa-sim", PA_LOG_INFO);
  bool given[sizeof opts / sizeof opts[0]];
  int rc = pa_opt_parse_given(opts, nopts, argc, argv, NULL, 0, NULL, given,
                              err, sizeof err);
  if (rc == 1) {
    pa_opt_usage(stdout, "pa-sim [flags]",
                 "The playarea physics process: robots, collisions, odometry, "
                 "laser, fixed-rate loop.",
                 opts, nopts);
    return 0;
  }
  if (rc != 0) {
    pa_error("%s", err);
    goto out;
  }
  d.seed = (uint64_t)seed;
  d.paused = paused;
  d.laser_beams = (uint32_t)beams;
  d.robots = (uint32_t)robots;
  d.threads = (uint32_t)threads;
  d.spin_us = (int32_t)spin_us;
  snprintf(d.instance, sizeof d.instance, "%s", instance);
  if (strlen(dataset_dir) >= sizeof d.dataset_dir) {
    pa_error("--dataset_dir: at most %zu bytes", sizeof d.dataset_dir - 1);
    goto out;
  }
  snprintf(d.dataset_dir, sizeof d.dataset_dir, "%s", dataset_dir);
  d.camera_width = (uint32_t)cam_w;
  d.camera_height = (uint32_t)cam_h;
  d.camera_fov = fov_deg * M_PI / 180.0;
  /* Given on the command line: wins over a world file's robots even at the
   * built-in default value. */
  static const struct {
    const char *flag;
    uint32_t bit;
  } forced[] = {
      {"laser_beams", PA_SIM_FORCE_LASER_BEAMS},
      {"laser_range_min", PA_SIM_FORCE_LASER_RANGE_MIN},
      {"laser_range_max", PA_SIM_FORCE_LASER_RANGE_MAX},
      {"laser_noise", PA_SIM_FORCE_LASER_NOISE},
      {"camera_width", PA_SIM_FORCE_CAMERA_WIDTH},
      {"camera_height", PA_SIM_FORCE_CAMERA_HEIGHT},
      {"camera_fov_deg", PA_SIM_FORCE_CAMERA_FOV},
  };
  for (size_t k = 0; k < nopts; k++)
    for (size_t f = 0; f < sizeof forced / sizeof forced[0]; f++)
      if (given[k] && !strcmp(opts[k].name, forced[f].flag))
        d.force |= forced[f].bit;
  if (d.laser_range_min >= d.laser_range_max) {
    pa_error("--laser_range_min (%g) must be below --laser_range_max (%g)",
             d.laser_range_min, d.laser_range_max);
    goto out;
  }
  pa_signals_install(&stop_flag);
  if (d.realtime) {
    /* Best effort: without the privilege the loop still spins. */
    struct sched_param sp = {.sched_priority = 10};
    if (sched_setscheduler(0, SCHED_FIFO, &sp) != 0)
      pa_warn("--realtime: SCHED_FIFO refused (%s); continuing at normal "
              "priority", strerror(errno));
    if (mlockall(MCL_CURRENT | MCL_FUTURE | MCL_ONFAULT) != 0)
      pa_warn("--realtime: mlockall failed (%s)", strerror(errno));
  }

  if (pa_stack_attach(&stack, instance, err, sizeof err) != 0) {
    pa_error("instance '%s': %s", instance, err);
    goto out;
  }
  have_stack = true;
  pa_ctl *ctl = stack.ctl;
  ctl->health[PA_PROC_SIM].pid = (int32_t)getpid();
  ctl->health[PA_PROC_SIM].ready = 0;
  ctl->health[PA_PROC_SIM].start_ns = pa_now_ns();
  d.max_robots = ctl->def.max_robots;
  d.max_obstacles = ctl->def.max_obstacles;
  d.max_beams = ctl->def.max_beams;

  if (pa_map_flags_resolve(&mf, &world, err, sizeof err) != 0) {
    pa_error("%s", err);
    goto out;
  }
  have_world = true;
  if (pa_map_load(&world.map, &grid, err, sizeof err) != 0) {
    pa_error("%s", err);
    goto out;
  }
  have_grid = true;
  if (pa_sim_model_init(&model, &d, &world, &grid, err, sizeof err) != 0) {
    pa_error("%s", err);
    goto out;
  }
  have_model = true;
  if (pa_sim_state_init(&model, &state, err, sizeof err) != 0) {
    pa_error("%s", err);
    status = 1;
    goto out;
  }
  have_state = true;

  rc = pa_sim_shm_resume(&model, &state, &stack, err, sizeof err);
  if (rc < 0) {
    pa_warn("cannot resume (%s): starting from the world file", err);
    pa_sim_reset(&model, &state);
  } else if (rc == 1) {
    pa_info("resumed at tick %llu (t = %.3f s) with %u robots",
            (unsigned long long)state.tick, state.sim_time, state.robot_count);
    /* The world may live on a map set at run time: keep it. */
    int mrc = pa_sim_shm_resume_map(&model, &state, &stack, err, sizeof err);
    if (mrc < 0)
      pa_warn("cannot take the running map (%s): keeping the flags' map",
              err);
    else if (mrc == 1)
      pa_info("resumed on the map set at run time: %ux%u cells at %g m",
              model.grid.width, model.grid.height, model.grid.resolution);
  }
  /* Never apply twice a command a previous pa-sim may have half applied. */
  pa_sim_shm_answer_inflight(&state, &stack);
  if (pa_sim_shm_publish_map(&model, &stack, err, sizeof err) != 0) {
    pa_error("publishing the map: %s", err);
    status = 1;
    goto out;
  }
  ctl->control_hz = d.control_hz;
  ctl->scan_hz = d.scan_hz;
  ctl->seed = d.seed;
  state.world_dirty = true;
  pa_sim_shm_publish_tick(&model, &state, &stack); /* world + first tick */
  ctl->health[PA_PROC_SIM].heartbeat_ns = pa_now_ns();
  __atomic_store_n(&ctl->health[PA_PROC_SIM].ready, 1, __ATOMIC_RELEASE);
  pa_info("ready: %u robots, %ux%u map, %g Hz control, %g Hz scans, speed "
          "%g%s, %u scan thread%s",
          state.robot_count, model.grid.width, model.grid.height,
          d.control_hz, d.scan_hz, state.speed,
          state.paused ? ", paused" : "", state.threads,
          state.threads == 1 ? "" : "s");

  pa_sim_run(&model, &state, &stack, &stop_flag);
  pa_info("stopping on signal %d at tick %llu", (int)stop_flag,
          (unsigned long long)state.tick);
  status = 0;

out:
  if (have_stack) {
    stack.ctl->health[PA_PROC_SIM].ready = 0;
    stack.ctl->health[PA_PROC_SIM].pid = 0;
    pa_stack_detach(&stack);
  }
  if (have_state)
    pa_sim_state_free(&state);
  if (have_model)
    pa_sim_model_free(&model);
  if (have_grid)
    pa_grid_free(&grid);
  if (have_world)
    pa_world_free(&world);
  return status;
}
