/* test_launch_util.h - helpers for the launcher's end-to-end tests: start a
 * real `playarea` stack, read its health block, stream odom over UDP. */
#ifndef TEST_LAUNCH_UTIL_H
#define TEST_LAUNCH_UTIL_H

#include "pa_shm.h"
#include "testutil.h"

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

typedef struct lt_stack {
  pid_t pid;               /* the launcher */
  char instance[PA_SHM_INSTANCE_MAX];
  char log[512];           /* its stdout + stderr */
  uint16_t port;           /* from the ready line */
  pa_stack s;
  bool attached;
} lt_stack;

/* Starts `playarea --tcp_port 0 --instance <unique> [extra...]` and waits
 * for the ready line (timeout_ms). 0 on success; -1 (log printed) if the
 * launcher exited or the line never came. */
int lt_start(lt_stack *t, const char *tag, const char *const *extra,
             int timeout_ms);
/* Same, with a given instance name (not made unique). */
int lt_start_named(lt_stack *t, const char *instance, const char *const *extra,
                   int timeout_ms);
/* SIGTERM, wait; returns the exit code (or 128 + signal, -1 on failure). */
int lt_stop(lt_stack *t, int timeout_ms);
bool lt_log_contains(const lt_stack *t, const char *needle);
void lt_print_log(const lt_stack *t);

pid_t lt_pid(const lt_stack *t, int proc); /* health[proc].pid */
/* Waits until health[proc] shows a ready process other than old. */
bool lt_wait_new_pid(const lt_stack *t, int proc, pid_t old, int timeout_ms);
bool lt_pid_gone(pid_t pid, int timeout_ms); /* not our child: polls kill(0) */

/* Runs `playarea ARGS...` to completion; returns its exit code (-1 on
 * timeout or failure); output goes to log (may be NULL). */
int lt_run_playarea(const char *const *args, const char *log, int timeout_ms);
/* `playarea status --instance <t's>` into text (its log is
 * <tmpdir>/status-<instance>.log, appended to by each run); its exit code,
 * or -1 when it could not be run or read. */
int lt_status(const lt_stack *t, char *text, size_t cap, int timeout_ms);

/* Odom client: TCP control connection + UDP socket subscribed to odom. */
typedef pa_test_odom lt_odom_frame;
typedef struct lt_odom {
  int tcp, udp;
  uint16_t udp_port;
} lt_odom;
/* Connects, sends each line of cmds (may be NULL) then `sub odom PORT`. */
int lt_odom_open(lt_odom *o, uint16_t tcp_port, const char *cmds);
/* Reconnects TCP only (after a netgw restart), re-sending cmds and sub. */
int lt_odom_reconnect(lt_odom *o, uint16_t tcp_port, const char *cmds,
                      int timeout_ms);
int lt_odom_recv(lt_odom *o, lt_odom_frame *f, int timeout_ms);
/* Reads everything queued; *last = newest frame. Returns frames read. */
int lt_odom_drain(lt_odom *o, lt_odom_frame *last);
void lt_odom_close(lt_odom *o);

#endif
