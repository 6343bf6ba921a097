/*
 * A wall clock that jumps, for one process: preloaded (LD_PRELOAD), it adds an offset to
 * CLOCK_REALTIME and nothing else, as an NTP step or a wrong manual setting moves a machine's
 * wall clock while CLOCK_MONOTONIC and CLOCK_BOOTTIME run on untouched. The offset, in whole
 * seconds (for example 3600 or -3600), is read from the file that DPD_WALL_OFFSET_FILE names,
 * at most every 50 ms, so a test moves the clock by rewriting that file.
 *
 * The clock-jump test (PostgresClockJumpTests) compiles it with `cc -shared -fPIC`. libfaketime
 * was tried first and set aside: with FAKETIME_DONT_FAKE_MONOTONIC, Debian's 0.9.10 still shifts
 * the absolute deadlines a process gives timerfd_settime on CLOCK_MONOTONIC by the wall offset,
 * so after a step back of an hour every Dispatch timer of the process (Task.sleep included)
 * waited an hour, which a real step never does. It also left a Swift process started by
 * Foundation's Process without its command-line arguments.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static long long offset_seconds;   /* read and written with __atomic builtins */
static long long next_read_ns;

static long long monotonic_ns(void) {
  struct timespec now;
  syscall(SYS_clock_gettime, CLOCK_MONOTONIC, &now);
  return (long long)now.tv_sec * 1000000000LL + now.tv_nsec;
}

static long long offset(void) {
  long long now = monotonic_ns();
  if (now >= __atomic_load_n(&next_read_ns, __ATOMIC_RELAXED)) {
    __atomic_store_n(&next_read_ns, now + 50000000LL, __ATOMIC_RELAXED);
    const char *path = getenv("DPD_WALL_OFFSET_FILE");
    FILE *file = path ? fopen(path, "r") : NULL;
    if (file) {
      long long value;
      if (fscanf(file, "%lld", &value) == 1) {
        __atomic_store_n(&offset_seconds, value, __ATOMIC_RELAXED);
      }
      fclose(file);
    }
  }
  return __atomic_load_n(&offset_seconds, __ATOMIC_RELAXED);
}

int clock_gettime(clockid_t clock, struct timespec *time) {
  int result = (int)syscall(SYS_clock_gettime, clock, time);
  if (result == 0 && (clock == CLOCK_REALTIME || clock == CLOCK_REALTIME_COARSE)) {
    time->tv_sec += offset();
  }
  return result;
}

int gettimeofday(struct timeval *restrict time, void *restrict zone) {
  (void)zone;
  struct timespec now;
  int result = clock_gettime(CLOCK_REALTIME, &now);
  if (result == 0) {
    time->tv_sec = now.tv_sec;
    time->tv_usec = now.tv_nsec / 1000;
  }
  return result;
}

time_t time(time_t *out) {
  struct timespec now;
  clock_gettime(CLOCK_REALTIME, &now);
  if (out) *out = now.tv_sec;
  return now.tv_sec;
}
