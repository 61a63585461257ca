/* <tools/heap/symbols.c> -- return addresses named offline with libdw
 *
 * .design: design/heap.txt .heap.symbols design/recorder.txt .stacks.map
 *
 * Every file the log's MapExec events name is reported to a Dwfl at the
 * load bias its mappings give, so that dwfl_addrmodule finds an
 * address's file: to the first Dwfl where it overlaps no file reported,
 * as a file loaded where an unloaded one was overlaps it.  A stack's
 * address is named with the mapping in force when the stack was defined
 * (.heap.symbols.time), so one address names two functions before and
 * after a reload.  Function names come
 * from the symbol table, files and lines from the DWARF line table,
 * both of the files on this machine: never of the running program.  A
 * return address is looked up one byte back, inside its call.
 */

#include <dlfcn.h>
#include <dwarf.h>
#include <elfutils/libdwfl.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <inttypes.h>
#include <gelf.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "heapint.h"

#define INLINE_LIMIT 16          /* frames one address may name */
#define LAYER_LIMIT 64           /* Dwfls: files mapped over one another */

typedef struct CachedStruct {
  uint64_t address;             /* 0: empty */
  uint64_t version;             /* the map version it was named in */
  size_t first, count;          /* its frames in the pool */
} CachedStruct;

struct HeapSymbolsStruct {
  Dwfl *dwfl[LAYER_LIMIT];      /* [0] has every file unless some overlap */
  size_t layerCount;
  const HeapMapStruct *maps;
  size_t mapCount;
  size_t *mapLayer;             /* each map's Dwfl; SIZE_MAX: its file is not reported */
  CachedStruct *cache;
  size_t capacity, count;
  ProfileFrameStruct *pool;     /* the frames of the addresses cached */
  size_t poolCount, poolCapacity;
  char **names;                 /* function names made here: readable() */
  size_t nameCount;
};

static char *debuginfoPath;     /* libdw's default search path */

static const Dwfl_Callbacks callbacks = {
  .find_elf = dwfl_build_id_find_elf,
  .find_debuginfo = dwfl_standard_find_debuginfo,
  .section_address = dwfl_offline_section_address,
  .debuginfo_path = &debuginfoPath,
};

/* PlacedStruct -- where a map's file is reported: its bias, the
 * addresses the whole file takes at it, its Dwfl, and its descriptor
 * until reported (-1 if an earlier map of it reports it) */
typedef struct PlacedStruct {
  uint64_t bias, low, high;
  int fd;
} PlacedStruct;

/* loadBias -- the bias at which the mapping m of the file elf lies:
 * address = bias + p_vaddr for a file offset in the PT_LOAD segment
 * that holds m's offset, and the addresses [low, high) its segments
 * take at that bias.  0 if no segment holds it, else 1. */
static int loadBias(Elf *elf, const HeapMapStruct *m, PlacedStruct *p)
{
  size_t phnum;
  long page = sysconf(_SC_PAGESIZE);
  uint64_t mask = page > 0 ? ~((uint64_t)page - 1) : ~(uint64_t)4095;
  uint64_t low = UINT64_MAX, high = 0;
  int ok = 0;
  if (elf_getphdrnum(elf, &phnum) != 0)
    return 0;
  for (size_t i = 0; i < phnum; ++i) {
    GElf_Phdr ph;
    if (gelf_getphdr(elf, (int)i, &ph) == NULL || ph.p_type != PT_LOAD)
      continue;
    if (!ok && (ph.p_offset & mask) <= m->offset && m->offset < ph.p_offset + ph.p_filesz) {
      ok = 1;
      p->bias = m->start + ph.p_offset - m->offset - ph.p_vaddr;
    }
    low = ph.p_vaddr < low ? ph.p_vaddr : low;
    high = ph.p_vaddr + ph.p_memsz > high ? ph.p_vaddr + ph.p_memsz : high;
  }
  p->low = p->bias + (low & mask);
  p->high = p->bias + high;
  return ok;
}

