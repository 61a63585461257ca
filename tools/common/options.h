/* <tools/common/options.h> -- the tools' command lines, from a table
 *
 * .design: design/tools.txt .tools.options
 *
 * A tool declares its long options in a table, one row each: its name,
 * a short alias, whether it takes an argument, where the value goes (an
 * offset in the tool's own options structure) and its help.  One
 * parser reads argv by the table, and one printer writes --help from
 * it, so that an option cannot be parsed and not documented, or the
 * other way round.
 *
 * As every tool reads them: options before or after the operands (but
 * with optionsFirst), "--" ends them, "-" is an operand (standard
 * input), a value as "--name V" or "--name=V", and an empty value is a
 * usage error.  --help and -h print the help on stdout and exit 0;
 * --version prints the version and exits 0.  A usage error is said by
 * ReportUsage (report.h): exit 2.
 */

#ifndef options_h
#define options_h

#include <stddef.h>
#include <stdio.h>

/* OptionArg -- what an option takes */
typedef enum OptionArg {
  OptionHeading,        /* no option: a line of the help, as it is */
  OptionFlag,           /* nothing: sets an int to 1 */
  OptionValue,          /* --name V or --name=V: sets a const char * */
  OptionOptional,       /* --name or --name=V: sets a const char *, "" for --name
                         * (but see OptionStruct.next) */
  OptionList,           /* as OptionValue, each value added to an OptionListStruct */
  OptionHelp,           /* --help */
  OptionVersion         /* --version */
} OptionArg;

/* OptionNextFunction -- whether argv[i], after an OptionOptional with
 * no "=", is its value ("--folded bytes LOG") */
typedef int (*OptionNextFunction)(int argc, char **argv, int i);

/* OptionStruct -- a row of a tool's table */
typedef struct OptionStruct {
  const char *name;             /* "--kind"; NULL for OptionHeading */
  const char *alias;            /* "-o", or NULL */
  OptionArg arg;
  size_t at;                    /* offset of its field in the tool's options */
  const char *argName;          /* in the help: "K[,K...]", "[=LEVEL]", or NULL */
  const char *help;             /* lines, each but the last ending "\n"; NULL: not in
                                   the help (an option between a tool and itself) */
  OptionNextFunction next;      /* OptionOptional: takes the next argument, or NULL */
} OptionStruct;

/* OPTION_LIST_LIMIT -- values an OptionList keeps */
#define OPTION_LIST_LIMIT 16

typedef struct OptionListStruct {
  const char *value[OPTION_LIST_LIMIT];
  size_t count;
} OptionListStruct;

/* OptionsSpecStruct -- a tool's command line */
typedef struct OptionsSpecStruct {
  const char *tool;             /* as it names itself: "telltale-heap" */
  const char *usage;            /* the help before the options */
  const OptionStruct *options;
  size_t optionCount;
  const char *epilogue;         /* the help after them, or NULL */
  unsigned column;              /* where the options' help begins */
  int optionsFirst;             /* options end at the first operand */
  void (*version)(FILE *out);   /* prints --version */
} OptionsSpecStruct;

/* OptionsParse -- argv read by spec's table into opt (zeroed first);
 * the operands, in order, in *operandsReturn (malloc'd, argc entries,
 * so room for one more) and their count in *countReturn.  A usage
 * error, --help and --version exit. */
extern void OptionsParse(const OptionsSpecStruct *spec, int argc, char **argv, void *opt,
                         size_t optSize, const char ***operandsReturn, size_t *countReturn);

/* OptionsHelp -- the help, from the table, on out */
extern void OptionsHelp(const OptionsSpecStruct *spec, FILE *out);

/* OptionsNumber -- 1 if s is a decimal number from low to high, in at
 * most digits digits */
extern int OptionsNumber(const char *s, long low, long high);

#endif /* options_h */
