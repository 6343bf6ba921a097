/*
 * sigsuspend with its mask copied to the stack, for a Swift program with an async main run
 * under valgrind 3.19 (scripts/postgres-worker-instructions.sh): such a main thread ends in
 * libdispatch's signal thread, which calls sigsuspend with a mask in read-only memory, and
 * valgrind 3.19 writes to the mask it is given, so it dies of a SIGSEGV of its own ("the
 * 'impossible' happened") before the program does anything. Preloaded (LD_PRELOAD), this
 * sigsuspend hands the kernel a writable copy; nothing else changes.
 */
#define _GNU_SOURCE
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

int sigsuspend(const sigset_t *mask) {
  sigset_t copy = *mask;
  return (int)syscall(SYS_rt_sigsuspend, &copy, _NSIG / 8);
}
