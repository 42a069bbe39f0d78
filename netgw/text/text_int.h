/* text_int.h - private to pa-netgw's text front-end (text.c): the text
 * protocol of the control connections (PROTOCOL.md section 1). */
#ifndef PA_TEXT_INT_H
#define PA_TEXT_INT_H

#include "netgw_int.h"

/* its row in the front-end table */
extern const pa_frontend pa_fe_text;

/* text.c */
/* Parses and runs one text line (may leave the client waiting for pa-sim). */
void pa_text_exec(pa_client *c, const char *line, size_t len);
/* The sim answered (r) or the wait timed out (r == NULL). */
void pa_text_complete(pa_client *c, const pa_reply *r);
void pa_text_err(pa_client *c, pa_status st, const char *msg);
/* pa_text_err with the message formatted as printf does. */
void pa_text_errf(pa_client *c, pa_status st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