/* place -- choose the Dwfl of map i's file: an earlier map's if it is
 * the same file at the same bias, else the first where it overlaps no
 * file placed; SIZE_MAX if it cannot be read (or is [vdso] and the like) */
static size_t place(HeapSymbolsStruct *sy, PlacedStruct *placed, size_t i)
{
  const HeapMapStruct *m = &sy->maps[i];
  PlacedStruct *p = &placed[i];
  struct stat st;
  size_t layer = 0;
  Elf *elf;
  int ok = 0;
  p->fd = -1;
  if (m->path == NULL || m->path[0] != '/'
      || (p->fd = open(m->path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY)) < 0)
    return SIZE_MAX;
  /* Only a regular file is read: a path in a log may name a FIFO or a
   * device, which would block or never end (.heap.symbols.file) */
  if (fstat(p->fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    close(p->fd);
    p->fd = -1;
    return SIZE_MAX;
  }
  elf = elf_begin(p->fd, ELF_C_READ_MMAP, NULL);
  ok = elf != NULL && loadBias(elf, m, p);
  if (elf != NULL)
    elf_end(elf);
  for (size_t j = 0; ok && j < i; ++j)
    if (sy->mapLayer[j] != SIZE_MAX && placed[j].bias == p->bias
        && strcmp(sy->maps[j].path, m->path) == 0) {
      close(p->fd);
      p->fd = -1;
      return sy->mapLayer[j];
    }
  for (size_t j = 0; ok && j < i; ++j)
    if (sy->mapLayer[j] == layer && placed[j].low < p->high && p->low < placed[j].high) {
      ++layer;                  /* overlaps: try the next, from the first map */
      j = (size_t)-1;
    }
  if (!ok || layer >= LAYER_LIMIT) {
    close(p->fd);
    p->fd = -1;
    return SIZE_MAX;
  }
  return layer;
}

HeapSymbolsStruct *HeapSymbolsNew(const HeapMapStruct *maps, size_t mapCount)
{
  HeapSymbolsStruct *sy = calloc(1, sizeof *sy);
  PlacedStruct *placed = calloc(mapCount + 1, sizeof *placed);
  if (sy == NULL || placed == NULL || (sy->mapLayer = calloc(mapCount + 1, sizeof *sy->mapLayer)) == NULL) {
    free(placed);
    HeapSymbolsFree(sy);
    return NULL;
  }
  elf_version(EV_CURRENT);
  sy->maps = maps;
  sy->mapCount = mapCount;
  for (size_t i = 0; i < mapCount; ++i) {
    sy->mapLayer[i] = place(sy, placed, i);
    if (sy->mapLayer[i] != SIZE_MAX && sy->mapLayer[i] >= sy->layerCount)
      sy->layerCount = sy->mapLayer[i] + 1;
  }
  for (size_t layer = 0; layer < sy->layerCount; ++layer) {
    Dwfl *dwfl = sy->dwfl[layer] = dwfl_begin(&callbacks);
    if (dwfl != NULL)
      dwfl_report_begin(dwfl);
    for (size_t i = 0; i < mapCount; ++i)
      if (sy->mapLayer[i] == layer && placed[i].fd >= 0
          && (dwfl == NULL || dwfl_report_elf(dwfl, maps[i].path, maps[i].path, placed[i].fd,
                                              placed[i].bias, true) == NULL))
        close(placed[i].fd);    /* on success libdw owns fd */
    if (dwfl != NULL)
      dwfl_report_end(dwfl, NULL, NULL);
  }
  free(placed);
  return sy;
}

/* DemangleFunction -- libstdc++'s __cxa_demangle */
typedef char *(*DemangleFunction)(const char *mangled, char *buf, size_t *length, int *status);

/* demangler -- __cxa_demangle, found at run time so that the tool needs
 * no C++ runtime of its own; NULL where libstdc++ is not installed (and
 * then there are few C++ programs to read) */
static DemangleFunction demangler(void)
{
  static int tried;
  static DemangleFunction demangle;
  if (!tried) {
    void *lib = dlopen("libstdc++.so.6", RTLD_LAZY | RTLD_LOCAL);
    tried = 1;
    if (lib != NULL)
      *(void **)&demangle = dlsym(lib, "__cxa_demangle");
  }
  return demangle;
}

/* keep -- a name made here, freed with the symbols; NULL if there is
 * no memory for it */
static const char *keep(HeapSymbolsStruct *sy, char *name)
{
  char **names;
  if (name == NULL)
    return NULL;
  names = realloc(sy->names, (sy->nameCount + 1) * sizeof *names);
  if (names == NULL) {
    free(name);
    return NULL;
  }
  sy->names = names;
  return sy->names[sy->nameCount++] = name;
}

/* readable -- a symbol's name as the source says it: without its
 * version ("__libc_start_main@@GLIBC_2.34") and, for C++, demangled */
static const char *readable(HeapSymbolsStruct *sy, const char *name)
{
  const char *at = name != NULL ? strchr(name, '@') : NULL, *kept;
  DemangleFunction demangle = name != NULL && strncmp(name, "_Z", 2) == 0 ? demangler() : NULL;
  char *copy = NULL, *plain;
  int status = -1;
  if (at != NULL && at != name && (copy = strndup(name, (size_t)(at - name))) == NULL)
    return name;
  if (demangle != NULL
      && (plain = demangle(copy != NULL ? copy : name, NULL, NULL, &status)) != NULL) {
    if (status == 0) {
      free(copy);
      copy = plain;
    } else
      free(plain);
  }
  kept = keep(sy, copy);
  return kept != NULL ? kept : name;
}

/* dieName -- the name of a function's or inlined call's DIE, from its
 * abstract origin if it has none of its own: its linkage name if it has
 * one (C++: mangled, as the symbol table has it), else its name */
static const char *dieName(Dwarf_Die *die)
{
  Dwarf_Attribute attr;
  if (dwarf_attr_integrate(die, DW_AT_linkage_name, &attr) != NULL
      || dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &attr) != NULL
      || dwarf_attr_integrate(die, DW_AT_name, &attr) != NULL)
    return dwarf_formstring(&attr);
  return NULL;
}

