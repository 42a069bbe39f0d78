/* frontends.c - the front-end table: one row per protocol, each defined in
 * its own folder (text/, json/, web/, foxglove/, ssl/, raisim/,
 * player/). Adding a
 * front-end is its folder and one line here. The core reaches a front-end
 * only through these rows. */
#define _GNU_SOURCE
#include "netgw_int.h"

#include <stdio.h>
#include <string.h>

extern const pa_frontend pa_fe_text, pa_fe_json, pa_fe_foxglove, pa_fe_web,
    pa_fe_ssl, pa_fe_raisim, pa_fe_player;

const pa_frontend *const pa_frontends[] = {
    &pa_fe_json, /* '{' lines on the control connections */
    &pa_fe_text, /* every other line; owns the TCP control port */
    &pa_fe_foxglove, &pa_fe_web, &pa_fe_ssl, &pa_fe_raisim, &pa_fe_player, NULL,
};

const char pa_core_flags[] =
    "instance bind token tcp_feedback_hz max_clients idle_timeout_ms "
    "max_clients_per_peer reserve_clients request_timeout_ms max_output "
    "odom_watch_us realtime no_port_walk allow_origin data_dir camera_chunk "
    "unix_socket";

const pa_frontend *pa_core_frontend(const char *name) {
  for (const pa_frontend *const *f = pa_frontends; *f; f++)
    if (!strcmp((*f)->name, name))
      return *f;
  return NULL;
}

json_t *pa_core_call(pa_netgw *g, const char *fe, const char *op, json_t *args,
                     pa_status *st, char *err, size_t err_sz) {
  const pa_frontend *f = pa_core_frontend(fe);
  if (!f || !f->call) {
    *st = PA_ERR_UNKNOWN_ACTION;
    snprintf(err, err_sz, "%s: no such front-end service", fe);
    return NULL;
  }
  return f->call(g, op, args, st, err, err_sz);
}

const pa_frontend *pa_core_control_fe(bool json) {
  return json ? &pa_fe_json : &pa_fe_text;
}

int pa_core_open(pa_netgw *g, const pa_frontend *fe, unsigned i,
                 unsigned *bound, char *err, size_t err_sz) {
  const pa_fe_listener *l = &fe->listeners[i];
  const char *p = (const char *)&g->def + l->port_off;
  unsigned port;
  if (l->signed_port) {
    int32_t v;
    memcpy(&v, p, sizeof v);
    if (v == 0)
      return PA_LISTEN_OFF;
    port = v < 0 ? 0 : (unsigned)v;
  } else {
    memcpy(&port, p, sizeof port);
  }
  pa_listen_spec ls = {.name = l->name,
                       .kind = l->kind,
                       .flag = l->flag,
                       .port = port,
                       .walk = l->walks,
                       .backlog = l->backlog,
                       .loopback_only = !fe->token && g->token[0]};
  return pa_core_listen(g, fe->name, &ls, bound, err, err_sz);
}
