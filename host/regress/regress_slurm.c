/* regress_slurm.c: a suite as a Slurm array job, one task per case running its `brushloop run` line; the same script serves GNU parallel. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/fs.h"
#include "base/strbuf.h"
#include "regress/regress.h"

/* s in single quotes for the shell (a ' becomes '\''). */
static void sh_quote(strbuf *sb, const char *s)
{
	sb_printf(sb, "'");
	for (; *s; s++) {
		if (*s == '\'')
			sb_printf(sb, "'\\''");
		else
			sb_printf(sb, "%c", *s);
	}
	sb_printf(sb, "'");
}

/* The part every task shares: where it logs, and how a task started again continues rather than starts over. */
static const char script_tail[] =
	"*) echo \"regress.sbatch: no case $SLURM_ARRAY_TASK_ID (0 to $LAST)\" >&2; exit 2 ;;\n"
	"esac\n"
	"dir=\"$OUT/$id\"\n"
	"exec >>\"$OUT/logs/$id.log\" 2>&1\n"
	"state() {\n"
	"\t\"$BRUSHLOOP\" status \"$dir\" --json 2>/dev/null |\n"
	"\t\tsed -n 's/^[[:space:]]*\"state\":[[:space:]]*\"\\([a-z_]*\\)\".*/\\1/p'\n"
	"}\n"
	"rc=0\n"
	"if [ -e \"$dir/run.json\" ]; then\n"
	"\t# Started again (requeued, or submitted again): a run that ended is kept, a killed or\n"
	"\t# signalled one (Slurm's SIGTERM at a time limit or preemption) goes on.\n"
	"\tcase \"$(state)\" in\n"
	"\trunning | \"\") \"$BRUSHLOOP\" resume \"$dir\" --quiet; rc=$? ;;\n"
	"\tpaused)\n"
	"\t\tif \"$BRUSHLOOP\" status \"$dir\" --json | grep -q '\"reason\":[[:space:]]*\"paused by a signal'; then\n"
	"\t\t\t\"$BRUSHLOOP\" resume \"$dir\" --quiet\n"
	"\t\t\trc=$?\n"
	"\t\tfi ;;\n"
	"\tesac\n"
	"else\n"
	"\t\"$BRUSHLOOP\" \"$@\"\n"
	"\trc=$?\n"
	"fi\n"
	"# A run paused for a refill is resumed with every well refilled, as a person would.\n"
	"n=0\n"
	"while [ \"$refill\" = 1 ] && [ \"$(state)\" = paused ] && [ $n -lt 20 ] &&\n"
	"\t\"$BRUSHLOOP\" status \"$dir\" --json | grep -q -- '--refilled'; do\n"
	"\tn=$((n + 1))\n"
	"\t\"$BRUSHLOOP\" resume \"$dir\" --refilled all --quiet\n"
	"\trc=$?\n"
	"done\n"
	"exit $rc\n";

static void script_case(strbuf *sb, const struct regress_suite *s, int i, const char *dir)
{
	const struct regress_case *c = &s->cases[i];
	const char *argv[REGRESS_ARGV_MAX];
	char run_dir[REGRESS_PATH_MAX + REGRESS_ID_MAX], sb_[24], kb[24], cb[24];

	snprintf(run_dir, sizeof(run_dir), "%s/%s", dir, c->id);
	regress_case_argv(c, "brushloop", run_dir, sb_, kb, cb, argv);
	sb_printf(sb, "%d) id=", i);
	sh_quote(sb, c->id);
	sb_printf(sb, " refill=%d\n\tset --", c->refill);
	/* argv[0] is "$BRUSHLOOP", said once above. */
	for (int k = 1; argv[k]; k++) {
		sb_printf(sb, " ");
		sh_quote(sb, argv[k]);
	}
	sb_printf(sb, " ;;\n");
}

int regress_slurm_write(const struct regress_suite *s, const char *bin, const char *dir, int cap,
			bl_err *err)
{
	char p[REGRESS_PATH_MAX + 32], capbuf[24] = "";
	strbuf sb;
	char *text;
	int rc;

	snprintf(p, sizeof(p), "%s/logs", dir);
	BL_TRY(fs_mkdirs(p, err));
	if (cap > 0)
		snprintf(capbuf, sizeof(capbuf), "%%%d", cap);
	sb_init(&sb);
	sb_printf(&sb, "#!/bin/bash\n"
		       "# regress.sbatch: the brushloop suite %s as a Slurm array job, one task per case "
		       "(from `brushloop regress --emit-slurm`; `brushloop regress --collect` reads "
		       "what it leaves).\n",
		  s->name);
	sb_printf(&sb, "#SBATCH --job-name=brushloop-%s\n", s->name);
	sb_printf(&sb, "#SBATCH --array=0-%d%s\n", s->n - 1, capbuf);
	sb_printf(&sb, "#SBATCH --ntasks=1\n#SBATCH --cpus-per-task=1\n");
	sb_printf(&sb, "#SBATCH --output=%s/logs/slurm-%%A_%%a.out\n", dir);
	sb_printf(&sb, "#\n"
		       "# Submit: sbatch %s/regress.sbatch (sbatch options on its command line, such as\n"
		       "# --partition, override these). Then: brushloop regress --collect %s\n"
		       "# Without Slurm, one case: SLURM_ARRAY_TASK_ID=N bash %s/regress.sbatch\n"
		       "# Or all of them with GNU parallel, 8 at once:\n"
		       "#   seq 0 %d | parallel -j 8 SLURM_ARRAY_TASK_ID={} bash %s/regress.sbatch\n",
		  dir, dir, dir, s->n - 1, dir);
	sb_printf(&sb, "set -u\nBRUSHLOOP=${BRUSHLOOP:-");
	sh_quote(&sb, bin);
	sb_printf(&sb, "}\nOUT=");
	sh_quote(&sb, dir);
	sb_printf(&sb, "\nLAST=%d\n", s->n - 1);
	sb_printf(&sb, "case \"${SLURM_ARRAY_TASK_ID:?the case number, 0 to %d: set by Slurm, or "
		       "by hand}\" in\n",
		  s->n - 1);
	for (int i = 0; i < s->n; i++)
		script_case(&sb, s, i, dir);
	sb_printf(&sb, "%s", script_tail);
	text = sb_take(&sb);
	if (!text)
		return bl_fail(err, BL_ENOMEM, "out of memory");
	snprintf(p, sizeof(p), "%s/regress.sbatch", dir);
	rc = fs_write_atomic(p, text, strlen(text), err);
	free(text);
	return rc;
}
