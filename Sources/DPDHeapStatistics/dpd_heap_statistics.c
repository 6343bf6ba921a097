#include "dpd_heap_statistics.h"

#include <stdlib.h>  // defines __GLIBC__ where glibc is the C library

// Under ThreadSanitizer or AddressSanitizer, malloc is the sanitizer's allocator, which the C
// library's statistics do not see; the sanitizer runtime then provides this counter.
extern size_t __sanitizer_get_current_allocated_bytes(void) __attribute__((weak));

#if defined(__APPLE__)
#include <malloc/malloc.h>

static size_t system_live_heap_bytes(void) {
  malloc_statistics_t statistics;
  malloc_zone_statistics(NULL, &statistics);
  return statistics.size_in_use;
}

#elif defined(__GLIBC__)
#include <malloc.h>

static size_t system_live_heap_bytes(void) {
#if __GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 33)
  struct mallinfo2 info = mallinfo2();
  return info.uordblks + info.hblkhd;
#else
  struct mallinfo info = mallinfo();
  return (size_t)(unsigned int)info.uordblks + (size_t)(unsigned int)info.hblkhd;
#endif
}

#else
static size_t system_live_heap_bytes(void) { return 0; }
#endif

size_t dpd_live_heap_bytes(void) {
  if (__sanitizer_get_current_allocated_bytes) {
    return __sanitizer_get_current_allocated_bytes();
  }
  return system_live_heap_bytes();
}
