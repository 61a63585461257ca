/* <tools/common/outpath.c> -- the one rule for every output path of
 * every tool
 *
 * .design: design/tools.txt .tools.output
 */

#define _POSIX_C_SOURCE 200809L

#include "outpath.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *const *inputs;
static size_t inputCount;

void OutPathInputs(const char *const *paths, size_t count)
{
  inputs = paths;
  inputCount = count;
}

static int same(const struct stat *a, const struct stat *b)
{
  return a->st_dev == b->st_dev && a->st_ino == b->st_ino;
}

/* liveName -- does path name input's live file, whether or not it
 * exists: its name with ".live", in the same directory */
static int liveName(const char *input, const char *path)
{
  char *in = strdup(input), *in2 = strdup(input), *out = strdup(path), *out2 = strdup(path);
  int is = 0;
  if (in != NULL && in2 != NULL && out != NULL && out2 != NULL) {
    const char *inBase = basename(in), *outBase = basename(out);
    size_t n = strlen(inBase);
    struct stat inDir, outDir;
    is = strncmp(outBase, inBase, n) == 0 && strcmp(outBase + n, ".live") == 0
         && stat(dirname(in2), &inDir) == 0 && stat(dirname(out2), &outDir) == 0
         && same(&inDir, &outDir);
  }
  free(in);
  free(in2);
  free(out);
  free(out2);
  return is;
}

/* inputIs -- why the file st (from path, or NULL for a descriptor) is
 * not to be written, or NULL */
static const char *inputIs(const struct stat *st, const char *path)
{
  for (size_t i = 0; i < inputCount; ++i) {
    struct stat in;
    char live[4096];
    if (strcmp(inputs[i], "-") == 0) {
      if (st != NULL && fstat(STDIN_FILENO, &in) == 0 && S_ISREG(in.st_mode) && same(&in, st))
        return "it is the log read from standard input";
      continue;
    }
    if (st != NULL && stat(inputs[i], &in) == 0 && same(&in, st))
      return "it is a log to read";
    if (path != NULL && liveName(inputs[i], path))
      return "it is the live file of a log to read";
    if (st != NULL && snprintf(live, sizeof live, "%s.live", inputs[i]) < (int)sizeof live
        && stat(live, &in) == 0 && same(&in, st))
      return "it is the live file of a log to read";
  }
  return NULL;
}

const char *OutPathRefused(const char *path)
{
  struct stat st;
  if (path == NULL || strcmp(path, "-") == 0) {
    /* Standard output appended to a log (>>LOG): the shell's > has
     * emptied it already, which the reader says. */
    if (fstat(STDOUT_FILENO, &st) == 0 && S_ISREG(st.st_mode))
      return inputIs(&st, NULL);
    return NULL;
  }
  return inputIs(stat(path, &st) == 0 ? &st : NULL, path);
}

int OutPathOpen(const char *program, const char *path, int fileOnly)
{
  struct stat st;
  const char *why = OutPathRefused(path);
  int fd = -1, flags;
  if (why == NULL) {
    fd = open(path, O_WRONLY | O_CREAT | O_NOCTTY | O_NONBLOCK | O_CLOEXEC, 0666);
    if (fd < 0)
      why = errno == ENXIO ? "a FIFO that no one reads" : strerror(errno);
  }
  if (fd >= 0 && fstat(fd, &st) != 0)
    why = strerror(errno);
  else if (fd >= 0 && !S_ISREG(st.st_mode)
           && (fileOnly || !(S_ISFIFO(st.st_mode) || S_ISCHR(st.st_mode))))
    why = "not a regular file";
  else if (fd >= 0)
    why = inputIs(&st, NULL);
  if (why == NULL && S_ISREG(st.st_mode) && ftruncate(fd, 0) != 0)
    why = strerror(errno);
  if (why == NULL && ((flags = fcntl(fd, F_GETFL)) < 0
                      || fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) != 0))
    why = strerror(errno);
  if (why != NULL) {
    fprintf(stderr, "%s: cannot write %s: %s\n", program, path, why);
    if (fd >= 0)
      (void)close(fd);
    return -1;
  }
  return fd;
}
