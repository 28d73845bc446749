/*
 * The pod sandbox's first container: holds the pod's namespaces open and does nothing else. No registry is
 * reachable here, so the stack compiles this statically and imports it as an image of one file.
 * As PID 1 of the pod it reaps whatever is re-parented to it and exits on SIGINT or SIGTERM.
 */
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static void stop(int signo) {
  (void)signo;
  _exit(0);
}

static void reap(int signo) {
  (void)signo;
  while (waitpid(-1, NULL, WNOHANG) > 0) {
  }
}

int main(void) {
  struct sigaction on_stop = {.sa_handler = stop};
  struct sigaction on_child = {.sa_handler = reap, .sa_flags = SA_NOCLDSTOP};
  if (sigaction(SIGINT, &on_stop, NULL) < 0 || sigaction(SIGTERM, &on_stop, NULL) < 0 ||
      sigaction(SIGCHLD, &on_child, NULL) < 0) {
    return 1;
  }
  for (;;) pause();
}
