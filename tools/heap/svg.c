/* <tools/heap/svg.c> -- XML text and numbers for the profile's pictures
 *
 * .design: design/heap.txt .heap.flame .heap.chart
 *
 * Function names, file and program names come from the program that
 * was recorded, not from us: any byte may be in them.  SvgText makes
 * each of them well-formed XML (.heap.flame).
 */

#include <stdio.h>
#include <string.h>

#include "svg.h"

/* charNext -- the length of the character at s (at least 1), and
 * whether it is one that XML text may hold: valid UTF-8, no overlong
 * form or surrogate, and no control character (tab and newline too: a
 * name that holds one is not what it seems). */
static size_t charNext(const unsigned char *s, int *good)
{
  unsigned c = s[0];
  size_t n, i;
  unsigned long cp, min;
  if (c < 0x80) {
    *good = c >= 0x20;
    return 1;
  }
  if (c >= 0xc2 && c <= 0xdf) {
    n = 2; cp = c & 0x1f; min = 0x80;
  } else if (c >= 0xe0 && c <= 0xef) {
    n = 3; cp = c & 0x0f; min = 0x800;
  } else if (c >= 0xf0 && c <= 0xf4) {
    n = 4; cp = c & 0x07; min = 0x10000;
  } else {
    *good = 0;
    return 1;
  }
  for (i = 1; i < n; i++) {
    if ((s[i] & 0xc0) != 0x80) {   /* includes the terminating NUL */
      *good = 0;
      return 1;
    }
    cp = cp << 6 | (s[i] & 0x3f);
  }
  *good = cp >= min && cp <= 0x10ffff && !(cp >= 0xd800 && cp <= 0xdfff) &&
          cp != 0xfffe && cp != 0xffff;
  return *good ? n : 1;
}

size_t SvgLength(const char *s)
{
  const unsigned char *p = (const unsigned char *)s;
  size_t count = 0;
  int good;
  while (*p != '\0') {
    p += charNext(p, &good);
    count++;
  }
  return count;
}

void SvgText(FILE *out, const char *s, size_t limit)
{
  const unsigned char *p = (const unsigned char *)s;
  size_t count = 0, keep = (size_t)-1;
  int good;
  if (limit > 0 && SvgLength(s) > limit)
    keep = limit >= 2 ? limit - 2 : 0;
  while (*p != '\0' && count < keep) {
    size_t n = charNext(p, &good);
    if (!good)
      fputs("\xef\xbf\xbd", out);      /* U+FFFD */
    else if (*p == '&')
      fputs("&amp;", out);
    else if (*p == '<')
      fputs("&lt;", out);
    else if (*p == '>')
      fputs("&gt;", out);
    else if (*p == '"')
      fputs("&quot;", out);
    else if (*p == '\'')
      fputs("&apos;", out);
    else
      fwrite(p, 1, n, out);
    p += n;
    count++;
  }
  if (keep != (size_t)-1)
    fputs("..", out);
}

const char *SvgCount(char *buf, size_t size, uint64_t n)
{
  char digits[32];
  size_t len, i, o = 0;
  len = (size_t)snprintf(digits, sizeof digits, "%llu", (unsigned long long)n);
  for (i = 0; i < len && o + 2 < size; i++) {
    if (i > 0 && (len - i) % 3 == 0)
      buf[o++] = ',';
    buf[o++] = digits[i];
  }
  buf[o] = '\0';
  return buf;
}

const char *SvgBytes(char *buf, size_t size, double n)
{
  static const char *const units[] = {"bytes", "KiB", "MiB", "GiB", "TiB", "PiB"};
  size_t u = 0;
  while (n >= 1024 && u + 1 < sizeof units / sizeof units[0]) {
    n /= 1024;
    u++;
  }
  if (u == 0)
    snprintf(buf, size, "%.0f bytes", n);
  else
    snprintf(buf, size, "%.*f %s", n < 10 ? 2 : n < 100 ? 1 : 0, n, units[u]);
  return buf;
}
