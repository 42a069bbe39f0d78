/*
 * pa_map_yaml.c - strict, type-checked reads over libyaml's document API.
 * Every error carries "file:line:column" from libyaml's marks (1-based).
 */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "pa_map_int.h"

int pa_map_yerr(const pa_ydoc *d, const yaml_node_t *n, char *err,
                size_t err_sz, const char *fmt, ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  if (n)
    snprintf(err, err_sz, "%s:%zu:%zu: %s", d->file, n->start_mark.line + 1,
             n->start_mark.column + 1, msg);
  else
    snprintf(err, err_sz, "%s: %s", d->file, msg);
  return -1;
}

const char *pa_map_yq(const pa_ydoc *d, const char *s) {
  return d->quiet ? "..." : s;
}

/* Walks the events once before building the document: one document, nested
 * at most PA_YAML_MAX_DEPTH deep, at most PA_YAML_MAX_EVENTS events. Stops at
 * the first excess, so a hostile file costs little (libyaml's cost of deep
 * nesting grows with the square of the depth). */
static int yaml_prescan(const char *name, const unsigned char *buf, size_t n,
                        char *err, size_t err_sz) {
  yaml_parser_t p;
  if (!yaml_parser_initialize(&p)) {
    snprintf(err, err_sz, "%s: out of memory", name);
    return -1;
  }
  yaml_parser_set_input_string(&p, buf, n);
  int depth = 0, docs = 0, rc = -1;
  for (size_t count = 0;; count++) {
    yaml_event_t e;
    if (!yaml_parser_parse(&p, &e)) {
      snprintf(err, err_sz, "%s:%zu:%zu: invalid YAML: %s%s%s", name,
               p.problem_mark.line + 1, p.problem_mark.column + 1,
               p.problem ? p.problem : "parse error", p.context ? " " : "",
               p.context ? p.context : "");
      break;
    }
    yaml_event_type_t t = e.type;
    size_t line = e.start_mark.line + 1, col = e.start_mark.column + 1;
    yaml_event_delete(&e);
    if (t == YAML_STREAM_END_EVENT) {
      rc = 0;
      break;
    }
    if (count >= PA_YAML_MAX_EVENTS) {
      snprintf(err, err_sz, "%s:%zu:%zu: more than %u YAML nodes", name, line,
               col, PA_YAML_MAX_EVENTS);
      break;
    }
    if (t == YAML_DOCUMENT_START_EVENT && ++docs > 1) {
      snprintf(err, err_sz,
               "%s:%zu:%zu: more than one YAML document (one is read)", name,
               line, col);
      break;
    }
    if (t == YAML_SEQUENCE_START_EVENT || t == YAML_MAPPING_START_EVENT) {
      if (++depth > PA_YAML_MAX_DEPTH) {
        snprintf(err, err_sz, "%s:%zu:%zu: YAML nested deeper than %d levels",
                 name, line, col, PA_YAML_MAX_DEPTH);
        break;
      }
    } else if (t == YAML_SEQUENCE_END_EVENT || t == YAML_MAPPING_END_EVENT) {
      depth--;
    }
  }
  yaml_parser_delete(&p);
  return rc;
}

int pa_map_ydoc_load_buf(pa_ydoc *d, const char *name, const unsigned char *buf,
                         size_t n, char *err, size_t err_sz) {
  yaml_parser_t p;
  memset(d, 0, sizeof *d); /* not quiet: its own errors quote nothing */
  d->file = name;
  if (yaml_prescan(name, buf, n, err, err_sz))
    return -1;
  if (!yaml_parser_initialize(&p)) {
    snprintf(err, err_sz, "%s: out of memory", name);
    return -1;
  }
  yaml_parser_set_input_string(&p, buf, n);
  if (!yaml_parser_load(&p, &d->doc)) {
    snprintf(err, err_sz, "%s:%zu:%zu: invalid YAML: %s%s%s", name,
             p.problem_mark.line + 1, p.problem_mark.column + 1,
             p.problem ? p.problem : "parse error", p.context ? " " : "",
             p.context ? p.context : "");
    yaml_parser_delete(&p);
    return -1;
  }
  d->loaded = true;
  yaml_parser_delete(&p);
  if (!yaml_document_get_root_node(&d->doc)) {
    snprintf(err, err_sz, "%s: empty YAML document", name);
    pa_map_ydoc_free(d);
    return -1;
  }
  return 0;
}

