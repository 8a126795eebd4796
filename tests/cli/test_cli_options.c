/* test_cli_options.c: the option tables against usage texts, docs/cli.md and README, and the parsing they drive (unknown options, missing values, short forms, a sibling verb's options). */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/cli_opt.h"
#include "test.h"

#define SRC BL_SOURCE_ROOT

/* Whether "--name" stands in text as a whole option name (not the start of a longer one). */
static int names_option(const char *text, const char *name)
{
	size_t n = strlen(name);

	for (const char *p = text; (p = strstr(p, "--")); p += 2)
		if (!strncmp(p + 2, name, n) && !(isalnum((unsigned char)p[2 + n]) || p[2 + n] == '-') &&
		    (p == text || (!isalnum((unsigned char)p[-1]) && p[-1] != '-')))
			return 1;
	return 0;
}

/* Whether text names the row: "--name", or "-L" when it has a short form. */
static int names_row(const char *text, const struct cli_opt *o)
{
	if (names_option(text, o->name))
		return 1;
	for (const char *p = text; o->letter && (p = strchr(p, '-')); p++)
		if (p[1] == o->letter && (p == text || (!isalnum((unsigned char)p[-1]) && p[-1] != '-')) &&
		    (p[2] == ' ' || p[2] == ']' || p[2] == ',' || p[2] == '`'))
			return 1;
	return 0;
}

/* Every row some verb of some command takes. */
#define EACH_ROW(c, s, i)                                                              \
	for (const struct cli_command *c = cli_commands; c->name; c++)                 \
		for (const struct cli_optset *const *s = c->optsets; s && *s; s++)     \
			for (int i = 0; i < (*s)->n; i++)                               \
				if (cli_opt_takes(*s, i) && !(*s)->opts[i].alias)

TEST(every_table_option_is_in_its_command_usage)
{
	int rows = 0;

	EACH_ROW(c, s, i) {
		rows++;
		CHECK_MSG(names_row(c->usage, &(*s)->opts[i]), "brushloop %s --help does not name --%s",
			  (*s)->verb, (*s)->opts[i].name);
	}
	CHECK(rows > 100);
}

/* The section of docs/cli.md about verb: from its heading to the next heading of its level or above. */
static char *doc_section(const char *doc, const char *verb)
{
	for (const char *l = doc; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
		const char *t = l;
		int level = 0;

		while (*t == '#')
			t++, level++;
		if (!level)
			continue;
		while (*t == ' ' || *t == '`')
			t++;
		if (!strncmp(t, "brushloop ", 10))
			t += 10;
		if (strncmp(t, verb, strlen(verb)) || isalnum((unsigned char)t[strlen(verb)]))
			continue;
		for (const char *e = strchr(l, '\n'); e; e = strchr(e + 1, '\n')) {
			int k = 0;

			while (e[1 + k] == '#')
				k++;
			if (k && k <= level && e[1 + k] == ' ')
				return strndup(l, (size_t)(e - l));
		}
		return strdup(l);
	}
	return NULL;
}

TEST(every_table_option_is_in_its_section_of_docs_cli_md)
{
	char *doc = test_read_file(SRC "/docs/cli.md");

	CHECK(doc);
	EACH_ROW(c, s, i) {
		/* A verb's own heading ("color diff", "gate check"), else its command's ("calib", "mix"). */
		char *sec = doc_section(doc, (*s)->verb);

		if (!sec)
			sec = doc_section(doc, c->name);
		CHECK_MSG(sec, "docs/cli.md has no section for %s", (*s)->verb);
		CHECK_MSG(names_row(sec, &(*s)->opts[i]), "docs/cli.md's section of %s does not name --%s",
			  (*s)->verb, (*s)->opts[i].name);
		free(sec);
	}
	free(doc);
}

/* Options of other programs that the texts name (the build, the sandbox, the browser). */
static const char *const foreign[] = {
	"version", "help", "num-processes", "suite", "print-errorlogs", "timeout-multiplier", "werror",
	"buildtype", NULL,
};

