/* <tools/heap/symindex.c> -- sorted indexes of a module's functions, so
 * that naming an address costs a binary search
 *
 * .design: design/heap.txt .heap.symbols
 *
 * libdw answers dwfl_module_addrname by scanning the whole symbol table
 * and dwarf_getscopes by walking the compilation unit's DIEs from its
 * root, for every address: some milliseconds an address in a large
 * program.  Here each is done once: a module's function symbols sorted
 * by address, and a compilation unit's functions (their DIE offsets)
 * sorted by the address ranges they cover.  An address then finds its
 * function by binary search, and its inlined calls by walking down that
 * function's DIEs alone.  Kept in each module's userdata.
 */

#include <dwarf.h>
#include <elfutils/libdwfl.h>
#include <stdlib.h>
#include <string.h>

#include "heapint.h"

typedef struct RangeStruct {
  uint64_t low, high;           /* [low, high) */
  const char *name;             /* a symbol's name; NULL for a DIE */
  Dwarf_Off offset;             /* a DIE's offset */
  int rank;                     /* of symbols at one address, the highest names it */
} RangeStruct;

typedef struct RangesStruct {
  RangeStruct *ranges;
  size_t count, capacity;
} RangesStruct;

typedef struct UnitStruct {
  Dwarf_Off offset;             /* the CU DIE's */
  RangesStruct functions;
} UnitStruct;

typedef struct ModuleIndexStruct {
  int symbolsRead, startsRead;
  RangesStruct symbols;
  RangesStruct starts;          /* where the unwind tables' functions begin */
  UnitStruct *units;
  size_t unitCount;
} ModuleIndexStruct;

static int add(RangesStruct *r, uint64_t low, uint64_t high, const char *name, Dwarf_Off offset,
               int rank)
{
  if (r->count == r->capacity) {
    size_t capacity = r->capacity == 0 ? 256 : r->capacity * 2;
    RangeStruct *ranges = realloc(r->ranges, capacity * sizeof *ranges);
    if (ranges == NULL)
      return 0;
    r->ranges = ranges;
    r->capacity = capacity;
  }
  r->ranges[r->count++] = (RangeStruct){low, high, name, offset, rank};
  return 1;
}

/* byLow -- by address; at one address the widest first, and of equal
 * width the best name last, where find looks */
static int byLow(const void *a, const void *b)
{
  const RangeStruct *ra = a, *rb = b;
  if (ra->low != rb->low)
    return ra->low < rb->low ? -1 : 1;
  if (ra->high != rb->high)
    return ra->high > rb->high ? -1 : 1;
  return (ra->rank > rb->rank) - (ra->rank < rb->rank);
}

/* rank -- a global symbol names a function before a weak one, a weak
 * before a local, and a name without a leading underscore first
 * (strdup, not __strdup or __GI___strdup) */
static int rank(const GElf_Sym *sym, const char *name)
{
  int binding = GELF_ST_BIND(sym->st_info);
  return (binding == STB_GLOBAL ? 4 : binding == STB_WEAK ? 2 : 0) + (name[0] != '_');
}

/* find -- the range that holds pc: the last to begin at or before it */
static const RangeStruct *find(const RangesStruct *r, uint64_t pc)
{
  size_t lo = 0, hi = r->count;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (r->ranges[mid].low <= pc)
      lo = mid + 1;
    else
      hi = mid;
  }
  for (size_t i = lo; i > 0 && lo - i < 8; --i)    /* a few may nest */
    if (pc < r->ranges[i - 1].high)
      return &r->ranges[i - 1];
  return NULL;
}

static ModuleIndexStruct *indexOf(Dwfl_Module *mod)
{
  void **userdata;
  dwfl_module_info(mod, &userdata, NULL, NULL, NULL, NULL, NULL, NULL);
  if (*userdata == NULL)
    *userdata = calloc(1, sizeof(ModuleIndexStruct));
  return *userdata;
}