int pa_map_ydoc_load_file(pa_ydoc *d, const char *path, const pa_map_guard *g,
                          char *err, size_t err_sz) {
  memset(d, 0, sizeof *d);
  d->file = path;
  unsigned char *buf;
  size_t n;
  if (pa_map_read_file(path, g, PA_YAML_MAX_FILE, &buf, &n, err, err_sz))
    return -1;
  int rc = pa_map_ydoc_load_buf(d, path, buf, n, err, err_sz);
  d->quiet = g != NULL; /* for the checks of what it holds */
  free(buf);
  return rc;
}

void pa_map_ydoc_free(pa_ydoc *d) {
  if (d->loaded) yaml_document_delete(&d->doc);
  d->loaded = false;
}

yaml_node_t *pa_map_ydoc_root(pa_ydoc *d) {
  return yaml_document_get_root_node(&d->doc);
}

yaml_node_t *pa_map_ynode(pa_ydoc *d, int id) {
  return yaml_document_get_node(&d->doc, id);
}

static const char *kind_name(const yaml_node_t *n) {
  switch (n->type) {
  case YAML_SCALAR_NODE: return "a scalar";
  case YAML_SEQUENCE_NODE: return "a sequence";
  case YAML_MAPPING_NODE: return "a mapping";
  default: return "nothing";
  }
}

static int scalar(pa_ydoc *d, yaml_node_t *n, const char *what,
                  const char *expect, const char **s, char *err,
                  size_t err_sz) {
  if (n->type != YAML_SCALAR_NODE)
    return pa_map_yerr(d, n, err, err_sz, "%s: expected %s, got %s", what,
                       expect, kind_name(n));
  *s = (const char *)n->data.scalar.value;
  if (strlen(*s) != n->data.scalar.length)
    return pa_map_yerr(d, n, err, err_sz, "%s: contains a NUL byte", what);
  return 0;
}

/* Whether strto* read all of s, the text of scalar n, and n is unquoted
 * (a quoted "1" is a string, not a number). */
static bool parsed_plain(const yaml_node_t *n, const char *s, const char *end) {
  return end != s && *end == '\0' &&
         n->data.scalar.style != YAML_SINGLE_QUOTED_SCALAR_STYLE &&
         n->data.scalar.style != YAML_DOUBLE_QUOTED_SCALAR_STYLE;
}

/* Plain scalar n as a finite double (*dv) or, integer, a long (*lv): 0, or
 * -1 with the error set. */
static int plain_number(pa_ydoc *d, yaml_node_t *n, const char *what,
                        bool integer, double *dv, long *lv, char *err,
                        size_t err_sz) {
  const char *s = NULL, *kind = integer ? "an integer" : "a number";
  if (scalar(d, n, what, kind, &s, err, err_sz))
    return -1;
  char *end;
  errno = 0;
  double v = integer ? 0 : strtod(s, &end);
  long l = integer ? strtol(s, &end, 10) : 0;
  if (!parsed_plain(n, s, end) || (integer && errno == ERANGE))
    return pa_map_yerr(d, n, err, err_sz, "%s: expected %s, got '%s'", what,
                       kind, pa_map_yq(d, s));
  if (!integer && (!isfinite(v) || errno == ERANGE))
    return pa_map_yerr(d, n, err, err_sz, "%s: %s is not a finite number", what,
                       pa_map_yq(d, s));
  if (integer)
    *lv = l;
  else
    *dv = v;
  return 0;
}

int pa_map_ynum(pa_ydoc *d, yaml_node_t *n, const char *what, double *out,
                char *err, size_t err_sz) {
  return plain_number(d, n, what, false, out, NULL, err, err_sz);
}

int pa_map_yint(pa_ydoc *d, yaml_node_t *n, const char *what, long *out,
                char *err, size_t err_sz) {
  return plain_number(d, n, what, true, NULL, out, err, err_sz);
}

int pa_map_ybool(pa_ydoc *d, yaml_node_t *n, const char *what, bool *out,
                 char *err, size_t err_sz) {
  const char *s = NULL;
  if (scalar(d, n, what, "true or false", &s, err, err_sz)) return -1;
  /* YAML 1.1 booleans (what ROS's yaml-cpp accepts) plus 0/1 as map_server's
   * integer negate. */
  static const char *const yes[] = {"true", "yes", "on", "1", NULL};
  static const char *const no[] = {"false", "no", "off", "0", NULL};
  for (int i = 0; yes[i]; i++)
    if (!strcasecmp(s, yes[i])) return *out = true, 0;
  for (int i = 0; no[i]; i++)
    if (!strcasecmp(s, no[i])) return *out = false, 0;
  return pa_map_yerr(d, n, err, err_sz, "%s: expected true or false, got '%s'",
                     what, pa_map_yq(d, s));
}

