/*
 * pa_assert.h - PA_ASSERT(cond): an invariant checked in debug and sanitizer
 * builds (PA_DEBUG_ASSERTS, on with -DPA_SANITIZE/-DPA_TSAN or a Debug build)
 * and compiled out elsewhere, where the hot paths it guards must stay free.
 * Header-only, so every library can use it without linking pa_util.
 * Not for input checks: bad input from outside gets an error, never an abort.
 */
#ifndef PA_ASSERT_H
#define PA_ASSERT_H

#ifdef PA_DEBUG_ASSERTS
#include <stdio.h>
#include <stdlib.h>

static inline void pa_assert_fail(const char *cond, const char *file, int line,
                                  const char *func) {
  fprintf(stderr, "%s:%d: %s: invariant failed: %s\n", file, line, func, cond);
  abort();
}
#define PA_ASSERT(cond)                                                        \
  ((cond) ? (void)0 : pa_assert_fail(#cond, __FILE__, __LINE__, __func__))
#else
/* Type-checks the condition without evaluating it. */
#define PA_ASSERT(cond) ((void)sizeof(!(cond)))
#endif

#endif /* PA_ASSERT_H */
