/* json.c - JSON lines (PROTOCOL.md section 3): the envelope, typed responses
 * and errors, output (with scan ranges spliced in as text), batches, and the
 * dispatch of one request through the action table (json_table.c). A request
 * that needs pa-sim leaves the client waiting; pa_json_complete() finishes
 * it (and the rest of a batch) when the reply or the timeout comes. */
#define _GNU_SOURCE
#include "json_int.h"

#include <event2/buffer.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DUMP_FLAGS (JSON_COMPACT | JSON_REAL_PRECISION(12))

/* One token length for --token, text auth and JSON auth. */
_Static_assert(sizeof(((pa_netgw *)0)->token) == PA_NETGW_TOKEN_MAX,
               "--token buffer");
_Static_assert(sizeof(((pa_text_cmd *)0)->arg) >= PA_NETGW_TOKEN_MAX,
               "text auth argument");

char pa_json_pending;
double pa_json_now(pa_netgw *g) {
  const pa_tick *t = pa_gw_latest(g);
  return t ? t->sim_time : 0.0;
}

#define SPLICE_TAG "@@pa-ranges-"

/* A placeholder string for these ranges, or NULL when out of memory. */
json_t *pa_json_ranges(pa_client *c, const float *r, uint32_t n) {
  if (c->n_spl == c->cap_spl) {
    size_t cap = c->cap_spl ? c->cap_spl * 2 : 4;
    pa_splice *ns = realloc(c->spl, cap * sizeof *ns);
    if (!ns)
      return NULL;
    c->spl = ns;
    c->cap_spl = cap;
  }
  float *copy = malloc((size_t)(n ? n : 1) * sizeof *copy);
  if (!copy)
    return NULL;
  memcpy(copy, r, (size_t)n * sizeof *copy);
  c->spl[c->n_spl].r = copy;
  c->spl[c->n_spl].n = n;
  char tag[64];
  snprintf(tag, sizeof tag, SPLICE_TAG "%016" PRIx64 "-%zu@@",
           c->g->splice_nonce, c->n_spl++);
  return json_string(tag);
}

/* A request's duration, per action, into the core's registry. */
static void observe(pa_netgw *g, const jaction *a, int64_t ns) {
  pa_core_observe_request(g, a ? pa_json_action_id(a) : -1, a ? a->name : NULL,
                          ns);
}

static void splices_free(pa_client *c) {
  for (size_t i = 0; i < c->n_spl; i++)
    free(c->spl[i].r);
  free(c->spl);
  c->spl = NULL;
  c->n_spl = c->cap_spl = 0;
}

/* ---- envelope ------------------------------------------------------------*/

static void echo_id(json_t *out, const json_t *req) {
  json_t *id =
      req && json_is_object(req) ? json_object_get(req, "request_id") : NULL;
  if (id && (json_is_string(id) || json_is_integer(id) || json_is_real(id)))
    json_object_set(out, "request_id", id);
}

static json_t *envelope_ok(const json_t *req, const jaction *a, json_t *data,
                           double sim_time) {
  bool state = a->flags & JF_STATE;
  json_t *o = json_object();
  json_object_set_new(o, "type", json_string(state ? "state" : "response"));
  json_object_set_new(o, "protocol_version", json_integer(2));
  echo_id(o, req);
  json_object_set_new(o, "action", json_string(a->name));
  json_object_set_new(o, "status", json_string("ok"));
  json_object_set_new(o, "success", json_true());
  json_object_set_new(o, "sim_time", json_real(sim_time));
  json_object_set_new(o, "data", data ? data : json_object());
  return o;
}

static json_t *envelope_err(const json_t *req, const char *action, pa_status st,
                            const char *msg, double sim_time) {
  json_t *o = json_object();
  json_object_set_new(o, "type", json_string("error"));
  json_object_set_new(o, "protocol_version", json_integer(2));
  echo_id(o, req);
  if (action)
    json_object_set_new(o, "action", json_string(action));
  json_object_set_new(o, "status", json_string("error"));
  json_object_set_new(o, "success", json_false());
  json_object_set_new(o, "sim_time", json_real(sim_time));
  json_t *e = json_object();
  json_object_set_new(e, "code", json_string(pa_status_code(st)));
  json_object_set_new(e, "message", json_string(msg));
  json_object_set_new(o, "error", e);
  return o;
}

