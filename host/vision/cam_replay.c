/* cam_replay.c: the replay camera: recorded JPEG and PNG frames from a folder or a list file. */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "base/fs.h"
#include "vision/cam_open.h"

/* A list file of more than this is not a list of frames. */
#define MAX_LIST_BYTES (16u << 20)

struct replay_cam {
	char **paths;
	int n, next;
	long seq;
};

static int is_image_name(const char *name)
{
	const char *dot = strrchr(name, '.');

	return dot && name[0] != '.' &&
	       (strcasecmp(dot, ".jpg") == 0 || strcasecmp(dot, ".jpeg") == 0 ||
		strcasecmp(dot, ".png") == 0);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static int add_path(struct replay_cam *r, int *cap, const char *dir, const char *name,
		    bl_err *err)
{
	char path[CFG_PATH_MAX];

	if (name[0] == '/')
		snprintf(path, sizeof(path), "%s", name);
	else if (fs_join(path, sizeof(path), dir, name, err))
		return err ? err->code : BL_EINVAL;
	if (r->n == *cap) {
		char **nb = realloc(r->paths, sizeof(*nb) * (*cap ? *cap * 2 : 64));

		if (!nb)
			return bl_fail(err, BL_ENOMEM, "out of memory");
		r->paths = nb;
		*cap = *cap ? *cap * 2 : 64;
	}
	r->paths[r->n] = strdup(path);
	if (!r->paths[r->n])
		return bl_fail(err, BL_ENOMEM, "out of memory");
	r->n++;
	return 0;
}

static int read_folder(struct replay_cam *r, const char *dir, bl_err *err)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int cap = 0, rc = 0;

	if (!d)
		return bl_fail(err, BL_EINVAL, "replay %s: cannot list: %s", dir, strerror(errno));
	while ((e = readdir(d)))
		if (is_image_name(e->d_name) && (rc = add_path(r, &cap, dir, e->d_name, err)))
			break;
	closedir(d);
	if (rc)
		return rc;
	if (r->n)
		qsort(r->paths, (size_t)r->n, sizeof(*r->paths), cmp_str);
	return 0;
}

static int read_list(struct replay_cam *r, const char *file, bl_err *err)
{
	char *text, *line, *save = NULL, dir[CFG_PATH_MAX], tmp[CFG_PATH_MAX];
	int cap = 0, rc = 0, lineno = 0;

	rc = fs_read_file(file, MAX_LIST_BYTES, &text, NULL, err);
	if (rc)
		return rc;
	snprintf(tmp, sizeof(tmp), "%s", file);
	snprintf(dir, sizeof(dir), "%s", dirname(tmp));
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *end = line + strlen(line);

		lineno++;
		while (isspace((unsigned char)*line))
			line++;
		while (end > line && isspace((unsigned char)end[-1]))
			*--end = '\0';
		if (!*line || *line == '#')
			continue;
		rc = add_path(r, &cap, dir, line, err);
		if (rc)
			break;
	}
	free(text);
	return rc;
}

static int replay_lock(struct camera *c, bl_err *err)
{
	(void)c;
	(void)err;
	return 0;
}

static int replay_capture(struct camera *c, struct cam_frame *f, bl_err *err)
{
	struct replay_cam *r = c->priv;
	const char *path;
	char *buf;
	size_t len;
	int rc;

	if (r->next >= r->n)
		return bl_fail(err, BL_EIO, "replay %s: all %d frames used", c->m->camera.device,
			       r->n);
	path = r->paths[r->next++];
	rc = fs_read_file(path, IMG_MAX_FILE_BYTES, &buf, &len, err);
	if (rc)
		return rc;
	/* The file comes in a buffer of its own: the frame takes it for the one it had. */
	free(f->data);
	f->data = (unsigned char *)buf;
	f->len = len;
	f->cap = len;
	snprintf(f->source, sizeof(f->source), "replay:%s", path);
	rc = img_probe(f->data, len, path, &f->format, &f->width, &f->height, err);
	if (rc) {
		cam_frame_free(f);
		return rc;
	}
	f->t_ns = clk_now_ns(c->clock);
	f->seq = r->seq++;
	/* The recording was judged when it was taken: replayed frames count as locked. */
	f->controls_locked = 1;
	return 0;
}

static void replay_close(struct camera *c)
{
	struct replay_cam *r = c->priv;

	if (!r)
		return;
	for (int i = 0; i < r->n; i++)
		free(r->paths[i]);
	free(r->paths);
	free(r);
	c->priv = NULL;
}

static const struct camera_ops replay_ops = {
	.name = "replay",
	.lock_controls = replay_lock,
	.capture = replay_capture,
	.close = replay_close,
};

int cam_replay_open(struct camera *c, const struct machine *m, clk *clock, bl_err *err)
{
	struct replay_cam *r = calloc(1, sizeof(*r));
	const char *dev = m->camera.device;
	struct stat st;
	int rc;

	memset(c, 0, sizeof(*c));
	if (!r)
		return bl_fail(err, BL_ENOMEM, "out of memory");
	c->ops = &replay_ops;
	c->priv = r;
	c->m = m;
	c->clock = clock;
	if (stat(dev, &st) < 0) {
		rc = bl_fail(err, BL_EINVAL, "replay %s: %s", dev, strerror(errno));
		goto out_close;
	}
	rc = S_ISDIR(st.st_mode) ? read_folder(r, dev, err) : read_list(r, dev, err);
	if (rc)
		goto out_close;
	if (r->n == 0) {
		rc = bl_fail(err, BL_EINVAL, "replay %s: no .jpg, .jpeg or .png frames", dev);
		goto out_close;
	}
	return 0;
out_close:
	replay_close(c);
	c->ops = NULL;
	return rc;
}