/* inlined -- the frames of the calls inlined at pc, innermost first,
 * after frames[0] (the innermost, already placed by the line table):
 * each inlined call's DIE names the function it is in, and says the
 * line of its call in the function around it; the function's DIE names
 * the last (else the symbol table does: lookup).  Returns the count. */
static size_t inlined(HeapSymbolsStruct *sy, Dwfl_Module *mod, uint64_t pc,
                      ProfileFrameStruct *frames)
{
  Dwarf_Addr bias;
  Dwarf_Die *cu = dwfl_module_addrdie(mod, pc, &bias), *scopes = NULL;
  Dwarf_Files *files = NULL;
  size_t n = 1, fileCount = 0;
  int scopeCount = cu != NULL ? SymIndexScopes(mod, cu, pc - bias, &scopes) : 0;
  if (cu != NULL)
    (void)dwarf_getsrcfiles(cu, &files, &fileCount);
  for (int i = 0; i < scopeCount && n < INLINE_LIMIT; ++i) {
    Dwarf_Attribute attr;
    Dwarf_Word file = 0, line = 0;
    if (dwarf_tag(&scopes[i]) == DW_TAG_subprogram) {
      frames[n - 1].function = readable(sy, dieName(&scopes[i]));
      break;
    }
    if (dwarf_tag(&scopes[i]) != DW_TAG_inlined_subroutine)
      continue;
    frames[n - 1].function = readable(sy, dieName(&scopes[i]));
    frames[n] = frames[n - 1];
    frames[n].function = NULL;          /* named by the next scope */
    frames[n].file = NULL, frames[n].line = 0;
    if (dwarf_formudata(dwarf_attr(&scopes[i], DW_AT_call_file, &attr), &file) == 0
        && files != NULL && file < fileCount
        && dwarf_formudata(dwarf_attr(&scopes[i], DW_AT_call_line, &attr), &line) == 0) {
      frames[n].file = dwarf_filesrc(files, (size_t)file, NULL, NULL);
      frames[n].line = (unsigned)line;
    }
    ++n;
  }
  free(scopes);
  return n;
}