/* Room for n more bytes in the growing reply *buf: 0, or -1 (no memory). */
static int buf_reserve(char **buf, size_t len, size_t *cap, size_t n) {
  if (len + n <= *cap)
    return 0;
  size_t nc = *cap ? *cap : 4096;
  while (nc < len + n)
    nc *= 2;
  char *nb = realloc(*buf, nc);
  if (!nb)
    return -1;
  *buf = nb;
  *cap = nc;
  return 0;
}

static int buf_put(char **buf, size_t *len, size_t *cap, const char *s,
                   size_t n) {
  if (buf_reserve(buf, *len, cap, n) != 0)
    return -1;
  memcpy(*buf + *len, s, n);
  *len += n;
  return 0;
}

/* Writes s with every ranges placeholder replaced by its numbers, as one
 * write (one send for the whole reply). */
static void write_spliced(pa_client *c, const char *s, size_t n) {
  const char *p = s, *end = s + n;
  char num[40];
  char *out = NULL;
  size_t len = 0, cap = 0;
  int bad = 0;
  while (p < end) {
    static const char tag[] = "\"" SPLICE_TAG;
    const char *q = memmem(p, (size_t)(end - p), tag, sizeof tag - 1);
    if (!q) {
      bad |= buf_put(&out, &len, &cap, p, (size_t)(end - p));
      break;
    }
    bad |= buf_put(&out, &len, &cap, p, (size_t)(q - p));
    char *after;
    const char *h = q + 1 + strlen(SPLICE_TAG);
    /* The text is a JSON document ending in "\n" with no NUL: parse the
     * tag from a bounded copy. */
    char tagbuf[64];
    size_t avail = (size_t)(end - h) < sizeof tagbuf - 1 ? (size_t)(end - h)
                                                         : sizeof tagbuf - 1;
    memcpy(tagbuf, h, avail);
    tagbuf[avail] = '\0';
    char *t_after;
    unsigned long long nonce = strtoull(tagbuf, &t_after, 16);
    unsigned long k =
        *t_after == '-' ? strtoul(t_after + 1, &t_after, 10) : ~0ul;
    after = (char *)h + (t_after - tagbuf);
    if (nonce != c->g->splice_nonce || k >= c->n_spl ||
        strncmp(t_after, "@@\"", 3) != 0) {
      bad |= buf_put(&out, &len, &cap, q, 1); /* a client string alike */
      p = q + 1;
      continue;
    }
    const pa_splice *sp = &c->spl[k];
    /* 18 bytes per number at most ("-1000000000.000001") + comma */
    if (bad || buf_reserve(&out, len, &cap, (size_t)sp->n * 20 + 2) != 0) {
      bad = -1;
      break;
    }
    out[len++] = '[';
    for (uint32_t i = 0; i < sp->n; i++) {
      if (i)
        out[len++] = ',';
      size_t m = pa_json_fmt_range(num, sp->r[i]);
      memcpy(out + len, num, m);
      len += m;
    }
    out[len++] = ']';
    p = after + 3;
  }
  if (bad) {
    static const char oom[] =
        "{\"type\":\"error\",\"status\":\"error\",\"success\":false,"
        "\"error\":{\"code\":\"busy\",\"message\":\"out of memory\"}}\n";
    pa_gw_write(c, oom, sizeof oom - 1);
  } else {
    pa_gw_write(c, out, len);
  }
  free(out);
}

static void send_oom(pa_client *c) {
  static const char oom[] =
      "{\"type\":\"error\",\"status\":\"error\",\"success\":false,"
      "\"error\":{\"code\":\"busy\",\"message\":\"out of memory\"}}\n";
  pa_gw_write(c, oom, sizeof oom - 1);
  splices_free(c);
  free(c->bin); /* no header line: no block */
  c->bin = NULL;
}

/* Writes a reply line (n bytes, its '\n' included) with its ranges spliced
 * in, then a binary reply's block. */
