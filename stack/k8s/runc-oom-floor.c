/*
 * The OCI runtime containerd runs pods with on this machine: Debian's runc, except that a negative
 * `process.oomScoreAdj` in the bundle's config.json is raised to 0 first.
 *
 * Why: this VM refuses any negative oom_score_adj, even to root (`echo -500 > /proc/self/oom_score_adj` is an
 * I/O error), and containerd's CRI gives every pod sandbox -998, so runc fails with "can't get final child's PID
 * from pipe: EOF" and no pod starts (docs/kubernetes.md). A score of 0 only means the kernel's OOM killer does
 * not prefer to spare the pod; every limit the pod asked for is applied by runc as before.
 *
 * REAL_RUNC (the runc binary's path) is fixed when the stack compiles this file.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef REAL_RUNC
#error "compile with -DREAL_RUNC=\"/path/to/runc\""
#endif

static const char KEY[] = "\"oomScoreAdj\"";

/* The bundle folder named by `--bundle DIR`, `--bundle=DIR`, `-b DIR` or `-b=DIR`; NULL when none. */
static const char *bundle_of(int argc, char **argv) {
  for (int i = 1; i < argc; i++) {
    const char *arg = argv[i];
    if ((strcmp(arg, "--bundle") == 0 || strcmp(arg, "-b") == 0) && i + 1 < argc) return argv[i + 1];
    if (strncmp(arg, "--bundle=", 9) == 0) return arg + 9;
    if (strncmp(arg, "-b=", 3) == 0) return arg + 3;
  }
  return NULL;
}

static char *read_all(const char *path, size_t *length) {
  FILE *file = fopen(path, "rb");
  if (file == NULL) return NULL;
  size_t capacity = 1 << 16, used = 0;
  char *data = malloc(capacity + 1);
  size_t got;
  while (data != NULL && (got = fread(data + used, 1, capacity - used, file)) > 0) {
    used += got;
    if (used == capacity) {
      capacity *= 2;
      data = realloc(data, capacity + 1);
    }
  }
  fclose(file);
  if (data == NULL) return NULL;
  data[used] = '\0';
  *length = used;
  return data;
}

/*
 * Rewrites the first `"oomScoreAdj": -N` as `"oomScoreAdj": 0` (runc's spec has one, under `process`).
 * Returns 0 when the file needed no change or was rewritten, -1 when it could not be read or written.
 */
static int floor_oom_score(const char *bundle) {
  char path[4096], temporary[4096];
  if (snprintf(path, sizeof path, "%s/config.json", bundle) >= (int)sizeof path) return -1;
  if (snprintf(temporary, sizeof temporary, "%s/config.json.oom-floor", bundle) >= (int)sizeof temporary) return -1;
  size_t length = 0;
  char *spec = read_all(path, &length);
  if (spec == NULL) return -1;
  char *key = strstr(spec, KEY);
  if (key == NULL) {
    free(spec);
    return 0;
  }
  char *value = key + strlen(KEY);
  while (*value == ' ' || *value == '\t' || *value == '\n' || *value == '\r' || *value == ':') value++;
  if (*value != '-') {
    free(spec);
    return 0;
  }
  char *end = value + 1;
  while (*end >= '0' && *end <= '9') end++;
  FILE *out = fopen(temporary, "wb");
  int ok = out != NULL && fwrite(spec, 1, (size_t)(value - spec), out) == (size_t)(value - spec) && fputc('0', out) != EOF &&
           fwrite(end, 1, length - (size_t)(end - spec), out) == length - (size_t)(end - spec);
  if (out != NULL && fclose(out) != 0) ok = 0;
  free(spec);
  if (!ok || rename(temporary, path) != 0) {
    unlink(temporary);
    return -1;
  }
  return 0;
}

int main(int argc, char **argv) {
  const char *bundle = bundle_of(argc, argv);
  if (bundle != NULL && floor_oom_score(bundle) != 0) {
    fprintf(stderr, "runc-oom-floor: cannot rewrite %s/config.json: %s\n", bundle, strerror(errno));
    return 1;
  }
  argv[0] = REAL_RUNC;
  execv(REAL_RUNC, argv);
  fprintf(stderr, "runc-oom-floor: cannot run %s: %s\n", REAL_RUNC, strerror(errno));
  return 127;
}