/* unnamed -- a function without a symbol, named by where it begins in
 * its file ("git+0x2895f0", by the unwind tables), so that its calls
 * are one function, as in every run; NULL if the tables do not say */
static const char *unnamed(HeapSymbolsStruct *sy, Dwfl_Module *mod, uint64_t pc,
                           const ProfileFrameStruct *frame)
{
  uint64_t start = frame->module != NULL ? SymIndexStart(mod, pc) : 0;
  const char *base = frame->module != NULL ? strrchr(frame->module, '/') : NULL;
  char name[512];
  if (start == 0 || start > frame->address || frame->address - start > frame->moduleOffset)
    return NULL;
  snprintf(name, sizeof name, "%s+0x%" PRIx64, base != NULL ? base + 1 : frame->module,
           frame->moduleOffset - (frame->address - start));
  return keep(sy, strdup(name));
}

/* mapAt -- the map that holds pc for a stack of map version version:
 * the one in force then, else the latest of any time (a log that says
 * too little); SIZE_MAX if none.  .heap.symbols.time */
static size_t mapAt(const HeapSymbolsStruct *sy, uint64_t pc, uint64_t version)
{
  size_t any = SIZE_MAX;
  for (size_t i = 0; i < sy->mapCount; ++i) {
    const HeapMapStruct *m = &sy->maps[i];
    if (m->start <= pc && pc < m->end) {
      if (m->born <= version && version < m->died)
        return i;
      any = i;
    }
  }
  return any;
}

/* cuHolds -- whether pc (the DWARF's) is in the compilation unit's
 * ranges; a unit that gives none (a line table alone) is believed */
static int cuHolds(Dwarf_Die *cu, Dwarf_Addr pc)
{
  if (!dwarf_hasattr(cu, DW_AT_low_pc) && !dwarf_hasattr(cu, DW_AT_ranges))
    return 1;
  return dwarf_haspc(cu, pc) == 1;
}

/* symbolOnly -- frames[0] named by the symbol table alone; 1 */
static size_t symbolOnly(HeapSymbolsStruct *sy, Dwfl_Module *mod, uint64_t pc,
                         ProfileFrameStruct *frames)
{
  frames[0].function = readable(sy, SymIndexName(mod, pc));
  if (frames[0].function == NULL)
    frames[0].function = unnamed(sy, mod, pc, &frames[0]);
  return 1;
}

/* lookup -- the frames at address into frames (INLINE_LIMIT of them),
 * uncached; the count */
