#ifndef C_HEAP_USAGE_H
#define C_HEAP_USAGE_H

#include <stddef.h>

/// Bytes that malloc has handed out and not taken back (glibc's mallinfo2); 0 elsewhere.
size_t c_heap_bytes_in_use(void);

#endif
