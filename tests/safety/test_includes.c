/* test_includes.c: only the arm backends and the safety gate may include arm_backend.h; this scans the source tree for anyone else. */
#include <dirent.h>
#include <sys/stat.h>

#include "safety_test.h"

/*
 * Who may reach an arm's execute: the backends themselves (the rig's shadow of a real arm is one),
 * the gate, the tests' recording backend,
 * and the hardware-in-the-loop tests, which drive a backend directly on purpose: they prove the
 * firmware's own layer by sending what the gate would refuse.
 */
static const char *const allowed_dirs[] = { "host/arm/", "sim/", "hil-tests/", NULL };
static const char *const allowed_files[] = { "host/safety/gate.c", "tests/safety/rec_arm.c",
					     "host/rig/rig_shadow.c", NULL };
static const char *const scanned[] = { "host", "sim", "calib", "bench", "tests", "firmware",
				       "hil-tests", NULL };

#define MAX_FILES 4096
#define MAX_TAINT 64

struct scan {
	int files;
	char *path[MAX_FILES];
	char *text[MAX_FILES];
	char offenders[2048];
	int includers;
	int saw_gate;
};

/* Whether text has a preprocessor line "#  include <...name>" or "...name" (name a file's base name). */
static int includes(const char *text, const char *name)
{
	const char *p = text;
	size_t n = strlen(name);

	while ((p = strstr(p, name))) {
		const char *bol = p;
		char before = p > text ? p[-1] : '\n', after = p[n];

		while (bol > text && bol[-1] != '\n')
			bol--;
		while (*bol == ' ' || *bol == '\t')
			bol++;
		if (*bol == '#' && (before == '/' || before == '"' || before == '<') &&
		    (after == '"' || after == '>')) {
			bol++;
			while (*bol == ' ' || *bol == '\t')
				bol++;
			if (strncmp(bol, "include", 7) == 0)
				return 1;
		}
		p++;
	}
	return 0;
}

static int includes_backend(const char *text)
{
	return includes(text, "arm_backend.h");
}

static int is_source(const char *name)
{
	const char *dot = strrchr(name, '.');

	return dot && (!strcmp(dot, ".c") || !strcmp(dot, ".h") || !strcmp(dot, ".cpp") ||
		       !strcmp(dot, ".hpp") || !strcmp(dot, ".cc") || !strcmp(dot, ".inc"));
}

static void walk(const char *root, const char *rel, struct scan *s)
{
	char dir[4096];
	DIR *d;
	struct dirent *e;

	snprintf(dir, sizeof(dir), "%s/%s", root, rel);
	d = opendir(dir);
	if (!d)
		return;
	while ((e = readdir(d))) {
		char r[4096], full[8192];
		struct stat st;

		if (e->d_name[0] == '.')
			continue;
		snprintf(r, sizeof(r), "%s/%s", rel, e->d_name);
		snprintf(full, sizeof(full), "%s/%s", root, r);
		if (lstat(full, &st) != 0)
			continue;
		if (S_ISDIR(st.st_mode)) {
			walk(root, r, s);
		} else if (S_ISREG(st.st_mode) && is_source(e->d_name) && s->files < MAX_FILES) {
			s->path[s->files] = strdup(r);
			s->text[s->files] = slurp(full);
			if (!s->text[s->files])
				s->text[s->files] = strdup("");
			s->files++;
		}
	}
	closedir(d);
}

static int allowed(const char *r)
{
	int ok = 0;

	for (int i = 0; allowed_dirs[i]; i++)
		ok |= strncmp(r, allowed_dirs[i], strlen(allowed_dirs[i])) == 0;
	for (int i = 0; allowed_files[i]; i++)
		ok |= strcmp(r, allowed_files[i]) == 0;
	return ok;
}

