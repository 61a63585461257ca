/* <bench/startup.c> -- what telltale costs a program at start-up
 *
 * .design: design/tests.txt .bench
 *
 * A constructor that runs before telltale's notes the time; main notes
 * it again, so the difference is telltale's own start (EventInit: the
 * environment, the fatal-signal handlers, atexit).  Then the first
 * event, which sets the thread up and opens the log, its header and the
 * live file, and the second, which is the hot path.  Prints the three
 * in microseconds, and the number of threads the process has (telltale
 * starts one, the control thread, unless TELLTALE_CTL=off: .ctl).
 * bench/run runs it several times and takes medians.
 */

#define _GNU_SOURCE
#include <dirent.h>
#include <stdio.h>
#include <time.h>

#include <telltale/event.h>

static double nowUs(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static double beforeTelltale;

/* Priority 101 runs before the default priority of telltale's constructor. */
__attribute__((constructor(101))) static void early(void)
{
  beforeTelltale = nowUs();
}

static int threads(void)
{
  DIR *dir = opendir("/proc/self/task");
  struct dirent *d;
  int n = 0;
  if (dir == NULL)
    return -1;
  while ((d = readdir(dir)) != NULL)
    if (d->d_name[0] != '.')
      ++n;
  closedir(dir);
  return n;
}

int main(void)
{
  double atMain = nowUs(), first, second;
  EVENT_W(TestW, 1);
  first = nowUs();
  EVENT_W(TestW, 2);
  second = nowUs();
  printf("%.1f %.1f %.3f %d\n", atMain - beforeTelltale, first - atMain, second - first, threads());
  return 0;
}
