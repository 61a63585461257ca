/* <tools/heap/svg.h> -- what the profile's pictures share: XML text
 * and numbers as people read them
 *
 * .design: design/heap.txt .heap.flame .heap.chart
 */

#ifndef svg_h
#define svg_h

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* SvgText -- write s as XML character data or an attribute value.  & <
 * > " ' are escaped; a byte that is not valid UTF-8, and a control
 * character that XML 1.0 forbids, is written as U+FFFD, so that any
 * string gives well-formed XML.  With limit > 0, a string longer than
 * limit characters is cut to limit - 2 and ends with "..". */
extern void SvgText(FILE *out, const char *s, size_t limit);

/* SvgLength -- the characters (code points, each bad byte one) in s */
extern size_t SvgLength(const char *s);

/* SvgCount -- n with thousands separated: "1,234,567" */
extern const char *SvgCount(char *buf, size_t size, uint64_t n);

/* SvgBytes -- n bytes in the binary unit that suits it: "11.8 MiB" */
extern const char *SvgBytes(char *buf, size_t size, double n);

#endif /* svg_h */
