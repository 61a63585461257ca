/* <tools/common/textsafe.h> -- a log's strings made safe to print
 *
 * .design: design/export.txt .export.text
 *
 * A log's strings (the program's name, the registry's docs, string
 * fields, thread names, file paths) are whatever bytes the log holds.
 * Printed raw, an ESC or a C1 control would drive the reader's terminal,
 * and invalid UTF-8 would make a file that claims UTF-8 unreadable.
 */

#ifndef textsafe_h
#define textsafe_h

#include <stddef.h>
#include <stdio.h>

/* TextUtf8Length -- the length of the valid UTF-8 sequence at s (of
 * at most avail bytes) whose first byte is >= 0x80, or 0 if it is not
 * one: no overlong forms, surrogates or code points above U+10FFFF */
extern size_t TextUtf8Length(const unsigned char *s, size_t avail);

/* TextUnsafe -- 1 if the byte at s (avail bytes on) must be escaped:
 * a C0 control, DEL, a C1 control (U+0080 to U+009F) or a byte of
 * invalid UTF-8.  *lengthReturn is how many bytes the character takes
 * (1 for an unsafe byte). */
extern int TextUnsafe(const unsigned char *s, size_t avail, size_t *lengthReturn);

/* TextPut -- s to f, each unsafe byte and backslash as C's octal
 * escape (\033, \377, \\), as eventcnv's text lines quote strings */
extern void TextPut(FILE *f, const char *s);

/* TextTo -- the same into buf (size bytes, NUL-terminated, cut short
 * if need be); returns buf */
extern char *TextTo(char *buf, size_t size, const char *s);

#endif /* textsafe_h */
