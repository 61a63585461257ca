/* <src/event/eventapi.h> -- the library's version, and what makes the
 * public headers one interface for C, C++ and the shared library
 *
 * .design: design/build.txt .pack
 *
 * Included by every public header (eventcom.h, plinth.h, plinthclock.h);
 * installed as <telltale/eventapi.h>.  No OS headers.
 */

#ifndef eventapi_h
#define eventapi_h

/* The library's version: major changes when the shared library's ABI
 * does (its soname is libtelltale.so.MAJOR), minor when the interface
 * grows, patch for fixes.  The stream format has a version of its own,
 * EVENT_VERSION_* in eventcom.h.  design/build.txt .pack.version */
#define TELLTALE_VERSION_MAJOR  0
#define TELLTALE_VERSION_MINOR  2
#define TELLTALE_VERSION_PATCH  0
#define TELLTALE_VERSION_STRING "0.2.0"
#define TELLTALE_VERSION_NUMBER \
  (TELLTALE_VERSION_MAJOR * 10000 + TELLTALE_VERSION_MINOR * 100 + TELLTALE_VERSION_PATCH)

/* TELLTALE_API -- marks a declaration of the public interface.  The
 * shared library is built with -fvisibility=hidden, so that only these
 * names are exported (design/build.txt .pack.export); elsewhere the
 * attribute changes nothing.  TELLTALE_API_HIDDEN: the runtime is built
 * into a library that exports none of it (libtelltale-malloc.so), and
 * its code reaches these names directly, not through a table. */
#ifdef TELLTALE_API_HIDDEN
#define TELLTALE_API __attribute__((visibility("hidden")))
#else
#define TELLTALE_API __attribute__((visibility("default")))
#endif

/* C++: the interface has C linkage, and C11's _Static_assert is
 * static_assert.  design/build.txt .pack.cxx */
#ifdef __cplusplus
#define TELLTALE_BEGIN_DECLS extern "C" {
#define TELLTALE_END_DECLS }
#define EVENT_STATIC_ASSERT static_assert
#else
#define TELLTALE_BEGIN_DECLS
#define TELLTALE_END_DECLS
#define EVENT_STATIC_ASSERT _Static_assert
#endif

#endif /* eventapi_h */
