/* sim_lane.c - the step lane (pa_lane, pa_layout.h): a same-host client's
 * STEP of one robot through the ctl segment, without pa-netgw's two hops.
 * The loop runs it as the queued STEP pa-netgw would send (a drive and the
 * observation block), between queue commands. */
#define _GNU_SOURCE
#include "pa_sim.h"
#include "pa_shm.h"
#include "pa_util.h"
#include "sim_int.h"

#include <semaphore.h>
#include <stdio.h>
#include <string.h>

bool pa_sim_lane_pending(const pa_stack *st) {
  const pa_lane *l = &st->ctl->lane;
  return __atomic_load_n(&l->req, __ATOMIC_ACQUIRE) !=
         __atomic_load_n(&l->done, __ATOMIC_RELAXED);
}

uint32_t pa_sim_lane_take(const pa_stack *st, pa_cmd *c) {
  const pa_lane *l = &st->ctl->lane;
  uint32_t req = __atomic_load_n(&l->req, __ATOMIC_ACQUIRE);
  memset(c, 0, sizeof *c);
  c->op = PA_OP_STEP;
  c->flags = PA_CMDF_DRIVE | PA_CMDF_OBS;
  c->request_id = req;
  /* another process's memory: each field read once, then checked by the
   * STEP's own checks (robot, ticks, the drive's values) */
  c->robot = __atomic_load_n(&l->robot, __ATOMIC_RELAXED);
  c->step.ticks = __atomic_load_n(&l->ticks, __ATOMIC_RELAXED);
  c->step.drive.v = l->v;
  c->step.drive.w = l->w;
  c->step.drive.frame = PA_FRAME_ROBOT;
  c->step.obs_first = c->robot;
  c->step.obs_count = 1;
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