/* readSymbols -- the module's sized function symbols, by address */
static void readSymbols(Dwfl_Module *mod, RangesStruct *r)
{
  int n = dwfl_module_getsymtab(mod);
  for (int i = 1; i < n; ++i) {
    GElf_Sym sym;
    GElf_Addr addr;
    const char *name = dwfl_module_getsym_info(mod, i, &sym, &addr, NULL, NULL, NULL);
    if (name != NULL && name[0] != '\0' && GELF_ST_TYPE(sym.st_info) == STT_FUNC
        && sym.st_shndx != SHN_UNDEF && sym.st_size > 0
        && !add(r, addr, addr + sym.st_size, name, 0, rank(&sym, name)))
      return;
  }
  if (r->count > 0)
    qsort(r->ranges, r->count, sizeof *r->ranges, byLow);
}

const char *SymIndexName(Dwfl_Module *mod, uint64_t pc)
{
  ModuleIndexStruct *mi = indexOf(mod);
  const RangeStruct *found;
  if (mi == NULL)
    return dwfl_module_addrname(mod, pc);
  if (!mi->symbolsRead) {
    mi->symbolsRead = 1;
    readSymbols(mod, &mi->symbols);
  }
  found = find(&mi->symbols, pc);
  return found != NULL ? found->name : NULL;
}

/* readStarts -- where each function the unwind tables describe begins,
 * from .eh_frame_hdr's sorted table (kept in stripped files): each
 * entry's start is 4 bytes relative to the section, as every linker
 * writes it (version 1, count udata4, table datarel sdata4) */
static void readStarts(Dwfl_Module *mod, RangesStruct *r)
{
  GElf_Addr bias;
  Elf *elf = dwfl_module_getelf(mod, &bias);
  Elf_Scn *scn = NULL;
  size_t strings;
  const uint16_t one = 1;
  GElf_Ehdr eh;
  if (elf == NULL || elf_getshdrstrndx(elf, &strings) != 0 || gelf_getehdr(elf, &eh) == NULL
      || eh.e_ident[EI_DATA] != (*(const unsigned char *)&one ? ELFDATA2LSB : ELFDATA2MSB))
    return;                     /* read as this machine's order below */
  while ((scn = elf_nextscn(elf, scn)) != NULL) {
    GElf_Shdr sh;
    Elf_Data *data;
    const char *name;
    const unsigned char *p;
    uint32_t count;
    if (gelf_getshdr(scn, &sh) == NULL || (name = elf_strptr(elf, strings, sh.sh_name)) == NULL
        || strcmp(name, ".eh_frame_hdr") != 0 || (data = elf_getdata(scn, NULL)) == NULL)
      continue;
    p = data->d_buf;
    if (data->d_size < 12 || p[0] != 1 || (p[1] & 0x0f) != 0x0b || p[2] != 0x03 || p[3] != 0x3b)
      return;
    memcpy(&count, p + 8, 4);
    for (uint32_t i = 0; i < count && 12 + ((size_t)i + 1) * 8 <= data->d_size; ++i) {
      int32_t at;
      memcpy(&at, p + 12 + (size_t)i * 8, 4);
      if (!add(r, sh.sh_addr + (uint64_t)(int64_t)at + bias, UINT64_MAX, NULL, 0, 0))
        return;
    }
    for (size_t i = 0; i + 1 < r->count; ++i)
      r->ranges[i].high = r->ranges[i + 1].low;    /* sorted: each ends where the next begins */
    return;
  }
}

uint64_t SymIndexStart(Dwfl_Module *mod, uint64_t pc)
{
  ModuleIndexStruct *mi = indexOf(mod);
  const RangeStruct *found;
  if (mi == NULL)
    return 0;
  if (!mi->startsRead) {
    mi->startsRead = 1;
    readStarts(mod, &mi->starts);
  }
  found = find(&mi->starts, pc);
  return found != NULL ? found->low : 0;
}

/* readFunctions -- the ranges of the functions among die's children,
 * looking inside namespaces and classes (C++ defines functions there) */