static int known(const char *name, size_t n)
{
	for (const char *const *f = foreign; *f; f++)
		if (strlen(*f) == n && !strncmp(*f, name, n))
			return 1;
	EACH_ROW(c, s, i)
		if (strlen((*s)->opts[i].name) == n && !strncmp((*s)->opts[i].name, name, n))
			return 1;
	/* An alias is a name a table has too. */
	for (const struct cli_command *c = cli_commands; c->name; c++)
		for (const struct cli_optset *const *s = c->optsets; s && *s; s++)
			for (int i = 0; i < (*s)->n; i++)
				if (strlen((*s)->opts[i].name) == n && !strncmp((*s)->opts[i].name, name, n))
					return 1;
	return 0;
}

static void check_names_known(const char *what, const char *text, const char *stop_at)
{
	const char *end = stop_at ? strstr(text, stop_at) : NULL;

	for (const char *p = text; (p = strstr(p, "--")) && (!end || p < end); p += 2) {
		size_t n = 0;

		if (p > text && (isalnum((unsigned char)p[-1]) || p[-1] == '-'))
			continue;
		while (islower((unsigned char)p[2 + n]) || isdigit((unsigned char)p[2 + n]) || p[2 + n] == '-')
			n++;
		if (n < 2 || !islower((unsigned char)p[2]))
			continue;
		CHECK_MSG(known(p + 2, n), "%s names --%.*s, which no option table has", what, (int)n, p + 2);
	}
}

TEST(no_option_is_named_that_no_table_has)
{
	char *doc = test_read_file(SRC "/docs/cli.md"), *readme = test_read_file(SRC "/README.md");

	CHECK(doc && readme);
	for (const struct cli_command *c = cli_commands; c->name; c++)
		check_names_known(c->name, c->usage, NULL);
	check_names_known("docs/cli.md", doc, NULL);
	/* README's build and fuzzing lines name meson's and the scripts' own options. */
	check_names_known("README.md", readme, "## Building by hand");
	check_names_known("README.md", strstr(readme, "## Using it"), "## Layout");
	free(doc);
	free(readme);
}

TEST(help_lines_come_from_the_table)
{
	const char *run[] = { "run", "--help", NULL }, *resume[] = { "resume", "--help", NULL };
	char *out = NULL, *err = NULL, line[256];

	CHECK(test_brushloop(run, &out, &err) == 0);
	for (int i = 0; i < cli_run_set.n; i++) {
		if (!cli_opt_takes(&cli_run_set, i))
			continue;
		snprintf(line, sizeof(line), "--%s", cli_run_set.opts[i].name);
		CHECK_STR_CONTAINS(strstr(out, "options of brushloop run:"), line);
		CHECK_STR_CONTAINS(strstr(out, "options of brushloop run:"), cli_run_set.opts[i].help);
	}
	free(out);
	free(err);
	CHECK(test_brushloop(resume, &out, &err) == 0);
	CHECK_STR_CONTAINS(out, "options of brushloop resume:");
	CHECK_MSG(!strstr(strstr(out, "options of brushloop resume:"), "--planner"),
		  "resume's option lines list run's --planner");
	CHECK_STR_CONTAINS(strstr(out, "options of brushloop resume:"), "--accept-mix");
	free(out);
	free(err);
}

/* argv for verb ("calib camera") followed by extra, NULL-terminated, in buf. */
static const char **verb_argv(const char *verb, const char *const *extra, char *words, size_t n,
			      const char **buf)
{
	int k = 0;

	snprintf(words, n, "%s", verb);
	for (char *w = strtok(words, " "); w; w = strtok(NULL, " "))
		buf[k++] = w;
	for (; *extra; extra++)
		buf[k++] = *extra;
	buf[k] = NULL;
	return buf;
}

/*
 * "calib camera --help": that session's forms and option lines, not its
 * siblings' (every verb named "COMMAND WORD" alike). Its option lines name
 * exactly the rows it takes.
 */
