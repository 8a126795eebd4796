/* cli_opt.c: parsing argv against an option table (getopt_long underneath), the option lines of --help, the one-directory commands. */
#include "cli/cli_opt.h"

#include <string.h>

#include "base/err.h"
#include "cli/cli.h"

int cli_opt_takes(const struct cli_optset *set, int i)
{
	return i >= 0 && i < set->n && (!set->takes || (set->takes & CLI_BIT(i)));
}

void cli_opt_start(struct cli_optparse *p, const struct cli_command *cmd, const struct cli_optset *set,
		   int argc, char **argv)
{
	int nl = 0;
	char *s = p->shorts;

	memset(p, 0, sizeof(*p));
	p->cmd = cmd;
	p->set = set;
	p->argc = argc;
	p->argv = argv;
	/* ':' first: a missing value is told apart from an unknown option; no getopt messages of its own. */
	*s++ = ':';
	for (int i = 0; i < set->n && nl < CLI_OPT_MAX; i++) {
		const struct cli_opt *o = &set->opts[i];

		if (!cli_opt_takes(set, i) || !o->name)
			continue;
		p->longs[nl++] = (struct option){ o->name, o->value ? required_argument : no_argument, NULL,
						  256 + i };
		if (o->letter) {
			*s++ = o->letter;
			if (o->value)
				*s++ = ':';
		}
	}
	*s = '\0';
	p->ind = 1;
	opterr = 0;
	optind = 0; /* 0, not 1: glibc starts afresh, forgetting an earlier parse */
}

static int row_of_letter(const struct cli_optset *set, int c)
{
	for (int i = 0; i < set->n; i++)
		if (cli_opt_takes(set, i) && set->opts[i].letter == c)
			return i;
	return -1;
}

/* "--NAME" of argv[optind-1] with any "=VALUE" cut off. */
static void given_name(const struct cli_optparse *p, char *out, size_t n)
{
	const char *a = optind - 1 < p->argc && optind >= 1 ? p->argv[optind - 1] : "";
	size_t len = strcspn(a, "=");

	snprintf(out, n, "%.*s", (int)(len < n ? len : n - 1), a);
}

/* An option the table has but this verb does not take: which verbs of the family take it. */
static int refuse_sibling(const struct cli_optparse *p, const char *name)
{
	const struct cli_optset *set = p->set;
	char verbs[256] = "";
	size_t used = 0;
	int n = 0, k = 0;

	if (!set->family || strncmp(name, "--", 2))
		return 0;
	for (int i = 0; i < set->n; i++) {
		if (!set->opts[i].name || strcmp(set->opts[i].name, name + 2) || cli_opt_takes(set, i))
			continue;
		for (const struct cli_optset *const *f = set->family; *f; f++)
			n += *f != set && cli_opt_takes(*f, i);
		for (const struct cli_optset *const *f = set->family; *f; f++)
			if (*f != set && cli_opt_takes(*f, i) && used < sizeof(verbs)) {
				k++;
				used += (size_t)snprintf(verbs + used, sizeof(verbs) - used, "%s%s",
							 k == 1 ? "" : k == n ? " and " : ", ", (*f)->verb);
			}
		cli_usage(p->cmd, "%s is an option of %s, not of %s", name, used ? verbs : "another command",
			  set->verb);
		return 1;
	}
	return 0;
}

int cli_opt_next(struct cli_optparse *p)
{
	char name[128];
	int c = getopt_long(p->argc, p->argv, p->shorts, p->longs, NULL);

	p->arg = optarg;
	p->ind = optind;
	if (c == -1)
		return CLI_OPT_END;
	if (c >= 256 && c < 256 + p->set->n) {
		const char *typed = optind >= 1 && optind - 1 < p->argc ? p->argv[optind - 1] : "";
		size_t len;

		p->name = p->set->opts[c - 256].name;
		len = strlen(p->name);
		/* A value given apart is the word after the option. */
		if (optarg && optarg == typed && optind >= 2)
			typed = p->argv[optind - 2];
		/*
		 * getopt takes an unambiguous prefix as the option: refused, as it could
		 * be an option the writer did not mean (--refill for --refill-ok).
		 */
		if (strncmp(typed, "--", 2) == 0 &&
		    (strncmp(typed + 2, p->name, len) != 0 || (typed[2 + len] != '\0' && typed[2 + len] != '='))) {
			size_t n = strcspn(typed, "=");

			return cli_usage(p->cmd, "unknown option '%.*s' (options are given in full: --%s?)",
					 (int)(n < 100 ? n : 100), typed, p->name),
			       CLI_OPT_BAD;
		}
		return c - 256;
	}
	if (c == ':') {
		if (optopt && optopt < 256)
			return cli_usage(p->cmd, "-%c needs a value", optopt), CLI_OPT_BAD;
		given_name(p, name, sizeof(name));
		return cli_usage(p->cmd, "%s needs a value", name), CLI_OPT_BAD;
	}
	if (c == '?') {
		if (optopt >= 256 && optopt < 256 + p->set->n)
			/* A flag given "=VALUE". */
			return cli_usage(p->cmd, "--%s takes no value", p->set->opts[optopt - 256].name), CLI_OPT_BAD;
		if (optopt)
			return cli_usage(p->cmd, "unknown option '-%c'", optopt), CLI_OPT_BAD;
		given_name(p, name, sizeof(name));
		if (refuse_sibling(p, name))
			return CLI_OPT_BAD;
		return cli_usage(p->cmd, "unknown option '%s'", name), CLI_OPT_BAD;
	}
	{
		int row = row_of_letter(p->set, c);

		if (row < 0)
			return cli_usage(p->cmd, "unknown option '-%c'", c), CLI_OPT_BAD;
		p->name = p->set->opts[row].name;
		return row;
	}
}

