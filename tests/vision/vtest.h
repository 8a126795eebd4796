/* vtest.h: helpers shared by the vision tests: files, images, other programs, JSON output of the CLI. */
#ifndef BL_TESTS_VISION_VTEST_H
#define BL_TESTS_VISION_VTEST_H

#include <fcntl.h>
#include <math.h>
#include <spawn.h>
#include <sys/wait.h>

#include "base/fs.h"
#include "test.h"
#include "vision/image.h"

extern char **environ;

/* A path in the test's temporary folder (static buffers, four in rotation). */
static inline const char *vt_path(const char *name)
{
	static char buf[8][4096];
	static int k;
	char *p = buf[k++ % 8];

	snprintf(p, 4096, "%s/%s", test_tmpdir(), name);
	return p;
}

static inline void vt_write_bytes(const char *path, const void *data, size_t len)
{
	FILE *f = fopen(path, "wb");

	if (!f || fwrite(data, 1, len, f) != len) {
		perror(path);
		exit(1);
	}
	fclose(f);
}

static inline unsigned char *vt_read_bytes(const char *path, size_t *len)
{
	char *buf;
	bl_err err = { 0 };

	if (fs_read_file(path, 1u << 30, &buf, len, &err)) {
		fprintf(stderr, "%s\n", err.msg);
		exit(1);
	}
	return (unsigned char *)buf;
}

/* Runs a program with argv (NULL-terminated) and stdout/stderr to /dev/null; returns its exit status. */
static inline int vt_run(const char *const *argv, const char *stdout_path)
{
	posix_spawn_file_actions_t fa;
	pid_t pid;
	int st;

	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 1, stdout_path ? stdout_path : "/dev/null",
					 O_WRONLY | O_CREAT | O_TRUNC, 0644);
	posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
	if (posix_spawnp(&pid, argv[0], &fa, NULL, (char *const *)argv, environ) != 0) {
		posix_spawn_file_actions_destroy(&fa);
		return -1;
	}
	posix_spawn_file_actions_destroy(&fa);
	if (waitpid(pid, &st, 0) < 0 || !WIFEXITED(st))
		return -1;
	return WEXITSTATUS(st);
}

/* Writes im as a binary PPM, the input of cjpeg. */
static inline void vt_write_ppm(const char *path, const struct img *im)
{
	FILE *f = fopen(path, "wb");

	if (!f) {
		perror(path);
		exit(1);
	}
	fprintf(f, "P6\n%d %d\n255\n", im->w, im->h);
	fwrite(im->px, 1, (size_t)im->w * im->h * 3, f);
	fclose(f);
}

/* Writes an image file through our encoder; exits on failure. */
static inline const char *vt_save(const char *name, const struct img *im)
{
	const char *p = vt_path(name);
	bl_err err = { 0 };

	if (img_save(p, im, &err)) {
		fprintf(stderr, "%s\n", err.msg);
		exit(1);
	}
	return p;
}

static inline void vt_fill(struct img *im, int x0, int y0, int w, int h, int r, int g, int b)
{
	for (int y = y0; y < y0 + h; y++)
		for (int x = x0; x < x0 + w; x++) {
			unsigned char *p = im->px + ((size_t)y * im->w + x) * 3;

			p[0] = (unsigned char)r;
			p[1] = (unsigned char)g;
			p[2] = (unsigned char)b;
		}
}

/* Parses the CLI's stdout as JSON (NULL on failure, reported as a failed check). */
static inline cJSON *vt_json(const char *out)
{
	cJSON *j = out ? cJSON_Parse(out) : NULL;

	CHECK_MSG(j != NULL, "not JSON: %s", out ? out : "(null)");
	return j;
}

static inline double vt_num(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

static inline double vt_arr(const cJSON *o, const char *key, int i)
{
	const cJSON *v = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(o, key), i);

	return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

/*
 * sRGB (0..255) to CIELAB D50, written out from the standards rather than
 * through lcms2: IEC 61966-2-1 decoding and matrix (D65), Bradford
 * adaptation to D50, CIE 1976 L*a*b* with the ICC's D50 white.
 */
static inline void vt_srgb_to_lab(double r8, double g8, double b8, double lab[3])
{
	const double M[9] = { 0.4124, 0.3576, 0.1805, 0.2126, 0.7152, 0.0722,
			      0.0193, 0.1192, 0.9505 };
	const double B[9] = { 1.0478112, 0.0228866, -0.0501270, 0.0295424, 0.9904844,
			      -0.0170491, -0.0092345, 0.0150436, 0.7521316 };
	const double wd50[3] = { 0.9642, 1.0, 0.8249 };
	double c[3] = { r8 / 255.0, g8 / 255.0, b8 / 255.0 }, xyz[3], x50[3], f[3];

	for (int i = 0; i < 3; i++)
		c[i] = c[i] <= 0.04045 ? c[i] / 12.92 : pow((c[i] + 0.055) / 1.055, 2.4);
	for (int i = 0; i < 3; i++)
		xyz[i] = M[3 * i] * c[0] + M[3 * i + 1] * c[1] + M[3 * i + 2] * c[2];
	for (int i = 0; i < 3; i++)
		x50[i] = B[3 * i] * xyz[0] + B[3 * i + 1] * xyz[1] + B[3 * i + 2] * xyz[2];
	for (int i = 0; i < 3; i++) {
		double t = x50[i] / wd50[i];

		f[i] = t > 216.0 / 24389.0 ? cbrt(t) : (24389.0 / 27.0 * t + 16.0) / 116.0;
	}
	lab[0] = 116.0 * f[1] - 16.0;
	lab[1] = 500.0 * (f[0] - f[1]);
	lab[2] = 200.0 * (f[1] - f[2]);
}

#endif
