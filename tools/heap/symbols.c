/* <tools/heap/symbols.c> -- return addresses named offline with libdw
 *
 * .design: design/telemetry.txt .heap.symbols .stacks.map
 *
 * Every file the log's MapExec events name is reported to one Dwfl at
 * the load bias its mappings give (a process's mappings never overlap),
 * so that dwfl_addrmodule finds an address's file.  Function names come
 * from the symbol table, files and lines from the DWARF line table,
 * both of the files on this machine: never of the running program.  A
 * return address is looked up one byte back, inside its call.
 */

#include <elfutils/libdwfl.h>
#include <fcntl.h>
#include <gelf.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "heapint.h"

typedef struct CachedStruct {
  uint64_t address;             /* 0: empty */
  ProfileFrameStruct frame;
} CachedStruct;

struct HeapSymbolsStruct {
  Dwfl *dwfl;
  const HeapMapStruct *maps;
  size_t mapCount;
  CachedStruct *cache;
  size_t capacity, count;
  char **names;                 /* function names made here: unversioned */
  size_t nameCount;
};

static char *debuginfoPath;     /* libdw's default search path */

static const Dwfl_Callbacks callbacks = {
  .find_elf = dwfl_build_id_find_elf,
  .find_debuginfo = dwfl_standard_find_debuginfo,
  .section_address = dwfl_offline_section_address,
  .debuginfo_path = &debuginfoPath,
};

/* loadBias -- the bias at which the mapping m of the file elf lies:
 * address = bias + p_vaddr for a file offset in the PT_LOAD segment
 * that holds m's offset.  0 with *okReturn 0 if no segment holds it. */
static uint64_t loadBias(Elf *elf, const HeapMapStruct *m, int *okReturn)
{
  size_t phnum;
  long page = sysconf(_SC_PAGESIZE);
  uint64_t mask = page > 0 ? ~((uint64_t)page - 1) : ~(uint64_t)4095;
  *okReturn = 0;
  if (elf_getphdrnum(elf, &phnum) != 0)
    return 0;
  for (size_t i = 0; i < phnum; ++i) {
    GElf_Phdr ph;
    if (gelf_getphdr(elf, (int)i, &ph) == NULL || ph.p_type != PT_LOAD)
      continue;
    if ((ph.p_offset & mask) <= m->offset && m->offset < ph.p_offset + ph.p_filesz) {
      *okReturn = 1;
      return m->start + ph.p_offset - m->offset - ph.p_vaddr;
    }
  }
  return 0;
}

/* report -- the file of map i, unless an earlier map reported it */
static void report(HeapSymbolsStruct *sy, size_t i)
{
  const HeapMapStruct *m = &sy->maps[i];
  int fd, ok = 0;
  Elf *elf;
  uint64_t bias;
  for (size_t j = 0; j < i; ++j)
    if (strcmp(sy->maps[j].path, m->path) == 0)
      return;
  if (m->path[0] != '/' || (fd = open(m->path, O_RDONLY | O_CLOEXEC)) < 0)
    return;                     /* [vdso] and the like, or gone since */
  elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
  bias = elf != NULL ? loadBias(elf, m, &ok) : 0;
  if (elf != NULL)
    elf_end(elf);
  if (!ok || dwfl_report_elf(sy->dwfl, m->path, m->path, fd, bias, true) == NULL)
    close(fd);                  /* on success libdw owns fd */
}

HeapSymbolsStruct *HeapSymbolsNew(const HeapMapStruct *maps, size_t mapCount)
{
  HeapSymbolsStruct *sy = calloc(1, sizeof *sy);
  if (sy == NULL)
    return NULL;
  elf_version(EV_CURRENT);
  sy->maps = maps;
  sy->mapCount = mapCount;
  sy->dwfl = dwfl_begin(&callbacks);
  if (sy->dwfl != NULL) {
    dwfl_report_begin(sy->dwfl);
    for (size_t i = 0; i < mapCount; ++i)
      report(sy, i);
    dwfl_report_end(sy->dwfl, NULL, NULL);
  }
  return sy;
}

