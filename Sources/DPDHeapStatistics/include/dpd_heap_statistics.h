#ifndef DPD_HEAP_STATISTICS_H
#define DPD_HEAP_STATISTICS_H

#include <stddef.h>

/// The bytes the process has allocated with malloc and not yet freed (the live heap), or 0
/// where the platform does not say. For the tests that check memory comes back.
size_t dpd_live_heap_bytes(void);

#endif
