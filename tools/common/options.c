/* <tools/common/options.c> -- the tools' command lines, from a table
 *
 * .design: design/tools.txt .tools.options
 *
 * See options.h.
 */

#include "options.h"
#include "report.h"

#include <stdlib.h>
#include <string.h>

/* optionField -- where an option's value goes in opt */
static void *optionField(void *opt, const OptionStruct *o)
{
  return (char *)opt + o->at;
}

/* optionMatch -- whether arg is o, as its name or alias, alone or (for
 * an option with a value) followed by "=V" */
static int optionMatch(const OptionStruct *o, const char *arg)
{
  const char *names[2] = {o->name, o->alias};
  for (size_t k = 0; k < 2; ++k) {
    size_t n;
    if (names[k] == NULL)
      continue;
    n = strlen(names[k]);
    if (strncmp(arg, names[k], n) == 0
        && (arg[n] == '\0' || (arg[n] == '=' && o->arg != OptionFlag && o->arg != OptionHelp
                               && o->arg != OptionVersion)))
      return 1;
  }
  return 0;
}

/* operandsKept -- the operands live as long as the program: a tool
 * that ends by exit(), deep in its work, has not leaked them */
static const char **operandsKept;

void OptionsParse(const OptionsSpecStruct *spec, int argc, char **argv, void *opt,
                  size_t optSize, const char ***operandsReturn, size_t *countReturn)
{
  const char **operands;
  size_t count = 0;
  int endOfOptions = 0;
  ReportTool(spec->tool);
  memset(opt, 0, optSize);
  operands = calloc((size_t)argc + 1, sizeof *operands);
  if (operands == NULL)
    ReportOutOfMemory();
  operandsKept = operands;
  for (int i = 1; i < argc; ++i) {
    const char *arg = argv[i], *eq, *value;
    const OptionStruct *o = NULL;
    if (endOfOptions || arg[0] != '-' || arg[1] == '\0') {
      operands[count++] = arg;
      if (spec->optionsFirst)
        endOfOptions = 1;
      continue;
    }
    if (strcmp(arg, "--") == 0) {
      endOfOptions = 1;
      continue;
    }
    for (size_t k = 0; k < spec->optionCount && o == NULL; ++k)
      if (spec->options[k].arg != OptionHeading && optionMatch(&spec->options[k], arg))
        o = &spec->options[k];
    if (o == NULL && strcmp(arg, "-h") == 0) {
      OptionsHelp(spec, stdout);
      exit(EXIT_SUCCESS);
    }
    if (o == NULL)
      ReportUsage("unknown option: %s", arg);
    eq = strchr(arg, '=');
    switch (o->arg) {
    case OptionHelp:
      OptionsHelp(spec, stdout);
      exit(EXIT_SUCCESS);
    case OptionVersion:
      spec->version(stdout);
      exit(EXIT_SUCCESS);
    case OptionFlag:
      *(int *)optionField(opt, o) = 1;
      continue;
    case OptionOptional:
      if (eq != NULL)
        value = eq + 1;
      else if (o->next != NULL && i + 1 < argc && o->next(argc, argv, i + 1))
        value = argv[++i];
      else
        value = "";
      if (eq != NULL && *value == '\0')
        ReportUsage("empty argument to %s", arg);
      *(const char **)optionField(opt, o) = value;
      continue;
    case OptionValue:
    case OptionList:
      if (eq != NULL)
        value = eq + 1;
      else if (i + 1 >= argc)
        ReportUsage("missing argument to %s", arg);
      else
        value = argv[++i];
      if (*value == '\0')
        ReportUsage("empty argument to %s", arg);
      if (o->arg == OptionValue) {
        *(const char **)optionField(opt, o) = value;
      } else {
        OptionListStruct *list = optionField(opt, o);
        if (list->count == OPTION_LIST_LIMIT)
          ReportUsage("too many %s (at most %d)", o->name, OPTION_LIST_LIMIT);
        list->value[list->count++] = value;
      }
      continue;
    case OptionHeading:
      break;
    }
  }
  *operandsReturn = operands;
  *countReturn = count;
}

/* helpLines -- text's lines, each after indent spaces but the first */
static void helpLines(FILE *out, const char *text, unsigned indent)
{
  for (const char *p = text; *p != '\0'; ) {
    const char *nl = strchr(p, '\n');
    size_t n = nl != NULL ? (size_t)(nl - p) : strlen(p);
    if (p != text)
      fprintf(out, "%*s", (int)indent, "");
    fprintf(out, "%.*s\n", (int)n, p);
    p += n + (nl != NULL);
  }
}

void OptionsHelp(const OptionsSpecStruct *spec, FILE *out)
{
  fputs(spec->usage, out);
  for (size_t k = 0; k < spec->optionCount; ++k) {
    const OptionStruct *o = &spec->options[k];
    char names[128];
    if (o->help == NULL)
      continue;
    if (o->arg == OptionHeading) {
      fprintf(out, "%s\n", o->help);
      continue;
    }
    snprintf(names, sizeof names, "  %s%s%s%s%s", o->alias != NULL ? o->alias : "",
             o->alias != NULL ? ", " : "", o->name,
             o->argName != NULL && strncmp(o->argName, "[=", 2) != 0 ? " " : "",
             o->argName != NULL ? o->argName : "");
    if (strlen(names) + 2 > spec->column) {
      fprintf(out, "%s\n%*s", names, (int)spec->column, "");
      helpLines(out, o->help, spec->column);
    } else {
      fprintf(out, "%-*s", (int)spec->column, names);
      helpLines(out, o->help, spec->column);
    }
  }
  if (spec->epilogue != NULL)
    fputs(spec->epilogue, out);
}

int OptionsNumber(const char *s, long low, long high)
{
  size_t n = strlen(s);
  if (n == 0 || n > 18 || strspn(s, "0123456789") != n)
    return 0;
  return strtol(s, NULL, 10) >= low && strtol(s, NULL, 10) <= high;
}