static void readFunctions(Dwarf_Die *die, RangesStruct *r, unsigned depth)
{
  Dwarf_Die child;
  if (depth > 8 || dwarf_child(die, &child) != 0)
    return;
  do {
    int tag = dwarf_tag(&child);
    if (tag == DW_TAG_subprogram) {
      Dwarf_Addr base, low, high;
      ptrdiff_t at = 0;
      while ((at = dwarf_ranges(&child, at, &base, &low, &high)) > 0)
        if (low < high && !add(r, low, high, NULL, dwarf_dieoffset(&child), 0))
          return;
    } else if (tag == DW_TAG_namespace || tag == DW_TAG_class_type
               || tag == DW_TAG_structure_type || tag == DW_TAG_union_type)
      readFunctions(&child, r, depth + 1);
  } while (dwarf_siblingof(&child, &child) == 0);
}

static UnitStruct *unitOf(ModuleIndexStruct *mi, Dwarf_Die *cu)
{
  Dwarf_Off offset = dwarf_dieoffset(cu);
  UnitStruct *units;
  for (size_t i = 0; i < mi->unitCount; ++i)
    if (mi->units[i].offset == offset)
      return &mi->units[i];
  units = realloc(mi->units, (mi->unitCount + 1) * sizeof *units);
  if (units == NULL)
    return NULL;
  mi->units = units;
  memset(&units[mi->unitCount], 0, sizeof *units);
  units[mi->unitCount].offset = offset;
  readFunctions(cu, &units[mi->unitCount].functions, 0);
  if (units[mi->unitCount].functions.count > 0)
    qsort(units[mi->unitCount].functions.ranges, units[mi->unitCount].functions.count,
          sizeof(RangeStruct), byLow);
  return &mi->units[mi->unitCount++];
}

/* descend -- from the function die down the blocks and inlined calls
 * that hold pc: scopes[0 .. n-1], outermost first; the count */
static int descend(Dwarf_Die *function, Dwarf_Addr pc, Dwarf_Die *scopes, int limit)
{
  int n = 0;
  Dwarf_Die die = *function, child;
  scopes[n++] = die;
  while (n < limit && dwarf_child(&die, &child) == 0) {
    int found = 0;
    do {
      int tag = dwarf_tag(&child);
      if ((tag == DW_TAG_inlined_subroutine || tag == DW_TAG_lexical_block
           || tag == DW_TAG_try_block || tag == DW_TAG_catch_block)
          && dwarf_haspc(&child, pc) == 1) {
        found = 1;
        break;
      }
    } while (dwarf_siblingof(&child, &child) == 0);
    if (!found)
      break;
    die = child;
    scopes[n++] = die;
  }
  return n;
}

int SymIndexScopes(Dwfl_Module *mod, Dwarf_Die *cu, Dwarf_Addr pc, Dwarf_Die **scopesReturn)
{
  ModuleIndexStruct *mi = indexOf(mod);
  UnitStruct *unit = mi != NULL ? unitOf(mi, cu) : NULL;
  const RangeStruct *found = unit != NULL ? find(&unit->functions, pc) : NULL;
  Dwarf_Die function, outer[64];
  Dwarf_Die *scopes;
  int n;
  if (found == NULL || dwarf_offdie(dwfl_module_getdwarf(mod, &(Dwarf_Addr){0}), found->offset,
                                    &function) == NULL)
    return dwarf_getscopes(cu, pc, scopesReturn);
  n = descend(&function, pc, outer, 64);
  if ((scopes = malloc((size_t)n * sizeof *scopes)) == NULL)
    return -1;
  for (int i = 0; i < n; ++i)
    scopes[i] = outer[n - 1 - i];          /* innermost first, as dwarf_getscopes */
  *scopesReturn = scopes;
  return n;
}

static int freeModule(Dwfl_Module *mod, void **userdata, const char *name, Dwarf_Addr start,
                      void *arg)
{
  ModuleIndexStruct *mi = *userdata;
  (void)mod, (void)name, (void)start, (void)arg;
  if (mi != NULL) {
    for (size_t i = 0; i < mi->unitCount; ++i)
      free(mi->units[i].functions.ranges);
    free(mi->units);
    free(mi->symbols.ranges);
    free(mi->starts.ranges);
    free(mi);
    *userdata = NULL;
  }
  return DWARF_CB_OK;
}

void SymIndexFree(Dwfl *dwfl)
{
  if (dwfl != NULL)
    dwfl_getmodules(dwfl, freeModule, NULL, 0);
}
