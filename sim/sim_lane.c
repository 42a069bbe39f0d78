/* sim_lane.c - the step lane (pa_lane, pa_layout.h): a same-host client's
 * STEP of one robot, or of a run of robots with an action each, through the
 * ctl segment, without pa-netgw's two hops. The loop runs it as the queued
 * commands pa-netgw would send (one robot: a STEP with its drive and the
 * observation block; a batch: step_batch's SET_CMDS and STEP), between
 * queue commands. */
#define _GNU_SOURCE
#include "pa_sim.h"
#include "pa_shm.h"
#include "pa_util.h"
#include "sim_int.h"

#include <semaphore.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

bool pa_sim_lane_pending(const pa_stack *st) {
  const pa_lane *l = &st->ctl->lane;
  return __atomic_load_n(&l->req, __ATOMIC_ACQUIRE) !=
         __atomic_load_n(&l->done, __ATOMIC_RELAXED);
}

/* A request refused before anything ran: its reply. */
static pa_status lane_fail(const pa_sim_state *s, pa_reply *r, pa_status st,
                           const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static pa_status lane_fail(const pa_sim_state *s, pa_reply *r, pa_status st,
                           const char *fmt, ...) {
  r->status = st;
  r->tick = s->tick;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(r->msg, sizeof r->msg, fmt, ap);
  va_end(ap);
  return st;
}

/* A batch (count >= 1), as pa-netgw's step_batch of robots_range [robot,
 * count] with actions_b64 and observe "shm" (json_batch.c), with its
 * checks, all before anything is applied: the range, each robot, each
 * action. Each (v, w) is read once from the client's memory into the
 * SET_CMDS, and checked there. */
static pa_status lane_batch(const pa_stack *st, const pa_sim_state *s,
                            pa_cmd *c, pa_cmd *cmds, size_t *ncmds,
                            pa_reply *r) {
  uint32_t max = st->ctl->def.max_robots, first = c->robot,
           count = c->step.obs_count;
  if (count > max || first > max - count)
    return lane_fail(s, r, PA_ERR_INVALID_ACTION_SHAPE,
                     "lane: robots [first %u, count %u]: give count 1 to %u "
                     "and first + count <= %u",
                     first, count, (unsigned)max, (unsigned)max);
  for (uint32_t i = 0; i < count; i++)
    if (first + i >= s->robot_count || !s->info[first + i].active)
      return lane_fail(s, r, PA_ERR_UNKNOWN_ROBOT,
                       "lane: robots[%u] (%u) is not a robot", i, first + i);
  const double *a = st->lane_act;
  size_t nd = 0;
  for (uint32_t i = 0; i < count; i++) {
    pa_cmd *pk = &cmds[nd / PA_CMD_DRIVES_MAX];
    if (nd % PA_CMD_DRIVES_MAX == 0) {
      memset(pk, 0, sizeof *pk);
      pk->op = PA_OP_SET_CMDS;
      pk->flags = PA_CMDF_NO_REPLY;
      pk->request_id = c->request_id;
    }
    pa_cmd_drive_of *e = &pk->drives[pk->count++];
    e->v = a[2 * i];
    e->w = a[2 * i + 1];
    e->robot = first + i;
    nd++;
    pa_cmd_drive d = {.v = e->v, .w = e->w, .frame = PA_FRAME_ROBOT};
    const char *bad = pa_cmd_drive_error(&d);
    if (bad)
      return lane_fail(s, r, PA_ERR_INVALID_ACTION_SHAPE,
                       "lane: actions[%u] (robot %u) %s", i, first + i, bad);
  }
  *ncmds = (nd + PA_CMD_DRIVES_MAX - 1) / PA_CMD_DRIVES_MAX;
  c->flags = PA_CMDF_OBS;
  return PA_OK;
}

uint32_t pa_sim_lane_take(const pa_stack *st, const pa_sim_state *s, pa_cmd *c,
                          pa_cmd *cmds, size_t *ncmds, pa_reply *r) {
  const pa_lane *l = &st->ctl->lane;
  uint32_t req = __atomic_load_n(&l->req, __ATOMIC_ACQUIRE);
  memset(c, 0, sizeof *c);
  memset(r, 0, sizeof *r);
  *ncmds = 0;
  c->op = PA_OP_STEP;
  c->flags = PA_CMDF_DRIVE | PA_CMDF_OBS;
  c->request_id = req;
  /* another process's memory: each field read once, then checked by the
   * STEP's own checks (robot, ticks, the drive's values) */
  c->robot = __atomic_load_n(&l->robot, __ATOMIC_RELAXED);
  c->step.ticks = __atomic_load_n(&l->ticks, __ATOMIC_RELAXED);
  uint32_t count = __atomic_load_n(&l->count, __ATOMIC_RELAXED);
  c->step.obs_first = c->robot;
  c->step.obs_count = count ? count : 1;
  c->step.obs_beams = __atomic_load_n(&l->beams, __ATOMIC_RELAXED);
  if (c->step.obs_beams > st->ctl->def.max_beams) { /* before any drive */
    lane_fail(s, r, PA_ERR_INVALID_MESSAGE, "lane: " PA_SIM_OBS_BEAMS_BAD,
              c->step.obs_beams, (unsigned)st->ctl->def.max_beams);
    return req;
  }
  if (count) {
    r->status = lane_batch(st, s, c, cmds, ncmds, r);
    return req;
  }
  c->step.drive.v = l->v;
  c->step.drive.w = l->w;
  c->step.drive.frame = PA_FRAME_ROBOT;
  return req;
}

void pa_sim_lane_answer(pa_stack *st, uint32_t req, const pa_reply *r) {
  pa_lane *l = &st->ctl->lane;
  l->status = r->status;
  l->tick = r->tick;
  l->obs_seq = r->status == PA_OK ? r->step.obs_seq : 0;
  memcpy(l->msg, r->msg, sizeof l->msg);
  l->msg[sizeof l->msg - 1] = 0;
  __atomic_store_n(&l->done, req, __ATOMIC_RELEASE);
  /* done before the value is read: a client that just took the last post
   * and then found done unchanged is waiting for this one */
  __atomic_thread_fence(__ATOMIC_SEQ_CST);
  int v = 0;
  if (sem_getvalue(&l->reply_sem, &v) != 0 || v <= 0)
    sem_post(&l->reply_sem);
}

void pa_sim_lane_init(pa_stack *st, const pa_sim_state *s) {
  pa_lane *l = &st->ctl->lane;
  __atomic_store_n(&l->wake_off,
                   (uint64_t)((const char *)pa_queue_sem(st->cmd) -
                              (const char *)st->ctl_seg.base),
                   __ATOMIC_RELEASE);
  if (!pa_sim_lane_pending(st))
    return;
  /* a request the pa-sim before this one may have half run */
  pa_reply r;
  memset(&r, 0, sizeof r);
  r.status = PA_ERR_BUSY;
  r.tick = s->tick;
  snprintf(r.msg, sizeof r.msg,
           "simulator restarted while applying this command");
  pa_sim_lane_answer(st, __atomic_load_n(&l->req, __ATOMIC_ACQUIRE), &r);
  pa_warn("answered the step lane's request with busy after a restart");
}