/* Headers that bring arm_backend.h in, directly or through another such header, taint whoever includes them. */
static void check_tree(struct scan *s)
{
	const char *taint[MAX_TAINT];
	int nt = 1, grew = 1;

	taint[0] = "arm_backend.h";
	while (grew) {
		grew = 0;
		for (int f = 0; f < s->files; f++) {
			const char *base = strrchr(s->path[f], '/') ? strrchr(s->path[f], '/') + 1 : s->path[f];
			int known = 0, hit = 0;

			if (!strstr(base, ".h"))
				continue;
			for (int t = 0; t < nt; t++)
				known |= strcmp(taint[t], base) == 0;
			for (int t = 0; t < nt && !known && !hit; t++)
				hit = includes(s->text[f], taint[t]);
			if (hit && nt < MAX_TAINT) {
				taint[nt++] = base;
				grew = 1;
			}
		}
	}
	for (int f = 0; f < s->files; f++) {
		int hit = 0;

		for (int t = 0; t < nt && !hit; t++)
			hit = includes(s->text[f], taint[t]);
		if (!hit)
			continue;
		s->includers++;
		if (strcmp(s->path[f], "host/safety/gate.c") == 0)
			s->saw_gate = 1;
		if (!allowed(s->path[f]) && strlen(s->offenders) + strlen(s->path[f]) + 2 < sizeof(s->offenders)) {
			strcat(s->offenders, " ");
			strcat(s->offenders, s->path[f]);
		}
	}
}

TEST(only_backends_and_gate_include_arm_backend_h)
{
	static struct scan s;
	const char *root = getenv("BRUSHLOOP_SRC");

	CHECK(root != NULL);
	if (!root)
		return;
	for (int i = 0; scanned[i]; i++)
		walk(root, scanned[i], &s);
	check_tree(&s);
	/* The scan must see the tree and the includers it knows of, or it proves nothing. */
	CHECK_MSG(s.files > 50, "scanned only %d files", s.files);
	CHECK(s.saw_gate);
	CHECK(s.includers >= 3); /* host/arm/arm.c, host/safety/gate.c, tests/safety/rec_arm.c */
	CHECK_MSG(s.offenders[0] == '\0',
		  "these files include arm/arm_backend.h (or a header that does) and so could move the arm around the gate:%s",
		  s.offenders);
	for (int f = 0; f < s.files; f++) {
		free(s.path[f]);
		free(s.text[f]);
	}
}

/* A header in a backend directory that includes it taints its includers elsewhere. */
TEST(the_scan_follows_headers)
{
	static struct scan s;

	s.path[0] = strdup("sim/sim_arm.h");
	s.text[0] = strdup("#include \"arm/arm_backend.h\"\n");
	s.path[1] = strdup("host/engine/engine.c");
	s.text[1] = strdup("#include \"sim/sim_arm.h\"\n");
	s.path[2] = strdup("sim/sim_arm.c");
	s.text[2] = strdup("#include \"sim/sim_arm.h\"\n");
	s.path[3] = strdup("host/safety/gate.c");
	s.text[3] = strdup("#include \"arm/arm_backend.h\"\n");
	s.files = 4;
	check_tree(&s);
	CHECK(s.includers == 4);
	CHECK_MSG(strcmp(s.offenders, " host/engine/engine.c") == 0, "offenders:%s", s.offenders);
	for (int f = 0; f < s.files; f++) {
		free(s.path[f]);
		free(s.text[f]);
	}
}

TEST(the_scanner_catches_an_include)
{
	CHECK(includes_backend("#include \"arm/arm_backend.h\"\n"));
	CHECK(includes_backend("int x;\n  #  include <arm/arm_backend.h>\n"));
	CHECK(!includes_backend("/* see arm_backend.h */\nconst char *s = \"arm_backend.h\";\n"));
	CHECK(!includes_backend("#include \"arm/not_arm_backend.h\"\n"));
}

TEST_MAIN(T(only_backends_and_gate_include_arm_backend_h), T(the_scanner_catches_an_include),
	  T(the_scan_follows_headers))
