/* Shared reporting for the escape-suite attack programs.
 *
 * Every attack step either must fail (the sandbox stopped it) or is setup
 * that must succeed. A step that should have failed but succeeded prints
 * "ESCAPED <what>" and makes the program exit 66, so the gtest driver can
 * tell "blocked" (0), "escaped" (66) and "broken setup" (2) apart, and the
 * printed errno lets it assert which layer answered (EPERM from the seccomp
 * filter or a missing capability, EACCES from the supervisor's engine or
 * Landlock, ENOSYS for clone3).
 */
#pragma once

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { kBlocked = 0, kSetupFailed = 2, kEscaped = 66 };

static int g_escaped;

/* rc < 0 with errno set is a blocked attempt; anything else escaped. */
static inline void mustFail(const char* what, long rc) {
  if (rc < 0) {
    printf("blocked %s errno=%d (%s)\n", what, errno, strerror(errno));
  } else {
    printf("ESCAPED %s rc=%ld\n", what, rc);
    g_escaped = 1;
  }
  fflush(stdout);
}

static inline void setupOk(const char* what, long rc) {
  if (rc < 0) {
    printf("SETUP FAILED %s errno=%d (%s)\n", what, errno, strerror(errno));
    fflush(stdout);
    exit(kSetupFailed);
  }
}

/* The optional argument after the case name (a pid, a path). */
static const char* g_arg;

struct AttackCase {
  const char* name;
  void (*run)(void);
};

/* argv[1] names the case; argv[2], if any, goes to g_arg. */
static inline int dispatch(const struct AttackCase* cases, size_t n, int argc, char** argv) {
  for (size_t i = 0; argc >= 2 && i < n; i++) {
    if (strcmp(argv[1], cases[i].name) != 0) continue;
    g_arg = argc > 2 ? argv[2] : NULL;
    cases[i].run();
    fflush(stdout);
    return g_escaped ? kEscaped : kBlocked;
  }
  fprintf(stderr, "usage: %s CASE [ARG]; cases:", argv[0]);
  for (size_t i = 0; i < n; i++) fprintf(stderr, " %s", cases[i].name);
  fprintf(stderr, "\n");
  return kSetupFailed;
}

static inline int finish(void) {
  fflush(stdout);
  return g_escaped ? kEscaped : kBlocked;
}