static size_t lookup(HeapSymbolsStruct *sy, uint64_t address, uint64_t version,
                     ProfileFrameStruct *frames)
{
  uint64_t pc = address - 1;    /* inside the call, not after it */
  ProfileFrameStruct *frame = &frames[0];
  size_t map = mapAt(sy, pc, version);
  Dwfl_Module *mod;
  Dwfl_Line *line;
  Dwarf_Die *cu;
  Dwarf_Addr bias;
  size_t n;
  memset(frame, 0, sizeof *frame);
  frame->address = address;
  if (map != SIZE_MAX) {
    frame->module = sy->maps[map].path;
    frame->moduleOffset = address - sy->maps[map].start + sy->maps[map].offset;
  }
  if (map == SIZE_MAX || sy->mapLayer[map] == SIZE_MAX || sy->dwfl[sy->mapLayer[map]] == NULL
      || (mod = dwfl_addrmodule(sy->dwfl[sy->mapLayer[map]], pc)) == NULL)
    return 1;
  /* libdwfl gives an address between two compilation units' code to the
   * one before (_start after main, in a g++ -O2 program), and its line
   * table the last line there: an address outside its unit's ranges
   * has no line and no inlined calls, as addr2line says (.heap.symbols.cu) */
  cu = dwfl_module_addrdie(mod, pc, &bias);
  if (cu == NULL || !cuHolds(cu, pc - bias))
    return symbolOnly(sy, mod, pc, frames);
  line = dwfl_module_getsrc(mod, pc);
  if (line != NULL) {
    int lineNumber = 0;
    frame->file = dwfl_lineinfo(line, NULL, &lineNumber, NULL, NULL, NULL);
    frame->line = frame->file != NULL && lineNumber > 0 ? (unsigned)lineNumber : 0;
  }
  n = inlined(sy, mod, pc, frames);
  /* the function the code is in, if its DIE did not name it: the
   * symbol table's name, as for a file without debug information */
  if (frames[n - 1].function == NULL)
    frames[n - 1].function = readable(sy, SymIndexName(mod, pc));
  if (frames[n - 1].function == NULL)
    frames[n - 1].function = unnamed(sy, mod, pc, frame);
  return n;
}


static size_t cacheSlot(const HeapSymbolsStruct *sy, uint64_t address, uint64_t version)
{
  size_t i = (size_t)(((address ^ version << 48) * 0x9E3779B97F4A7C15u) >> 24) & (sy->capacity - 1);
  while (sy->cache[i].address != 0
         && (sy->cache[i].address != address || sy->cache[i].version != version))
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
      sy->cache[cacheSlot(sy, old[i].address, old[i].version)] = old[i];
  free(old);
  return 1;
}

size_t HeapSymbolise(HeapSymbolsStruct *sy, uint64_t address, uint64_t version,
                     const ProfileFrameStruct **framesReturn)
{
  static ProfileFrameStruct none;      /* address 0: no frame was there */
  ProfileFrameStruct frames[INLINE_LIMIT];
  size_t i, n;
  if (address == 0) {
    *framesReturn = &none;
    return 1;
  }
  if ((sy->count + 1) * 2 > sy->capacity && !cacheGrow(sy))
    return 0;
  i = cacheSlot(sy, address, version);
  if (sy->cache[i].address != address || sy->cache[i].version != version) {
    n = lookup(sy, address, version, frames);
    if (sy->poolCount + n > sy->poolCapacity) {
      size_t capacity = sy->poolCapacity == 0 ? 4096 : sy->poolCapacity * 2;
      ProfileFrameStruct *pool = realloc(sy->pool, capacity * sizeof *pool);
      if (pool == NULL)
        return 0;
      sy->pool = pool;
      sy->poolCapacity = capacity;
    }
    memcpy(&sy->pool[sy->poolCount], frames, n * sizeof *frames);
    sy->cache[i] = (CachedStruct){address, version, sy->poolCount, n};
    sy->poolCount += n;
    ++sy->count;
  }
  *framesReturn = &sy->pool[sy->cache[i].first];
  return sy->cache[i].count;
}

void HeapSymbolsFree(HeapSymbolsStruct *sy)
{
  if (sy == NULL)
    return;
  for (size_t layer = 0; layer < sy->layerCount; ++layer)
    if (sy->dwfl[layer] != NULL) {
      SymIndexFree(sy->dwfl[layer]);
      dwfl_end(sy->dwfl[layer]);
    }
  free(sy->mapLayer);
  for (size_t i = 0; i < sy->nameCount; ++i)
    free(sy->names[i]);
  free(sy->names);
  free(sy->cache);
  free(sy->pool);
  free(sy);
}
