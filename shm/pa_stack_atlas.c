/* pa_stack_atlas.c - the atlas segment of an instance (batched head
 * cameras, pa_layout.h pa_atlas_seg): opened by pa-render, attached by
 * pa-netgw. */
#include "pa_shm.h"
#include "pa_shm_int.h"

#include <string.h>

static uint64_t atlas_total(void) {
  return PA_ATLAS_OFF_FRAMES + (uint64_t)PA_ATLAS_MAX_BYTES;
}

static pa_atlas_seg *atlas_body(const pa_shm_seg *seg) {
  return (pa_atlas_seg *)((char *)seg->base + PA_SHM_BODY_OFF);
}

_Static_assert(PA_SHM_BODY_OFF + sizeof(pa_atlas_seg) <= PA_ATLAS_OFF_FRAMES,
               "the atlas header fits before the frames");

int pa_stack_atlas_open(const pa_stack *s, pa_shm_seg *seg, pa_atlas_seg **a,
                        char *err, size_t err_sz) {
  const pa_stack_def *d = &s->ctl->def;
  char name[PA_SHM_NAME_MAX];
  int rc = pa_shm_name(name, sizeof name, d->instance, "atlas", err, err_sz);
  if (rc)
    return rc;
  uint64_t sizes[PA_SHM_MAX_SIZES] = {PA_ATLAS_MAX_BYTES, sizeof(pa_atlas_seg)};
  const pa_shm_header *ch = s->ctl_seg.base;
  /* A restarted pa-render keeps the segment (a client may hold it) and its
   * sequence numbers go on. */
  if (pa_shm_attach(seg, name, PA_SEG_ATLAS, sizes, NULL, 0) == 0) {
    const pa_shm_header *h = seg->base;
    pa_atlas_seg *o = atlas_body(seg);
    if (h->boot_id == ch->boot_id && o->off_frames == PA_ATLAS_OFF_FRAMES &&
        o->capacity == PA_ATLAS_MAX_BYTES && seg->size >= atlas_total()) {
      if (o->seq & 1) /* frames cut short by the crash */
        __atomic_store_n(&o->seq, o->seq + 1, __ATOMIC_RELEASE);
      *a = o;
      return 0;
    }
    pa_shm_detach(seg);
  }
  pa_shm_unlink(name);
  rc = pa_shm_create(seg, name, PA_SEG_ATLAS, sizes, atlas_total(), ch->boot_id,
                     err, err_sz);
  if (rc)
    return rc;
  pa_shm_header *h = seg->base;
  h->owner_pid = ch->owner_pid; /* the instance's owner, for staleness */
  pa_atlas_seg *o = atlas_body(seg);
  o->off_frames = PA_ATLAS_OFF_FRAMES;
  o->capacity = PA_ATLAS_MAX_BYTES;
  pa_shm_publish(seg);
  *a = o;
  return 0;
}

int pa_stack_atlas_attach(const pa_stack *s, pa_shm_seg *seg, pa_atlas_seg **a,
                          char *err, size_t err_sz) {
  char name[PA_SHM_NAME_MAX];
  int rc = pa_shm_name(name, sizeof name, s->ctl->def.instance, "atlas", err,
                       err_sz);
  if (rc)
    return rc;
  uint64_t sizes[PA_SHM_MAX_SIZES] = {PA_ATLAS_MAX_BYTES, sizeof(pa_atlas_seg)};
  rc = pa_shm_attach(seg, name, PA_SEG_ATLAS, sizes, err, err_sz);
  if (rc)
    return rc;
  const pa_shm_header *h = seg->base, *ch = s->ctl_seg.base;
  pa_atlas_seg *o = atlas_body(seg);
  if (h->boot_id != ch->boot_id || o->off_frames != PA_ATLAS_OFF_FRAMES ||
      o->capacity != PA_ATLAS_MAX_BYTES || seg->size < atlas_total()) {
    pa_shm_errf(err, err_sz, "%s: belongs to another creation of the instance",
                name);
    pa_shm_detach(seg);
    return PA_SHM_EINVAL;
  }
  *a = o;
  return 0;
}
