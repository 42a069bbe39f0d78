/* pa-sim: the physics process. options -> model, state, stack -> loop ->
 * cleanup. */
#define _GNU_SOURCE
#include <errno.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
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
  /* Capacities and the rest no flag sets keep the library's defaults. */
  pa_sim_args args = {.def = pa_sim_def_default(),
                      .map = pa_map_flags_default()};
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

  int rc = pa_opt_main(pa_sim_opts(), &args, NULL, argc, argv);
  if (rc >= 0)
    return rc;
  pa_sim_def d = args.def;
  if (!pa_sim_simd_has(d.simd)) { /* a build without that vector path */
    pa_error("--simd %s: this build lacks it", pa_sim_simd_name(d.simd));
    return PA_EXIT_CONFIG;
  }
  const char *instance = d.instance;
  pa_map_flags mf = args.map;
#ifdef __GLIBC__
  /* Large blocks from their own zero pages (glibc's default threshold rises
   * to the largest block freed, 16 MB after the distance field's build, so
   * the state's arrays came from recycled heap that calloc clears: every
   * page resident, used or not; 1.0 MB at 1000 robots, issue 37). */
  mallopt(M_MMAP_THRESHOLD, 128 << 10);
#endif
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

  char ssl = pa_sim_ssl_world_division(mf.world);
  if (ssl) { /* the built-in SSL worlds: the field is the map */
    if (pa_sim_ssl_world(ssl, d.ssl_robots, &world, &grid, err, sizeof err) !=
        0) {
      pa_error("--world %s: %s", mf.world, err);
      goto out;
    }
    have_world = have_grid = true;
  } else {
    if (pa_map_flags_resolve(&mf, &world, err, sizeof err) != 0) {
      pa_error("%s", err);
      goto out;
    }
    have_world = true;
    if (world.map.ignored_keys[0]) /* as map_server: warned, not refused */
      pa_warn("%s: ignoring keys map_server does not read: %s",
              mf.world ? mf.world : mf.map_yaml, world.map.ignored_keys);
    ssl = world.ssl_division;
    if (ssl) { /* a world file's ssl: section: the field is the map */
      if (pa_sim_ssl_world_file(&world, &grid, err, sizeof err) != 0) {
        pa_error("--world %s: %s", mf.world, err);
        goto out;
      }
      have_grid = true;
    } else if (pa_map_load(&world.map, &grid, err, sizeof err) != 0) {
      pa_error("%s", err);
      goto out;
    }
    have_grid = true;
  }
  if (pa_sim_model_init(&model, &d, &world, &grid, err, sizeof err) != 0) {
    pa_error("%s", err);
    goto out;
  }
  have_model = true;
  if (world.robot_count && world.robots[0].place_near_origin &&
      (model.robots0[0].start_x != 0 || model.robots0[0].start_y != 0))
    pa_info("(0, 0) is not free on this map: robot '%s' starts at the free "
            "pose nearest it, (%.3f, %.3f) (--robot_pose sets one)",
            model.robots0[0].name, model.robots0[0].start_x,
            model.robots0[0].start_y);
  pa_grid_free(&grid); /* the model holds its own copy: 1 byte a cell less */
  have_grid = false;
  if (pa_sim_state_init(&model, &state, err, sizeof err) != 0) {
    pa_error("%s", err);
    status = 1;
    goto out;
  }
  have_state = true;
  if (ssl && pa_sim_ssl_enable(&state, ssl, err, sizeof err) != 0) {
    pa_error("%s", err);
    status = 1;
    goto out;
  }

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
  pa_sim_keep_open(&model, &state, &stack, rc == 1);
  /* Never apply twice a command a previous pa-sim may have half applied. */
  pa_sim_shm_answer_inflight(&state, &stack);
  if (pa_sim_shm_publish_map(&model, &stack, err, sizeof err) != 0) {
    pa_error("publishing the map: %s", err);
    status = 1;
    goto out;
  }
#ifdef __GLIBC__
  /* The loaded map, the distance field and the placement tables are freed:
   * give their pages back (freed heap in the middle stays resident). */
  malloc_trim(0);
#endif
  ctl->control_hz = d.control_hz;
  ctl->scan_hz = d.scan_hz;
  ctl->seed = d.seed;
  state.world_dirty = true;
  pa_sim_shm_publish_state(&model, &state, &stack); /* world + first tick */
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