/* unversioned -- a symbol's name without its version
 * ("__libc_start_main@@GLIBC_2.34"), as the source names it */
static const char *unversioned(HeapSymbolsStruct *sy, const char *name)
{
  const char *at = name != NULL ? strchr(name, '@') : NULL;
  char **names, *copy;
  if (at == NULL || at == name)
    return name;
  names = realloc(sy->names, (sy->nameCount + 1) * sizeof *names);
  if (names == NULL)
    return name;
  sy->names = names;
  if ((copy = strndup(name, (size_t)(at - name))) == NULL)
    return name;
  return sy->names[sy->nameCount++] = copy;
}

/* lookup -- name the frame at address, uncached */
static void lookup(HeapSymbolsStruct *sy, uint64_t address, ProfileFrameStruct *frame)
{
  uint64_t pc = address - 1;    /* inside the call, not after it */
  Dwfl_Module *mod;
  Dwfl_Line *line;
  memset(frame, 0, sizeof *frame);
  frame->address = address;
  for (size_t i = 0; i < sy->mapCount; ++i)
    if (sy->maps[i].start <= pc && pc < sy->maps[i].end) {
      frame->module = sy->maps[i].path;
      frame->moduleOffset = address - sy->maps[i].start + sy->maps[i].offset;
    }
  if (sy->dwfl == NULL || (mod = dwfl_addrmodule(sy->dwfl, pc)) == NULL)
    return;
  frame->function = unversioned(sy, dwfl_module_addrname(mod, pc));
  line = dwfl_module_getsrc(mod, pc);
  if (line != NULL) {
    int lineNumber = 0;
    frame->file = dwfl_lineinfo(line, NULL, &lineNumber, NULL, NULL, NULL);
    frame->line = lineNumber > 0 ? (unsigned)lineNumber : 0;
    if (frame->file == NULL)
      frame->line = 0;
  }
}

static size_t cacheSlot(const HeapSymbolsStruct *sy, uint64_t address)
{
  size_t i = (size_t)((address * 0x9E3779B97F4A7C15u) >> 24) & (sy->capacity - 1);
  while (sy->cache[i].address != 0 && sy->cache[i].address != address)
    i = (i + 1) & (sy->capacity - 1);
  return i;
}

/* cacheGrow -- twice the room; 0 if there is no memory for it */
static int cacheGrow(HeapSymbolsStruct *sy)
{
  CachedStruct *old = sy->cache;
  size_t oldCapacity = sy->capacity, capacity = oldCapacity == 0 ? 1024 : oldCapacity * 2;
  CachedStruct *cache = calloc(capacity, sizeof *cache);
  if (cache == NULL)
    return 0;
  sy->cache = cache;
  sy->capacity = capacity;
  for (size_t i = 0; i < oldCapacity; ++i)
    if (old[i].address != 0)
      sy->cache[cacheSlot(sy, old[i].address)] = old[i];
  free(old);
  return 1;
}

void HeapSymbolise(HeapSymbolsStruct *sy, uint64_t address, ProfileFrameStruct *frame)
{
  size_t i;
  if (address == 0 || ((sy->count + 1) * 2 > sy->capacity && !cacheGrow(sy))) {
    lookup(sy, address, frame);
    return;
  }
  i = cacheSlot(sy, address);
  if (sy->cache[i].address == 0) {
    lookup(sy, address, &sy->cache[i].frame);
    sy->cache[i].address = address;
    ++sy->count;
  }
  *frame = sy->cache[i].frame;
}

void HeapSymbolsFree(HeapSymbolsStruct *sy)
{
  if (sy == NULL)
    return;
  if (sy->dwfl != NULL)
    dwfl_end(sy->dwfl);
  for (size_t i = 0; i < sy->nameCount; ++i)
    free(sy->names[i]);
  free(sy->names);
  free(sy->cache);
  free(sy);
}