static void send_line(pa_client *c, const char *s, size_t n) {
  if (c->n_spl)
    write_spliced(c, s, n);
  else
    pa_gw_write(c, s, n);
  splices_free(c);
  if (c->bin) /* a binary reply's block follows its header line */
    pa_gw_write(c, c->bin, c->bin_n);
  free(c->bin);
  c->bin = NULL;
  c->bin_n = 0;
}

static void send_json(pa_client *c, json_t *o) {
  size_t len;
  const char *line = pa_json_dump_line(o, &len); /* json_fast.c */
  if (line) {
    send_line(c, line, len);
    json_decref(o);
    pa_json_fast_trim();
    return;
  }
  char *s = json_dumps(o, DUMP_FLAGS);
  json_decref(o);
  if (!s) {
    send_oom(c);
    return;
  }
  size_t n = strlen(s);
  s[n] = '\n'; /* replaces the terminator: one write for line + EOL */
  send_line(c, s, n + 1);
  free(s);
}

void pa_json_error_line(pa_client *c, pa_status st, const char *msg) {
  send_json(c, envelope_err(NULL, NULL, st, msg, pa_json_now(c->g)));
}

/* A request_id that is there but neither a string nor a number. */
static bool bad_request_id(const json_t *req) {
  json_t *id = json_object_get(req, "request_id");
  return id && !json_is_string(id) && !json_is_number(id);
}

/* The first key of data that the action does not take, or NULL. */
static const char *unknown_key(const jaction *a, json_t *data) {
  const char *key;
  json_t *v;
  json_object_foreach(data, key, v) {
    size_t n = strlen(key);
    const char *k = a->keys;
    bool found = false;
    while (*k && !found) {
      size_t m = strcspn(k, " ");
      found = m == n && !memcmp(k, key, n);
      k += m + (k[m] == ' ');
    }
    if (!found)
      return key;
  }
  return NULL;
}

/* JF_LENIENT: every unknown key of data taken out and named in a list
 * (the reply's data.warnings; NULL when there is none). */
static json_t *drop_unknown(const jaction *a, json_t *data) {
  json_t *w = NULL;
  const char *key;
  while ((key = unknown_key(a, data))) {
    if (!w)
      w = json_array();
    char msg[160];
    snprintf(msg, sizeof msg, "data.%.64s is not a key of %s: ignored", key,
             a->name);
    json_array_append_new(w, json_string(msg));
    json_object_del(data, key);
  }
  return w;
}

/* The envelope around the action: an object of type command or
 * sim_control (jt: JT_*), protocol_version 2, a request_id of the right
 * type, an action name (aname, set as soon as read: the error reply names
 * it). -1 when it is not (x says why). */
static int check_envelope(jctx *x, json_t *req, unsigned *jt,
                          const char **aname) {
  if (!json_is_object(req)) {
    pa_json_fail(x, PA_ERR_INVALID_MESSAGE, "a request must be a JSON object");
    return -1;
  }
  json_t *type = json_object_get(req, "type");
  json_t *pv = json_object_get(req, "protocol_version");
  json_t *act = json_object_get(req, "action");
  if (act && json_is_string(act))
    *aname = json_string_value(act);
  if (!type || !json_is_string(type)) {
    pa_json_fail(x, PA_ERR_INVALID_MESSAGE,
                 "missing \"type\" (command, sim_control "
                 "or batch)");
    return -1;
  }
  const char *ts = json_string_value(type);
  if (!strcmp(ts, "batch")) {
    pa_json_fail(x, PA_ERR_INVALID_MESSAGE, "a batch cannot contain a batch");
    return -1;
  }
  *jt = !strcmp(ts, "sim_control") ? JT_SIM_CONTROL
        : !strcmp(ts, "command")   ? JT_COMMAND
                                   : 0;
  if (!*jt) {
    pa_json_fail(
        x, PA_ERR_UNKNOWN_TYPE,
        "type '%.64s' is not supported (command, sim_control or batch)", ts);
    return -1;
  }
  if (pv && (!json_is_integer(pv) || json_integer_value(pv) != 2)) {
    pa_json_fail(x, PA_ERR_INVALID_MESSAGE, "protocol_version must be 2");
    return -1;
  }
  if (bad_request_id(req)) {
    pa_json_fail(x, PA_ERR_INVALID_MESSAGE,
                 "request_id must be a string or a number");
    return -1;
  }
  if (!*aname) {
    pa_json_fail(x, PA_ERR_INVALID_MESSAGE, "missing \"action\" string");
    return -1;
  }
  return 0;
}

