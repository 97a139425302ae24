/* Makes gridsel log while stderr is a pipe or socket nobody reads, and checks
 * that the program's SIGPIPE state is what it was: gridsel's write must not
 * end the program, call its handler, or leave a signal pending.
 *
 *   sigpipe default   SIGPIPE's default action (ends the process)
 *   sigpipe ignore    SIGPIPE ignored
 *   sigpipe handler   a handler of the program's own
 *   sigpipe blocked   SIGPIPE blocked in the thread's mask
 *   sigpipe pending   blocked, and one raised by the program: it must stay
 *
 * Built WITHOUT libomptarget: the weak __tgt_target_kernel resolves only to
 * gridsel's, which logs that there is nothing to forward to. The program
 * waits for its stdin to close first, so the test can close the reading end
 * of stderr before gridsel writes. Prints "<mode>: ok" and exits 0. */
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

int __tgt_target_kernel(void *, int64_t, int32_t, int32_t, void *, void *) __attribute__((weak));

static volatile sig_atomic_t handled;
static void on_sigpipe(int sig) {
  (void)sig;
  handled = 1;
}

static int sigpipe_pending(void) {
  sigset_t pending;
  sigpending(&pending);
  return sigismember(&pending, SIGPIPE);
}

static int sigpipe_blocked(void) {
  sigset_t mask;
  sigprocmask(SIG_BLOCK, NULL, &mask);
  return sigismember(&mask, SIGPIPE);
}

static void (*disposition(void))(int) {
  struct sigaction now;
  sigaction(SIGPIPE, NULL, &now);
  return now.sa_handler;
}

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "";
  if (!__tgt_target_kernel) {
    printf("no __tgt_target_kernel\n");
    return 3;
  }
  printf("%s: start\n", mode);
  fflush(stdout);

  sigset_t only_sigpipe;
  sigemptyset(&only_sigpipe);
  sigaddset(&only_sigpipe, SIGPIPE);
  if (strcmp(mode, "ignore") == 0) {
    signal(SIGPIPE, SIG_IGN);
  } else if (strcmp(mode, "handler") == 0) {
    signal(SIGPIPE, on_sigpipe);
  } else if (strcmp(mode, "blocked") == 0 || strcmp(mode, "pending") == 0) {
    sigprocmask(SIG_BLOCK, &only_sigpipe, NULL);
    if (strcmp(mode, "pending") == 0)
      raise(SIGPIPE);
  } else if (strcmp(mode, "default") != 0) {
    return 2;
  }
  void (*before)(int) = disposition();
  int blocked_before = sigpipe_blocked();
  int pending_before = sigpipe_pending();

  while (getchar() != EOF) {
  }
  int rc = __tgt_target_kernel(NULL, -1, 0, 0, NULL, NULL);

  int failures = 0;
  if (rc == 0) {
    printf("%s: the launch did not fail\n", mode);
    failures++;
  }
  if (disposition() != before) {
    printf("%s: disposition changed\n", mode);
    failures++;
  }
  if (handled) {
    printf("%s: the program's handler ran\n", mode);
    failures++;
  }
  if (sigpipe_blocked() != blocked_before) {
    printf("%s: mask changed\n", mode);
    failures++;
  }
  if (sigpipe_pending() != pending_before) {
    printf("%s: pending SIGPIPE %d, was %d\n", mode, sigpipe_pending(), pending_before);
    failures++;
  }
  if (failures == 0)
    printf("%s: ok\n", mode);
  return failures ? 1 : 0;
}