TEST(a_verbs_help_shows_its_own_forms_and_options)
{
	int verbs = 0;

	for (const struct cli_command *c = cli_commands; c->name; c++)
		for (const struct cli_optset *const *s = c->optsets; s && *s; s++) {
			const char *help[] = { "--help", NULL }, *args[16];
			char words[64], *out = NULL, *err = NULL, head[96], form[96];
			const char *opts;

			if (!strchr((*s)->verb, ' '))
				continue;
			verbs++;
			CHECK_MSG(test_brushloop(verb_argv((*s)->verb, help, words, sizeof(words), args), &out, &err) == 0,
				  "brushloop %s --help", (*s)->verb);
			snprintf(head, sizeof(head), "options of brushloop %s:", (*s)->verb);
			snprintf(form, sizeof(form), "usage: brushloop %s", (*s)->verb);
			CHECK_STR_CONTAINS(out, form);
			opts = out ? strstr(out, head) : NULL;
			CHECK_MSG(opts, "brushloop %s --help has no '%s'", (*s)->verb, head);
			for (const struct cli_optset *const *o = c->optsets; opts && *o; o++) {
				char sib[96];

				if (*o == *s)
					continue;
				snprintf(sib, sizeof(sib), "options of brushloop %s:", (*o)->verb);
				CHECK_MSG(!strstr(out, sib), "brushloop %s --help shows %s", (*s)->verb, sib);
				snprintf(sib, sizeof(sib), "brushloop %s ", (*o)->verb);
				CHECK_MSG(!strchr((*o)->verb, ' ') || !strstr(out, sib), "brushloop %s --help shows "
					  "the form of %s", (*s)->verb, (*o)->verb);
			}
			for (int i = 0; opts && i < (*s)->n; i++) {
				const struct cli_opt *r = &(*s)->opts[i];

				if (!r->name || r->alias)
					continue;
				CHECK_MSG(!names_option(opts, r->name) == !cli_opt_takes(*s, i),
					  "brushloop %s --help's option lines %s --%s", (*s)->verb,
					  cli_opt_takes(*s, i) ? "do not name" : "name", r->name);
			}
			free(out);
			free(err);
		}
	CHECK(verbs >= 4);
}

