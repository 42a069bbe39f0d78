/* fuzz_player.c - libFuzzer target: the Player front-end's decoder
 * (netgw/player/player_xdr.c) as a Player client's bytes meet it. An input
 * is what a client sends after the greeting: 40-byte XDR headers, each
 * followed by its body (the last one cut where the input ends). Each body
 * goes to pa_player_decode in an exact-size heap copy, so ASan sees any
 * read past it; a decoded name or property must be NUL-terminated in its
 * buffer, and an encoded header must decode to itself. */
#include "player_xdr.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  while (size >= PL_HDR) {
    pl_hdr h;
    pl_hdr_decode(data, &h);
    data += PL_HDR;
    size -= PL_HDR;
    /* the server closes a connection whose size is over the limit; the
     * decoder must still refuse one cleanly */
    size_t n = h.size < size ? h.size : size;
    h.size = (uint32_t)n;
    uint8_t *body = malloc(n ? n : 1);
    if (!body)
      return 0;
    memcpy(body, data, n);
    pl_msg m;
    char err[256];
    if (pa_player_decode(&h, body, &m, err, sizeof err) == 0) {
      if (memchr(m.name, 0, sizeof m.name) == NULL ||
          memchr(m.prop, 0, sizeof m.prop) == NULL ||
          m.value_len > sizeof m.value)
        abort();
    } else if (memchr(err, 0, sizeof err) == NULL) {
      abort();
    }
    free(body);
    uint8_t enc[PL_HDR];
    pl_hdr back;
    pl_hdr_encode(enc, &h);
    pl_hdr_decode(enc, &back);
    if (memcmp(&back.host, &h.host, 6 * sizeof(uint32_t)) != 0 ||
        back.size != h.size || back.seq != h.seq)
      abort();
    data += n;
    size -= n;
  }
  return 0;
}