/* Takes the reply's estimated size from the client's budget; -1 when it
 * does not fit (x says why). */
static int take_budget(jctx *x) {
  pa_client *c = x->c;
  pa_netgw *g = c->g;
  /* Bound the reply before building it: a batch of big replies must not
   * take the memory and the loop (and then the client, past --max_output). */
  size_t cost = x->act->cost ? x->act->cost(x) : PA_JSON_SMALL_REPLY;
  if (cost > c->jbudget) {
    if (c->jbatch)
      pa_json_fail(x, PA_ERR_TOO_LONG,
                   "request %zu of the batch: its reply would take about %zu "
                   "bytes, and the batch has %zu left of --max_output %zu: "
                   "send fewer requests per batch",
                   c->jbatch_i, cost, c->jbudget, g->def.max_output);
    else
      pa_json_fail(x, PA_ERR_TOO_LONG,
                   "the reply would take about %zu bytes, more than the %zu "
                   "left of --max_output %zu: ask for less",
                   cost, c->jbudget, g->def.max_output);
    return -1;
  }
  c->jbudget -= cost;
  return 0;
}

/* Runs one request: the response envelope, or JPENDING. */
static json_t *exec_one(pa_client *c, json_t *req) {
  pa_netgw *g = c->g;
  jctx x;
  memset(&x, 0, sizeof x);
  x.c = c;
  x.req = req;
  x.sim_time = -1;
  c->jstart_ns = pa_now_ns();
  const char *aname = NULL;
  json_t *d = NULL, *empty = NULL, *warnings = NULL;
  unsigned jt = 0;
  if (check_envelope(&x, req, &jt, &aname) < 0)
    goto err;
  x.data = json_object_get(req, "data");
  if (x.data && !json_is_object(x.data) && !json_is_null(x.data)) {
    pa_json_fail(&x, PA_ERR_INVALID_MESSAGE, "\"data\" must be an object");
    goto err;
  }
  if (!x.data || json_is_null(x.data))
    x.data = empty = json_object();
  x.act = pa_json_action_find(aname);
  if (g->token[0] && !c->authed && !(x.act && (x.act->flags & JF_NO_AUTH))) {
    pa_json_fail(&x, PA_ERR_NOT_AUTHORIZED,
                 "send {\"type\": \"command\", \"action\": \"auth\", \"data\": "
                 "{\"token\": ...}} first");
    goto err;
  }
  if (!x.act) {
    pa_json_fail(&x, PA_ERR_UNKNOWN_ACTION, "unknown action '%.64s'", aname);
    goto err;
  }
  if (!(x.act->types & jt)) {
    /* OceanSim: an action is recognised per envelope type */
    pa_json_fail(&x, PA_ERR_UNKNOWN_ACTION,
                 "'%s' is not a sim_control action: send it with type "
                 "\"command\"",
                 x.act->name);
    goto err;
  }
  if (x.act->flags & JF_LENIENT)
    warnings = drop_unknown(x.act, x.data);
  const char *bad_key = unknown_key(x.act, x.data);
  if (bad_key) {
    if (x.act->keys[0])
      pa_json_fail(&x, PA_ERR_INVALID_MESSAGE,
                   "data.%.64s is not a key of %s (it takes: %s)", bad_key,
                   x.act->name, x.act->keys);
    else
      pa_json_fail(&x, PA_ERR_INVALID_MESSAGE, "data.%.64s: %s takes no data",
                   bad_key, x.act->name);
    goto err;
  }
  if ((x.act->flags & JF_ROBOT) && pa_json_robot(&x, &x.info, &x.idx) < 0)
    goto err;
  if (take_budget(&x) < 0)
    goto err;
  d = x.act->run(&x);
  if (warnings && d && d != JPENDING && json_is_object(d))
    json_object_set(d, "warnings", warnings);
  json_decref(warnings);
  warnings = NULL;
  if (d == JPENDING) {
    json_decref(empty);
    json_incref(req);
    c->jreq = req;
    return JPENDING;
  }
  if (d) {
    json_decref(empty);
    observe(g, x.act, pa_now_ns() - c->jstart_ns);
    return envelope_ok(req, x.act, d,
                       x.sim_time < 0 ? pa_json_now(g) : x.sim_time);
  }
err:
  json_decref(warnings);
  json_decref(empty);
  if (x.st == PA_OK)
    pa_json_fail(&x, PA_ERR_INVALID_MESSAGE, "request failed");
  observe(g, x.act, pa_now_ns() - c->jstart_ns);
  return envelope_err(req, x.act ? x.act->name : aname, x.st, x.msg,
                      pa_json_now(g));
}