/* An unambiguous prefix is not taken as the option: run --refill is not run --refill-ok. */
TEST(an_abbreviated_option_is_refused)
{
	const char *const cases[][4] = {
		{ "run", "target.png", "--refill", "--refill-ok" },
		{ "estimate", "target.png", "--max-str=4", "--max-strokes" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *args[] = { cases[i][0], cases[i][1], cases[i][2], NULL };
		char *out = NULL, *err = NULL;
		int rc = test_brushloop(args, &out, &err);

		CHECK_MSG(rc == 2, "brushloop %s %s: exit %d", cases[i][0], cases[i][2], rc);
		CHECK_STR_CONTAINS(err, "options are given in full");
		CHECK_STR_CONTAINS(err, cases[i][3]);
		free(out);
		free(err);
	}
}

TEST(an_unknown_option_or_a_missing_value_exits_2_naming_the_option)
{
	for (const struct cli_command *c = cli_commands; c->name; c++)
		for (const struct cli_optset *const *s = c->optsets; s && *s; s++) {
			const char *bad[] = { "--no-such-option", NULL }, *args[16];
			char words[64], *out = NULL, *err = NULL, want[96];
			int rc = test_brushloop(verb_argv((*s)->verb, bad, words, sizeof(words), args), &out, &err);

			CHECK_MSG(rc == 2, "brushloop %s --no-such-option: exit %d", (*s)->verb, rc);
			CHECK_STR_CONTAINS(err, "--no-such-option");
			free(out);
			free(err);
			for (int i = 0; i < (*s)->n; i++) {
				const char *last[2] = { NULL, NULL };

				if (!cli_opt_takes(*s, i) || !(*s)->opts[i].value)
					continue;
				/* Its value missing: the option stands last. */
				snprintf(want, sizeof(want), "--%s", (*s)->opts[i].name);
				last[0] = want;
				rc = test_brushloop(verb_argv((*s)->verb, last, words, sizeof(words), args), &out, &err);
				CHECK_MSG(rc == 2, "brushloop %s %s: exit %d", (*s)->verb, want, rc);
				strcat(want, " needs a value");
				CHECK_STR_CONTAINS(err, want);
				free(out);
				free(err);
				break;
			}
		}
}

TEST(short_and_long_forms_are_the_same)
{
	int letters = 0;

	EACH_ROW(c, s, i) {
		char sh[3] = { '-', (*s)->opts[i].letter, 0 }, lo[64], eq[80];
		char *a[] = { "x", sh, "v1", NULL }, *b[] = { "x", lo, "v1", NULL }, *e[] = { "x", eq, NULL };
		struct cli_optparse p;
		int ra, rb;

		if (!(*s)->opts[i].letter)
			continue;
		letters++;
		snprintf(lo, sizeof(lo), "--%s", (*s)->opts[i].name);
		snprintf(eq, sizeof(eq), "--%s=v1", (*s)->opts[i].name);
		cli_opt_start(&p, c, *s, (*s)->opts[i].value ? 3 : 2, a);
		ra = cli_opt_next(&p);
		CHECK_MSG(ra == i, "%s %s gave row %d, not %d", (*s)->verb, sh, ra, i);
		CHECK(!(*s)->opts[i].value || (p.arg && !strcmp(p.arg, "v1")));
		cli_opt_start(&p, c, *s, (*s)->opts[i].value ? 3 : 2, b);
		rb = cli_opt_next(&p);
		CHECK_MSG(rb == i, "%s %s gave row %d, not %d", (*s)->verb, lo, rb, i);
		CHECK(!(*s)->opts[i].value || (p.arg && !strcmp(p.arg, "v1")));
		if ((*s)->opts[i].value) {
			cli_opt_start(&p, c, *s, 2, e);
			CHECK(cli_opt_next(&p) == i && p.arg && !strcmp(p.arg, "v1"));
		}
	}
	CHECK(letters >= 10);
}

TEST(a_verb_refuses_another_verbs_options_from_the_shared_table)
{
	const char *resume_planner[] = { "resume", test_tmpdir(), "--planner", "x", NULL };
	const char *resume_seed[] = { "resume", test_tmpdir(), "--seed", "3", NULL };
	const char *run_refilled[] = { "run", "nothing.png", "--refilled", "w1", NULL };
	char *out = NULL, *err = NULL;
	int refused = 0;

	/* Every sibling's row, in process: refused, never taken as its own. */
	EACH_ROW(c, s, i)
		for (const struct cli_optset *const *f = (*s)->family; f && *f; f++) {
			char lo[64], *argv[] = { "x", lo, "v", NULL };
			struct cli_optparse p;

			if (cli_opt_takes(*f, i))
				continue;
			snprintf(lo, sizeof(lo), "--%s", (*s)->opts[i].name);
			cli_opt_start(&p, c, *f, 3, argv);
			CHECK_MSG(cli_opt_next(&p) == CLI_OPT_BAD, "%s takes %s's --%s", (*f)->verb, (*s)->verb,
				  (*s)->opts[i].name);
			refused++;
		}
	CHECK(refused > 10);
	CHECK(test_brushloop(resume_planner, &out, &err) == 2);
	CHECK_STR_CONTAINS(err, "--planner is an option of run, not of resume");
	free(out);
	free(err);
	/* A resume goes on with the run's own seed: one given is refused, not ignored. */
	CHECK(test_brushloop(resume_seed, &out, &err) == 2);
	CHECK_STR_CONTAINS(err, "--seed is an option of run, not of resume");
	free(out);
	free(err);
	CHECK(test_brushloop(run_refilled, &out, &err) == 2);
	CHECK_STR_CONTAINS(err, "--refilled is an option of resume, not of run");
	free(out);
	free(err);
}

TEST_MAIN(T(every_table_option_is_in_its_command_usage), T(every_table_option_is_in_its_section_of_docs_cli_md),
	  T(no_option_is_named_that_no_table_has), T(help_lines_come_from_the_table),
	  T(a_verbs_help_shows_its_own_forms_and_options),
	  T(an_unknown_option_or_a_missing_value_exits_2_naming_the_option), T(an_abbreviated_option_is_refused),
	  T(short_and_long_forms_are_the_same),
	  T(a_verb_refuses_another_verbs_options_from_the_shared_table))
