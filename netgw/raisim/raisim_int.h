/* raisim_int.h - private to pa-netgw's RaisimServer front-end: the
 * discovery beacon (beacon.c). */
#ifndef PA_RAISIM_INT_H
#define PA_RAISIM_INT_H

#include "netgw_int.h"

/* its row in the front-end table */
extern const pa_frontend pa_fe_raisim;

/* beacon.c: starts the once-a-second discovery beacon (unless
 * def.no_beacon); stop closes it. */
int pa_gw_beacon_start(pa_netgw *g, char *err, size_t err_sz);
void pa_gw_beacon_stop(pa_netgw *g);
/* The beacon's payload (a JSON object, NUL-terminated) into buf. */
int pa_gw_beacon_payload(pa_netgw *g, char *buf, size_t n);

#endif