/* ---- batches and completion ----------------------------------------------*/

static void finish_batch(pa_client *c) {
  json_t *o = json_object();
  json_object_set_new(o, "type", json_string("response"));
  json_object_set_new(o, "protocol_version", json_integer(2));
  echo_id(o, c->jbatch);
  json_object_set_new(o, "action", json_string("batch"));
  json_object_set_new(o, "status", json_string("ok"));
  json_object_set_new(o, "success", json_true());
  json_object_set_new(o, "sim_time", json_real(pa_json_now(c->g)));
  size_t n = json_array_size(c->jresponses);
  json_object_set_new(o, "count", json_integer((json_int_t)n));
  /* The responses at the top (OceanSim's place) and under data (ours): the
   * array is formatted once and written in both places. */
  char *e = json_dumps(o, DUMP_FLAGS);
  char *a = json_dumps(c->jresponses, DUMP_FLAGS);
  json_decref(o);
  json_decref(c->jbatch);
  json_decref(c->jresponses);
  c->jbatch = c->jresponses = NULL;
  char *line = NULL, mid[64];
  size_t len = 0, cap = 0;
  int bad = !e || !a;
  if (!bad) {
    size_t al = strlen(a);
    int m =
        snprintf(mid, sizeof mid, ",\"data\":{\"count\":%zu,\"responses\":", n);
    bad |= buf_put(&line, &len, &cap, e, strlen(e) - 1); /* less its '}' */
    bad |= buf_put(&line, &len, &cap, ",\"responses\":", 13);
    bad |= buf_put(&line, &len, &cap, a, al);
    bad |= buf_put(&line, &len, &cap, mid, (size_t)m);
    bad |= buf_put(&line, &len, &cap, a, al);
    bad |= buf_put(&line, &len, &cap, "}}\n", 3);
  }
  free(e);
  free(a);
  if (bad)
    send_oom(c);
  else
    send_line(c, line, len);
  free(line);
}

/* Runs batch requests from jbatch_i until one waits or all are answered. */
static void run_batch(pa_client *c) {
  json_t *reqs = json_object_get(c->jbatch, "requests");
  while (c->jbatch_i < json_array_size(reqs)) {
    json_t *r = exec_one(c, json_array_get(reqs, c->jbatch_i));
    if (r == JPENDING)
      return;
    json_array_append_new(c->jresponses, r);
    c->jbatch_i++;
  }
  finish_batch(c);
}

/* Reply room for the n requests of a line of len bytes: what the client may
 * still have pending (--max_output) less what it has not read yet, less
 * what their envelopes and errors take (each echoes its request_id). */
static size_t reply_room(pa_client *c, size_t len, size_t n) {
  size_t out = c->bev ? evbuffer_get_length(bufferevent_get_output(c->bev)) : 0;
  size_t need = out + len + (n + 1) * 1024;
  return need < c->g->def.max_output ? c->g->def.max_output - need : 0;
}

