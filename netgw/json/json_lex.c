/* json_lex.c - a request line's parse without jansson lexing its long
 * base64 value: a 1,000-robot step_batch carries ~10 KB of data.actions_b64,
 * which json_loadb copies one char at a time (~120 us, most of pa-netgw's
 * CPU per step). The line is parsed with that value emptied and the value
 * put back as it stands: the same tree json_loadb builds, or its result. */
#define _GNU_SOURCE /* memmem */
#include "json_int.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LEX_MIN_LINE 1024u /* shorter lines: json_loadb is quick enough */
#define LEX_MIN_VALUE 256u /* shorter values: not worth a second look */
#define LEX_FLAGS JSON_REJECT_DUPLICATES

/* A JSON tokenizer's state: enough to tell where a key of root.data is. */
typedef struct {
  size_t pos;    /* next byte to read */
  int depth;     /* containers open */
  bool str, esc; /* inside a string; after its backslash */
  bool key;      /* the string being read is a key of the root */
  size_t key_at; /* where that string's text begins */
  bool root_obj; /* the root is an object */
  bool key_data; /* the root's last key was exactly "data" */
  bool in_data;  /* depth 2 is the object root.data */
  char last;     /* last byte outside strings (not whitespace) */
} lex_state;

/* Reads s->pos..end: strings (\" and \\ escaped), containers and keys. */
static void lex_run(lex_state *s, const char *p, size_t end) {
  for (; s->pos < end; s->pos++) {
    char c = p[s->pos];
    if (s->str) {
      if (s->esc) {
        s->esc = false;
      } else if (c == '\\') {
        s->esc = true;
      } else if (c == '"') {
        s->str = false;
        s->last = '"';
        if (s->key)
          s->key_data =
              s->pos - s->key_at == 4 && !memcmp(p + s->key_at, "data", 4);
      }
      continue;
    }
    switch (c) {
    case ' ':
    case '\t':
    case '\n':
    case '\r':
      continue;
    case '"':
      s->str = true;
      s->key_at = s->pos + 1;
      /* a key follows '{' or ',' in an object */
      s->key =
          s->depth == 1 && s->root_obj && (s->last == '{' || s->last == ',');
      continue;
    case '{':
    case '[':
      s->depth++;
      if (s->depth == 1)
        s->root_obj = c == '{';
      else if (s->depth == 2)
        s->in_data = c == '{' && s->root_obj && s->last == ':' && s->key_data;
      break;
    case '}':
    case ']':
      s->depth--;
      if (s->depth < 2)
        s->in_data = false;
      break;
    default:
      break;
    }
    s->last = c;
  }
}

/* 1 when c is not base64 or padding (branch-free, 8-bit: vectorizable). */
static inline uint8_t b64_bad(uint8_t c) {
  uint8_t l = (uint8_t)((c | 32) - 'a'), d = (uint8_t)(c - '0');
  return (uint8_t)((l >= 26) & (d >= 10) & ((c | 4) != '/') & (c != '='));
}

/* Whether s[0..n) is all base64 and padding: 64-byte blocks, a fixed trip
 * count -O2 vectorizes (~10x the byte loop). */
static bool b64_only(const unsigned char *s, size_t n) {
  uint8_t bad = 0;
  size_t i = 0;
  for (; i + 64 <= n && !bad; i += 64)
    for (size_t k = 0; k < 64; k++)
      bad |= b64_bad(s[i + k]);
  for (; i < n; i++)
    bad |= b64_bad(s[i]);
  return !bad;
}

/* Finds `"key":"` in line; true with sp set. */
static bool lex_find(const char *line, size_t len, const char *key,
                     lex_span *sp) {
  char pat[32];
  int n = snprintf(pat, sizeof pat, "\"%s\":\"", key);
  const char *m = memmem(line, len, pat, (size_t)n);
  if (!m)
    return false;
  sp->key = key;
  sp->at = (size_t)(m - line);
  sp->v0 = sp->at + (size_t)n;
  return true;
}

/* Reads the line up to sp: whether sp is a key of root.data with a long
 * base64 value (then sets v1 and reads past the value). */
static bool lex_check(lex_state *s, const char *line, size_t len,
                      lex_span *sp) {
  if (sp->at < s->pos)
    return false;
  lex_run(s, line, sp->at);
  if (s->str || s->depth != 2 || !s->in_data ||
      (s->last != '{' && s->last != ','))
    return false;
  const char *q = memchr(line + sp->v0, '"', len - sp->v0);
  if (!q)
    return false;
  size_t e = (size_t)(q - line);
  if (e - sp->v0 < LEX_MIN_VALUE ||
      !b64_only((const unsigned char *)line + sp->v0, e - sp->v0))
    return false;
  sp->v1 = e;
  s->pos = e + 1; /* the value's closing quote read */
  s->last = '"';
  return true;
}

int pa_json_lex_spans(const char *line, size_t len, lex_span sp[2]) {
  memset(sp, 0, 2 * sizeof *sp);
  if (len < LEX_MIN_LINE)
    return 0;
  int n = 0;
  if (lex_find(line, len, "actions_b64", &sp[n]))
    n++;
  if (lex_find(line, len, "robots_b64", &sp[n]))
    n++;
  if (n == 2 && sp[1].at < sp[0].at) { /* in the line's order */
    lex_span t = sp[0];
    sp[0] = sp[1];
    sp[1] = t;
  }
  lex_state s = {0};
  int ok = 0;
  for (int i = 0; i < n; i++) /* one that fails is left to jansson */
    if (lex_check(&s, line, len, &sp[i]))
      sp[ok++] = sp[i];
  return ok;
}

json_t *pa_json_load_line(const char *line, size_t len, json_error_t *je) {
  json_t *quick = pa_json_quick_parse(line, len); /* json_quick.c */
  if (quick)
    return quick;
  lex_span sp[2];
  int ok = pa_json_lex_spans(line, len, sp);
  if (ok == 0)
    return json_loadb(line, len, LEX_FLAGS, je);
  /* the line with the values emptied ("") */
  size_t cut = 0;
  for (int i = 0; i < ok; i++)
    cut += sp[i].v1 - sp[i].v0;
  char *copy = malloc(len - cut);
  if (!copy)
    return json_loadb(line, len, LEX_FLAGS, je);
  size_t from = 0, w = 0;
  for (int i = 0; i < ok; i++) {
    memcpy(copy + w, line + from, sp[i].v0 - from);
    w += sp[i].v0 - from;
    from = sp[i].v1;
  }
  memcpy(copy + w, line + from, len - from);
  json_t *root = json_loadb(copy, len - cut, LEX_FLAGS, je);
  free(copy);
  json_t *data = root ? json_object_get(root, "data") : NULL;
  bool put = json_is_object(data);
  for (int i = 0; put && i < ok; i++) /* ASCII only: no UTF-8 check needed */
    put = json_object_set_new(
              data, sp[i].key,
              json_stringn_nocheck(line + sp[i].v0, sp[i].v1 - sp[i].v0)) == 0;
  if (put)
    return root;
  /* not parsed (or out of memory): jansson's own words on the real line */
  json_decref(root);
  return json_loadb(line, len, LEX_FLAGS, je);
}
