/* fuzz_mcap.c - libFuzzer target: the MCAP reader (netgw/mcap_read.c) that
 * replay_mcap runs on a file of the user's. An input is the whole file. */
#include "mcap.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Touches every byte of what the reader hands over. */
static int on_msg(void *arg, const char *topic, uint64_t log_ns,
                  const uint8_t *d, size_t n) {
  uint32_t *sum = arg;
  *sum += (uint32_t)strlen(topic) + (uint32_t)log_ns;
  for (size_t i = 0; i < n; i++)
    *sum += d[i];
  return *sum == 0xdeadbeefu; /* sometimes stops the read early */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  uint8_t *copy = malloc(size ? size : 1); /* exact size for ASan */
  memcpy(copy, data, size);
  uint32_t sum = 0;
  char err[200];
  long got = pa_mcap_read_mem(copy, size, on_msg, &sum, err, sizeof err);
  if (got < 0 && !err[0])
    abort(); /* every refusal says why */
  free(copy);
  return 0;
}