int cli_opt_long(const struct cli_optparse *p, long lo, long hi, long *out)
{
	char name[128];
	bl_err err = { 0 };

	snprintf(name, sizeof(name), "--%s", p->name);
	if (cli_parse_long(name, p->arg, lo, hi, out, &err))
		return cli_usage(p->cmd, "%s", err.msg);
	return 0;
}

int cli_opt_double(const struct cli_optparse *p, double *out)
{
	char name[128];
	bl_err err = { 0 };

	snprintf(name, sizeof(name), "--%s", p->name);
	if (cli_parse_double(name, p->arg, out, &err))
		return cli_usage(p->cmd, "%s", err.msg);
	return 0;
}

void cli_opt_help(FILE *f, const struct cli_optset *set)
{
	for (int i = 0; i < set->n; i++) {
		const struct cli_opt *o = &set->opts[i];
		char head[128];
		int n;

		if (!cli_opt_takes(set, i) || !o->name || o->alias)
			continue;
		if (o->letter)
			n = snprintf(head, sizeof(head), "-%c, --%s", o->letter, o->name);
		else
			n = snprintf(head, sizeof(head), "    --%s", o->name);
		/* An alias is named beside the option it spells: the row after it. */
		if (i + 1 < set->n && set->opts[i + 1].alias && cli_opt_takes(set, i + 1))
			n += snprintf(head + n, sizeof(head) - (size_t)n, ", --%s", set->opts[i + 1].name);
		if (o->value)
			snprintf(head + n, sizeof(head) - (size_t)n, " %s", o->value);
		fprintf(f, "  %-30s %s\n", head, o->help);
	}
}

void cli_print_usage(FILE *f, const struct cli_command *cmd)
{
	fputs(cmd->usage, f);
	if (!cmd->optsets)
		return;
	for (const struct cli_optset *const *s = cmd->optsets; *s; s++) {
		fprintf(f, "\noptions of brushloop %s:\n", (*s)->verb);
		cli_opt_help(f, *s);
	}
}

const struct cli_optset *cli_verb_set(const struct cli_command *cmd, const char *word)
{
	size_t n = strlen(cmd->name);

	for (const struct cli_optset *const *s = cmd->optsets; s && *s; s++)
		if (!strncmp((*s)->verb, cmd->name, n) && (*s)->verb[n] == ' ' && !strcmp((*s)->verb + n + 1, word))
			return *s;
	return NULL;
}

/* Whether the paragraph at p opens with "WORD:" for a verb of cmd other than set's. */
static int sibling_paragraph(const struct cli_command *cmd, const struct cli_optset *set, const char *p)
{
	const char *colon = strchr(p, ':'), *nl = strchr(p, '\n');
	char word[32];

	if (!colon || (nl && colon > nl) || colon - p >= (long)sizeof(word))
		return 0;
	snprintf(word, sizeof(word), "%.*s", (int)(colon - p), p);
	return cli_verb_set(cmd, word) && cli_verb_set(cmd, word) != set;
}

void cli_print_verb_usage(FILE *f, const struct cli_command *cmd, const struct cli_optset *set)
{
	const char *p = cmd->usage;
	size_t vl = strlen(set->verb);
	int mine = 0, first = 1;

	/*
	 * The synopsis, up to the first blank line: "usage: brushloop VERB ..."
	 * or "       brushloop VERB ..." starts a verb's form, deeper indented
	 * lines go on with it. This verb's forms, the first as "usage: ".
	 */
	for (const char *nl; *p && *p != '\n'; p = *nl ? nl + 1 : nl) {
		const char *t = p + 7;

		if (!(nl = strchr(p, '\n')))
			nl = p + strlen(p);
		if (nl - p > 17 && !strncmp(t, "brushloop ", 10)) {
			mine = !strncmp(t + 10, set->verb, vl) && (t[10 + vl] == ' ' || t + 10 + vl == nl);
			if (mine)
				fprintf(f, "%s%.*s\n", first ? "usage: " : "       ", (int)(nl - t), t);
			first = first && !mine;
		} else if (mine) {
			fprintf(f, "%.*s\n", (int)(nl - p), p);
		}
	}
	/* The text, paragraph by paragraph, without those of the other verbs ("arm: ..."). */
	while (*p) {
		const char *start = p + strspn(p, "\n"), *end = strstr(start, "\n\n");
		size_t len;

		if (!*start)
			break;
		if (!end)
			end = start + strlen(start);
		len = (size_t)(end - start);
		if (len && start[len - 1] == '\n')
			len--;
		if (!sibling_paragraph(cmd, set, start))
			fprintf(f, "\n%.*s\n", (int)len, start);
		p = end;
	}
	fprintf(f, "\noptions of brushloop %s:\n", set->verb);
	cli_opt_help(f, set);
}

int cli_one_dir(const struct cli_command *cmd, const struct cli_optset *set, int argc, char **argv,
		uint64_t *given, const char **dir)
{
	struct cli_optparse p;
	int row;

	*given = 0;
	cli_opt_start(&p, cmd, set, argc, argv);
	while ((row = cli_opt_next(&p)) != CLI_OPT_END) {
		if (row == CLI_OPT_BAD)
			return BL_EXIT_USAGE;
		*given |= CLI_BIT(row);
	}
	if (p.ind >= argc)
		return cli_usage(cmd, "a run directory is needed");
	if (p.ind < argc - 1)
		return cli_usage(cmd, "one run directory only");
	*dir = argv[p.ind];
	return 0;
}
