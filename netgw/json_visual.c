/* json_visual.c - RaisimServer's side of a connection: hibernate / wakeup
 * (the connection stays, its streams stop, commands are still answered) and
 * the connection's status word. */
#define _GNU_SOURCE
#include "json_int.h"

const char *pa_json_conn_status(const pa_client *c) {
  if (c->closing || c->eof)
    return "terminating";
  return c->hibernating ? "hibernating" : "rendering";
}

static json_t *status_reply(pa_client *c) {
  json_t *d = json_object();
  json_object_set_new(d, "status", json_string(pa_json_conn_status(c)));
  return d;
}

json_t *pa_json_act_hibernate(jctx *x) {
  pa_gw_hibernate(x->c, true);
  return status_reply(x->c);
}

json_t *pa_json_act_wakeup(jctx *x) {
  pa_gw_hibernate(x->c, false);
  return status_reply(x->c);
}
