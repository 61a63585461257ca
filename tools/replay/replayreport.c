/* <tools/replay/replayreport.c> -- the allocators' figures side by side
 *
 * .design: design/heap.txt .replay.report
 *
 * The table on stdout and, with --svg, a chart of live bytes and RSS
 * growth over the replay, every allocator on one chart.
 */

#define _POSIX_C_SOURCE 200809L   /* fdopen */

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "outpath.h"
#include "replayint.h"

static double mb(uint64_t bytes)
{
  return (double)bytes / (1024.0 * 1024.0);
}

/* ReplayReport -- the side-by-side table.  design/heap.txt .replay.report */
void ReplayReport(const ResultStruct *results)
{
  size_t n = ReplayOptions.allocCount;
  int width[ALLOC_LIMIT];       /* a column is as wide as its allocator's name */
  printf("replay %s: %" PRIu64 " events, %" PRIu64 " thread%s%s\n\n", ReplayOptions.log,
         results[0].events, results[0].threads, results[0].threads == 1 ? "" : "s",
         ReplayOptions.serial ? " (serial)" : "");
  printf("%-26s", "");
  for (size_t i = 0; i < n; ++i) {
    width[i] = strlen(results[i].name) > 12 ? (int)strlen(results[i].name) : 12;
    printf(" %*s", width[i], results[i].name);
  }
  printf("\n");
#define ROW(label, fmt, expr) \
  do { \
    printf("%-26s", label); \
    for (size_t i = 0; i < n; ++i) \
      printf(" %*" fmt, width[i], expr); \
    printf("\n"); \
  } while (0)
  for (unsigned op = 0; op < OP_LIMIT; ++op) {
    int any = 0;
    for (size_t i = 0; i < n; ++i)
      any |= results[i].ops[op] != 0;
    if (any || op <= OpFree)
      ROW(ReplayOpName[op], PRIu64, results[i].ops[op]);
  }
  for (unsigned a = 0; a < ANOMALY_LIMIT; ++a)
    ROW(ReplayAnomalyName[a], PRIu64, results[i].anomaly[a]);
  ROW("time in allocator (ms)", ".1f", results[i].seconds * 1e3);
  ROW("allocator ops/s (M)", ".2f",
      results[i].seconds > 0 ? (double)results[i].calls / results[i].seconds / 1e6 : 0.0);
  ROW("replay wall time (s)", ".2f", results[i].wall);
  ROW("peak live requested (MB)", ".1f", mb(results[i].peakLive));
  ROW("peak RSS growth (MB)", ".1f", mb(results[i].peakRss));
  ROW("peak RSS / ideal", ".2f",
      results[i].peakLive > 0 ? (double)results[i].peakRss / (double)results[i].peakLive : 0.0);
  ROW("final RSS growth (MB)", ".1f", mb(results[i].finalRss));
#undef ROW
}

/* xml -- s with &, <, >, " and ' escaped for XML text and attributes */
static void xml(FILE *f, const char *s)
{
  for (; *s != '\0'; ++s)
    switch (*s) {
    case '&': fputs("&amp;", f); break;
    case '<': fputs("&lt;", f); break;
    case '>': fputs("&gt;", f); break;
    case '"': fputs("&quot;", f); break;
    case '\'': fputs("&apos;", f); break;
    default: fputc(*s, f); break;
    }
}

/* ReplayWriteSvg -- live bytes and RSS over the replay, every allocator on one chart */
void ReplayWriteSvg(const char *path, const ResultStruct *results, SampleStruct *const *samples)
{
  static const char *const colour[] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd",
                                       "#ff7f0e", "#8c564b", "#e377c2", "#17becf"};
  const double W = 800, H = 420, L = 70, R = 170, T = 40, B = 50;
  double pw = W - L - R, ph = H - T - B;
  uint64_t maxY = 1, maxX = 1;
  int fd = OutPathOpen("replay", path, 1);   /* design/tools.txt .tools.output */
  FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
  if (f == NULL)
    ReplayFail("%s: %s", path, fd >= 0 ? strerror(errno) : "cannot write it");
  for (size_t i = 0; i < ReplayOptions.allocCount; ++i)
    for (uint32_t s = 0; s < results[i].sampleCount; ++s) {
      if (samples[i][s].rss > maxY) maxY = samples[i][s].rss;
      if (samples[i][s].live > maxY) maxY = samples[i][s].live;
      if (samples[i][s].event > maxX) maxX = samples[i][s].event;
    }
  fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
          "font-family=\"sans-serif\" font-size=\"12\">\n", W, H);
  fprintf(f, "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n");
  fprintf(f, "<text x=\"%.0f\" y=\"22\" font-size=\"14\">replay of ", L);
  xml(f, strrchr(ReplayOptions.log, '/') != NULL ? strrchr(ReplayOptions.log, '/') + 1
         : ReplayOptions.log);
  fprintf(f, ": live bytes and RSS growth</text>\n");
  for (int t = 0; t <= 5; ++t) {
    double y = T + ph - ph * t / 5.0, x = L + pw * t / 5.0;
    fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>\n", L, y, L + pw, y);
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%.1f</text>\n", L - 6, y + 4,
            mb(maxY) * t / 5.0);
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%.0f%%</text>\n", x, T + ph + 18,
            20.0 * t);
  }
  fprintf(f, "<rect x=\"%.0f\" y=\"%.0f\" width=\"%.0f\" height=\"%.0f\" fill=\"none\" stroke=\"black\"/>\n",
          L, T, pw, ph);
  fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">events replayed</text>\n",
          L + pw / 2, H - 12);
  fprintf(f, "<text transform=\"translate(18,%.1f) rotate(-90)\" text-anchor=\"middle\">MB</text>\n",
          T + ph / 2);
  for (size_t i = 0; i <= ReplayOptions.allocCount; ++i) {
    /* i == allocCount: the live bytes of the first, the ideal */
    size_t a = i < ReplayOptions.allocCount ? i : 0;
    const char *c = i < ReplayOptions.allocCount ? colour[i % 8] : "black";
    fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"1.5\"%s points=\"", c,
            i < ReplayOptions.allocCount ? "" : " stroke-dasharray=\"5,3\"");
    for (uint32_t s = 0; s < results[a].sampleCount; ++s) {
      uint64_t y = i < ReplayOptions.allocCount ? samples[a][s].rss : samples[a][s].live;
      fprintf(f, "%.1f,%.1f ", L + pw * (double)samples[a][s].event / (double)maxX,
              T + ph - ph * (double)y / (double)maxY);
    }
    fprintf(f, "\"/>\n");
    fprintf(f, "<line x1=\"%.0f\" y1=\"%.0f\" x2=\"%.0f\" y2=\"%.0f\" stroke=\"%s\" stroke-width=\"2\"%s/>\n",
            L + pw + 12, T + 10 + 20.0 * (double)i, L + pw + 36, T + 10 + 20.0 * (double)i, c,
            i < ReplayOptions.allocCount ? "" : " stroke-dasharray=\"5,3\"");
    fprintf(f, "<text x=\"%.0f\" y=\"%.0f\">", L + pw + 42, T + 14 + 20.0 * (double)i);
    xml(f, i < ReplayOptions.allocCount ? results[i].name : "live (ideal)");
    fprintf(f, "</text>\n");
  }
  fprintf(f, "</svg>\n");
  if (ferror(f) | fclose(f))
    ReplayFail("%s: %s", path, strerror(errno));
}
