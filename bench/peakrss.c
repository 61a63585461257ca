/* <bench/peakrss.c> -- a command's own peak RSS, for bench/malloc.sh
 *
 * .design: design/heap.txt .replay.fidelity
 *
 * Usage: peakrss PRELOAD COMMAND [ARGS...]
 * Runs COMMAND with LD_PRELOAD=PRELOAD (none if empty), its output to
 * /dev/null, and prints its peak RSS in KiB (wait4's ru_maxrss).
 *
 * Why not python's RUSAGE_CHILDREN: Linux keeps a process's peak RSS
 * across exec, so a child forked from python (13 MB) reports at least
 * python's RSS, whatever it runs: "sqlite3 :memory: 'select 1'" showed
 * 13.8 MB instead of its own 3.9 MB.  This program is small, and only
 * COMMAND has the allocator preloaded.
 */

#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv)
{
  struct rusage ru;
  int status;
  pid_t pid;
  if (argc < 3) {
    fputs("usage: peakrss PRELOAD COMMAND [ARGS...]\n", stderr);
    return 2;
  }
  pid = fork();
  if (pid == 0) {
    int null = open("/dev/null", O_RDWR);
    if (null >= 0) {
      (void)dup2(null, 1);
      (void)dup2(null, 2);
    }
    if (argv[1][0] != '\0')
      setenv("LD_PRELOAD", argv[1], 1);
    else
      unsetenv("LD_PRELOAD");
    execvp(argv[2], argv + 2);
    _exit(127);
  }
  if (pid < 0 || wait4(pid, &status, 0, &ru) != pid)
    return 1;
  printf("%ld\n", ru.ru_maxrss);
  return 0;
}