void pa_json_line(pa_client *c, const char *line, size_t len) {
  json_error_t je;
  json_t *req = pa_json_load_line(line, len, &je);
  if (!req) {
    char msg[256];
    snprintf(msg, sizeof msg, "bad JSON at column %d: %s", je.column, je.text);
    pa_json_error_line(c, PA_ERR_INVALID_MESSAGE, msg);
    return;
  }
  json_t *type = json_is_object(req) ? json_object_get(req, "type") : NULL;
  if (type && json_is_string(type) &&
      !strcmp(json_string_value(type), "batch")) {
    json_t *reqs = json_object_get(req, "requests");
    const char *bad = NULL;
    pa_status st = PA_ERR_INVALID_MESSAGE;
    char msg[128];
    if (c->g->token[0] && !c->authed) {
      st = PA_ERR_NOT_AUTHORIZED;
      bad = "authenticate before sending a batch";
    } else if (bad_request_id(req)) {
      bad = "request_id must be a string or a number";
    } else if (!json_is_array(reqs)) {
      bad = "a batch needs \"requests\": [...]";
    } else if (json_array_size(reqs) > PA_NETGW_BATCH_MAX) {
      st = PA_ERR_BATCH_LIMIT;
      snprintf(msg, sizeof msg, "a batch holds at most %u requests, got %zu",
               PA_NETGW_BATCH_MAX, json_array_size(reqs));
      bad = msg;
    }
    if (bad) {
      send_json(c, envelope_err(req, "batch", st, bad, pa_json_now(c->g)));
      json_decref(req);
      return;
    }
    c->jbatch = req;
    c->jresponses = json_array();
    c->jbatch_i = 0;
    /* the responses are sent twice: at the top and under data */
    c->jbudget = reply_room(c, len, json_array_size(reqs)) / 2;
    run_batch(c);
    return;
  }
  c->jbudget = reply_room(c, len, 1);
  json_t *r = exec_one(c, req);
  if (r != JPENDING)
    send_json(c, r);
  json_decref(req);
}

void pa_json_complete(pa_client *c, const pa_reply *r) {
  pa_netgw *g = c->g;
  json_t *req = c->jreq;
  c->jreq = NULL;
  const jaction *a = pa_json_action_at(c->pend_action);
  json_t *resp;
  pa_status st;
  char msg[128];
  if (pa_gw_reply_error(g, r, &st, msg, sizeof msg)) {
    resp =
        envelope_err(req, a->name, st, msg, r ? r->sim_time : pa_json_now(g));
  } else if (a->done == pa_json_done_step && pa_json_step_fast(c, req)) {
    /* lockstep's reply, written with no tree (json_fast.c) */
    json_decref(req);
    observe(g, a, pa_now_ns() - c->jstart_ns);
    return;
  } else {
    jctx x;
    memset(&x, 0, sizeof x);
    x.c = c;
    x.req = req;
    x.act = a;
    x.sim_time = r->sim_time;
    json_t *empty = NULL;
    x.data = json_object_get(req, "data");
    if (!json_is_object(x.data))
      x.data = empty = json_object();
    json_t *d = a->done ? a->done(&x, r) : pa_json_tick(r);
    json_decref(empty);
    if (!d && x.st == PA_OK)
      pa_json_fail(&x, PA_ERR_INVALID_MESSAGE, "request failed");
    resp = d ? envelope_ok(req, a, d, x.sim_time)
             : envelope_err(req, a->name, x.st, x.msg, x.sim_time);
  }
  json_decref(req);
  observe(g, a, pa_now_ns() - c->jstart_ns);
  if (c->jbatch) {
    json_array_append_new(c->jresponses, resp);
    c->jbatch_i++;
    run_batch(c);
  } else {
    send_json(c, resp);
  }
}

void pa_json_release(pa_client *c) {
  pa_json_vis_mesh_cancel(c); /* a decoder nobody waits for now */
  json_decref(c->jreq);       /* each may be NULL */
  json_decref(c->jbatch);
  json_decref(c->jresponses);
  c->jreq = c->jbatch = c->jresponses = NULL;
  splices_free(c);
  free(c->bin);
  c->bin = NULL;
}

/* ---- the front-end row --------------------------------------------------*/

static int json_start(pa_netgw *g, char *err, size_t err_sz) {
  (void)err, (void)err_sz;
  pa_json_visual_recover(g); /* a dead pa-netgw may have left it mid-update */
  return 0;
}

/* JSON lines share the text protocol's control connections. */
const pa_frontend pa_fe_json = {
    .name = "json",
    .flags = "",
    .token = true,
    .start = json_start,
    .line = pa_json_line,
    .complete = pa_json_complete,
    .release = pa_json_release,
    .line_error = pa_json_error_line,
};
