/* tests/data/gen/registry.c -- a registry is valid C: expand its lists
 *
 * .design: design/registry.txt .reg.file
 *
 * tests/tools/gen.sh compiles this with -DREGISTRY='"FILE"' for each registry
 * in the tree, so that the claim at the top of eventdef.h stays true:
 * define the row macros, include the registry, and expand the lists.
 */

#define TRUE 1
#define FALSE 0

#include REGISTRY

/* Kinds: an enum, as gen makes. */
#define REGISTRY_KIND(name, doc) RegistryKind##name,
enum { EVENT_KIND_LIST(REGISTRY_KIND) RegistryKindCount };
#undef REGISTRY_KIND

/* Events: a table of names, codes and formats. */
typedef struct RowStruct {
  const char *name;
  unsigned code, always, retired;
  const char *format;
} RowStruct;

#define REGISTRY_RELATION(name, code, always, kind, format) \
  {#name, code, always, 0, #format},
#define REGISTRY_RETIRED(name, code, always, kind, format) \
  {#name, code, always, 1, #format},
const RowStruct RegistryRows[] = {
  EVENT_LIST(REGISTRY_RELATION, REGISTRY_RETIRED)
};
#undef REGISTRY_RELATION
#undef REGISTRY_RETIRED

/* Documentation: every string, in order. */
#define REGISTRY_DOC(name, doc) #name, doc,
#define REGISTRY_PARAM(type, name, doc) #type, #name, doc,
const char *const RegistryDocs[] = {
  EVENT_DOC_LIST(REGISTRY_DOC, REGISTRY_PARAM)
};
#undef REGISTRY_DOC
#undef REGISTRY_PARAM

const char RegistryName[] = EVENT_REGISTRY_NAME;
