/* regress_slurm.c: a suite as a Slurm array job, one task per case running its `brushloop run` line; the same script serves GNU parallel. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sys/stat.h>

#include "base/fs.h"
#include "base/strbuf.h"
#include "regress/regress.h"

/* A task's memory: a run of 300 strokes of real/coffee kept 131 MB resident (/usr/bin/time -v); room for larger pictures. */
#define REGRESS_TASK_MEM "1G"

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

/*
 * A task's time limit in minutes: a simulated run takes 0.3 to 1 s of wall
 * time a stroke on a shared 2-core machine (a 1,500-stroke night: 414 s; 300
 * strokes under load: 288 s); 1.2 s a stroke and 20 minutes more. Slurm ends a task at its limit (SIGTERM: the run pauses,
 * and a task started again resumes it).
 */
static int task_minutes(const struct regress_suite *s)
{
	int strokes = 0;

	for (int i = 0; i < s->n; i++)
		if (s->cases[i].strokes > strokes)
			strokes = s->cases[i].strokes;
	return strokes * 4 * 3 / 10 / 60 + 20;
}

/* Writes DIR/NAME (made executable) from text; what the three scripts share. */
static int write_script(const char *dir, const char *name, strbuf *sb, bl_err *err)
{
	char p[REGRESS_PATH_MAX + 32], *text = sb_take(sb);
	int rc;

	if (!text)
		return bl_fail(err, BL_ENOMEM, "out of memory");
	snprintf(p, sizeof(p), "%s/%s", dir, name);
	rc = fs_write_atomic(p, text, strlen(text), err);
	free(text);
	if (rc == 0 && chmod(p, 0755) != 0)
		rc = bl_fail(err, BL_EIO, "%s: cannot make it executable", p);
	return rc;
}

/*
 * DIR/collect.sbatch, the job that judges what the array left (result.json,
 * JUnit, Markdown in DIR), and DIR/submit, which submits the array and then
 * the collect job to start once every task of it has ended, however it ended
 * (sbatch --dependency=afterany:JOBID).
 */
static int write_collect(const struct regress_suite *s, const char *bin, const char *dir, bl_err *err)
{
	strbuf sb;
	int rc;

	sb_init(&sb);
	sb_printf(&sb, "#!/bin/bash\n"
		       "# collect.sbatch: judges the brushloop suite %s from what regress.sbatch left "
		       "(result.json, junit.xml, summary.md in the folder); submitted by ./submit after it.\n",
		  s->name);
	sb_printf(&sb, "#SBATCH --job-name=brushloop-%s-collect\n#SBATCH --ntasks=1\n#SBATCH --cpus-per-task=1\n"
		       "#SBATCH --time=00:30:00\n#SBATCH --mem=1G\n", s->name);
	sb_printf(&sb, "#SBATCH --output=%s/logs/slurm-collect-%%j.out\nset -u\nBRUSHLOOP=${BRUSHLOOP:-", dir);
	sh_quote(&sb, bin);
	sb_printf(&sb, "}\nOUT=");
	sh_quote(&sb, dir);
	sb_printf(&sb, "\n# Exit 1 when a case failed: the job's state says so.\n"
		       "exec \"$BRUSHLOOP\" regress --collect \"$OUT\" --junit \"$OUT/junit.xml\" "
		       "--markdown \"$OUT/summary.md\" ${BASELINE:+--baseline \"$BASELINE\"}\n");
	if ((rc = write_script(dir, "collect.sbatch", &sb, err)))
		return rc;
	sb_init(&sb);
	sb_printf(&sb, "#!/bin/sh\n"
		       "# submit: the suite %s on Slurm: the array job, then the collect job once every task "
		       "has ended (sbatch options given here, such as --partition, go to both).\n"
		       "set -eu\nOUT=", s->name);
	sh_quote(&sb, dir);
	sb_printf(&sb, "\njob=$(sbatch --parsable \"$@\" \"$OUT/regress.sbatch\")\n"
		       "job=${job%%%%;*}\n"
		       "collect=$(sbatch --parsable --dependency=afterany:\"$job\" \"$@\" \"$OUT/collect.sbatch\")\n"
		       "echo \"array job $job, collect job ${collect%%%%;*} after it: results in $OUT\"\n");
	return write_script(dir, "submit", &sb, err);
}

int regress_slurm_write(const struct regress_suite *s, const char *bin, const char *dir, int cap,
			bl_err *err)
{
	char p[REGRESS_PATH_MAX + 32], capbuf[24] = "";
	int rc, minutes = task_minutes(s);
	strbuf sb;

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
	sb_printf(&sb, "#SBATCH --time=%02d:%02d:00\n#SBATCH --mem=%s\n", minutes / 60, minutes % 60,
		  REGRESS_TASK_MEM);
	sb_printf(&sb, "#SBATCH --output=%s/logs/slurm-%%A_%%a.out\n", dir);
	sb_printf(&sb, "#\n"
		       "# Submit: %s/submit (this array, then collect.sbatch after it), or\n"
		       "# sbatch %s/regress.sbatch alone (sbatch options on its command line, such as\n"
		       "# --partition, --time or --mem, override these) and then: brushloop regress --collect %s\n"
		       "# Without Slurm, one case: SLURM_ARRAY_TASK_ID=N bash %s/regress.sbatch\n"
		       "# Or all of them with GNU parallel, 8 at once:\n"
		       "#   seq 0 %d | parallel -j 8 SLURM_ARRAY_TASK_ID={} bash %s/regress.sbatch\n",
		  dir, dir, dir, dir, s->n - 1, dir);
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
	if ((rc = write_script(dir, "regress.sbatch", &sb, err)))
		return rc;
	return write_collect(s, bin, dir, err);
}