int pa_map_ystr(pa_ydoc *d, yaml_node_t *n, const char *what, char *out,
                size_t out_sz, char *err, size_t err_sz) {
  const char *s = NULL;
  if (scalar(d, n, what, "a string", &s, err, err_sz)) return -1;
  if (strlen(s) >= out_sz)
    return pa_map_yerr(d, n, err, err_sz, "%s: longer than %zu characters",
                       what, out_sz - 1);
  memcpy(out, s, strlen(s) + 1);
  return 0;
}

int pa_map_ynums(pa_ydoc *d, yaml_node_t *n, const char *what, double *out,
                 size_t min_n, size_t max_n, size_t *n_out, char *err,
                 size_t err_sz) {
  if (n->type != YAML_SEQUENCE_NODE) {
    if (min_n == max_n)
      return pa_map_yerr(d, n, err, err_sz,
                         "%s: expected a sequence of %zu numbers, got %s", what,
                         min_n, kind_name(n));
    return pa_map_yerr(d, n, err, err_sz,
                       "%s: expected a sequence of %zu to %zu numbers, got %s",
                       what, min_n, max_n, kind_name(n));
  }
  size_t cnt = (size_t)(n->data.sequence.items.top - n->data.sequence.items.start);
  if (cnt < min_n || cnt > max_n) {
    if (min_n == max_n)
      return pa_map_yerr(d, n, err, err_sz,
                         "%s: expected %zu numbers, got %zu", what, min_n, cnt);
    return pa_map_yerr(d, n, err, err_sz,
                       "%s: expected %zu to %zu numbers, got %zu", what, min_n,
                       max_n, cnt);
  }
  for (size_t i = 0; i < cnt; i++) {
    yaml_node_t *it = pa_map_ynode(d, n->data.sequence.items.start[i]);
    char w[128];
    snprintf(w, sizeof w, "%s[%zu]", what, i);
    if (pa_map_ynum(d, it, w, &out[i], err, err_sz)) return -1;
  }
  if (n_out) *n_out = cnt;
  return 0;
}

int pa_map_ycheck_keys(pa_ydoc *d, yaml_node_t *n, const char *what,
                       const char *const *allowed, char *err, size_t err_sz) {
  if (n->type != YAML_MAPPING_NODE)
    return pa_map_yerr(d, n, err, err_sz, "%s: expected a mapping, got %s",
                       what, kind_name(n));
  for (yaml_node_pair_t *p = n->data.mapping.pairs.start;
       p < n->data.mapping.pairs.top; p++) {
    yaml_node_t *k = pa_map_ynode(d, p->key);
    if (k->type != YAML_SCALAR_NODE)
      return pa_map_yerr(d, k, err, err_sz, "%s: keys must be plain strings",
                         what);
    const char *ks = (const char *)k->data.scalar.value;
    bool ok = false;
    for (int i = 0; allowed[i]; i++)
      if (!strcmp(ks, allowed[i])) ok = true;
    if (!ok) {
      char list[512] = "";
      for (int i = 0; allowed[i]; i++) {
        size_t l = strlen(list);
        snprintf(list + l, sizeof list - l, "%s%s", i ? ", " : "", allowed[i]);
      }
      return pa_map_yerr(d, k, err, err_sz,
                         "%s: unknown key '%s' (expected one of: %s)", what,
                         pa_map_yq(d, ks), list);
    }
    for (yaml_node_pair_t *q = n->data.mapping.pairs.start; q < p; q++) {
      yaml_node_t *k2 = pa_map_ynode(d, q->key);
      if (k2->type == YAML_SCALAR_NODE &&
          !strcmp((const char *)k2->data.scalar.value, ks))
        return pa_map_yerr(d, k, err, err_sz, "%s: duplicate key '%s'", what,
                           ks);
    }
  }
  return 0;
}

yaml_node_t *pa_map_yget(pa_ydoc *d, yaml_node_t *n, const char *key) {
  if (n->type != YAML_MAPPING_NODE) return NULL;
  for (yaml_node_pair_t *p = n->data.mapping.pairs.start;
       p < n->data.mapping.pairs.top; p++) {
    yaml_node_t *k = pa_map_ynode(d, p->key);
    if (k->type == YAML_SCALAR_NODE &&
        !strcmp((const char *)k->data.scalar.value, key))
      return pa_map_ynode(d, p->value);
  }
  return NULL;
}
