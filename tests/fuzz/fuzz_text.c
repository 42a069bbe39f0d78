/* fuzz_text.c - libFuzzer target: the plain-text command parser
 * (netgw/text/text.c), one input = one line as the gateway hands it over. */
#include "netgw.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  /* an exact-size heap copy, so ASan sees any read past the line */
  char *line = malloc(size ? size : 1);
  if (!line)
    return 0;
  memcpy(line, data, size);
  pa_text_cmd t;
  char msg[256];
  memset(msg, 'x', sizeof msg);
  pa_status st = pa_netgw_text_parse(line, size, &t, msg, sizeof msg);
  /* What the gateway relies on afterwards */
  if (st == PA_OK) {
    if (t.kind == PA_TXT_CMD || t.kind == PA_TXT_TELEPORT ||
        t.kind == PA_TXT_SPEED)
      for (int i = 0; i < 3; i++)
        if (!isfinite(t.a[i]))
          abort();
    if (t.kind == PA_TXT_SUB &&
        (t.port == 0 || t.channel < 0 || t.channel >= PA_CH_COUNT))
      abort();
    if (t.kind == PA_TXT_STEP && (t.n < 1 || t.n > PA_NETGW_STEP_MAX))
      abort();
    if ((t.kind == PA_TXT_ROBOT || t.kind == PA_TXT_AUTH) &&
        memchr(t.arg, '\0', sizeof t.arg) == NULL)
      abort();
  } else if (memchr(msg, '\0', sizeof msg) == NULL || msg[0] == '\0') {
    abort(); /* an error always names what was wrong */
  }
  free(line);
  return 0;
}
