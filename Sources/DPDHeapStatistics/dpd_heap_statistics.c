#include "dpd_heap_statistics.h"

#include <stdlib.h>  // defines __GLIBC__ where glibc is the C library

#if defined(__APPLE__)
#include <malloc/malloc.h>

size_t dpd_live_heap_bytes(void) {
  malloc_statistics_t statistics;
  malloc_zone_statistics(NULL, &statistics);
  return statistics.size_in_use;
}

#elif defined(__GLIBC__)
#include <malloc.h>

size_t dpd_live_heap_bytes(void) {
#if __GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 33)
  struct mallinfo2 info = mallinfo2();
  return info.uordblks + info.hblkhd;
#else
  struct mallinfo info = mallinfo();
  return (size_t)(unsigned int)info.uordblks + (size_t)(unsigned int)info.hblkhd;
#endif
}

#else
size_t dpd_live_heap_bytes(void) { return 0; }
#endif
