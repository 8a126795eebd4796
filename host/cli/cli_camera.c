/* cli_camera.c: `brushloop camera`: list V4L2 devices with their formats, capture a (possibly averaged) frame to a file. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/fs.h"
#include "base/json.h"
#include "base/log.h"
#include "cli/cli.h"
#include "cli/cli_opt.h"
#include "rig/rig.h"
#include "vision/cam_open.h"

enum list_opt {
	LIST_DIR, LIST_JSON,
	LIST_OPT_COUNT
};

static const struct cli_opt list_opts[LIST_OPT_COUNT] = {
	[LIST_DIR] = { "dir", 0, "DIR", "look for cameras in DIR instead of /dev", 0 },
	[LIST_JSON] = CLI_OPT_JSON,
};
static const struct cli_optset list_set = { "camera list", list_opts, LIST_OPT_COUNT, 0, NULL };

static int camera_list(const struct cli_command *cmd, int argc, char **argv)
{
	struct cli_optparse p;
	const char *dir = "/dev";
	struct cam_v4l2_device *devs;
	bl_err err = { 0 };
	int json = 0, opt, n;
	cJSON *root = NULL, *arr = NULL;

	cli_opt_start(&p, cmd, &list_set, argc, argv);
	while ((opt = cli_opt_next(&p)) != CLI_OPT_END) {
		if (opt == CLI_OPT_BAD)
			return BL_EXIT_USAGE;
		switch ((enum list_opt)opt) {
		case LIST_DIR:
			dir = p.arg;
			break;
		case LIST_JSON:
			json = 1;
			break;
		case LIST_OPT_COUNT:
			break;
		}
	}
	if (p.ind != argc)
		return cli_usage(cmd, "camera list takes no arguments");
	if (cam_v4l2_list(dir, &devs, &n, &err))
		return cli_fail(&err);
	if (json) {
		root = cJSON_CreateObject();
		arr = root ? cJSON_AddArrayToObject(root, "devices") : NULL;
		if (!arr) {
			free(devs);
			cJSON_Delete(root);
			return BL_EXIT_FAIL;
		}
	} else if (n == 0) {
		printf("no V4L2 video capture devices in %s\n", dir);
	}
	for (int i = 0; i < n; i++) {
		const struct cam_v4l2_device *d = &devs[i];
		cJSON *dj = NULL, *fa = NULL;

		if (arr) {
			dj = cJSON_CreateObject();
			cJSON_AddItemToArray(arr, dj);
			cJSON_AddStringToObject(dj, "path", d->path);
			cJSON_AddStringToObject(dj, "card", d->card);
			cJSON_AddStringToObject(dj, "driver", d->driver);
			cJSON_AddStringToObject(dj, "bus", d->bus);
			fa = cJSON_AddArrayToObject(dj, "formats");
		} else {
			printf("%s: %s (%s, %s)\n", d->path, d->card, d->driver, d->bus);
		}
		for (int k = 0; k < d->nformats; k++) {
			const struct cam_v4l2_format *f = &d->formats[k];

			if (fa) {
				cJSON *fj = cJSON_CreateObject(), *sz;

				cJSON_AddItemToArray(fa, fj);
				cJSON_AddStringToObject(fj, "fourcc", f->fourcc);
				cJSON_AddStringToObject(fj, "description", f->description);
				sz = cJSON_AddArrayToObject(fj, "sizes");
				for (int s = 0; sz && s < f->nsizes; s++)
					cJSON_AddItemToArray(sz, cJSON_CreateIntArray(f->sizes[s], 2));
				if (f->stepwise) {
					const double mn[2] = { f->min_w, f->min_h };
					const double mx[2] = { f->max_w, f->max_h };

					json_add_vec(fj, "min_size", mn, 2);
					json_add_vec(fj, "max_size", mx, 2);
				}
				continue;
			}
			printf("  %-4s %-24s", f->fourcc, f->description);
			for (int s = 0; s < f->nsizes; s++)
				printf(" %dx%d", f->sizes[s][0], f->sizes[s][1]);
			if (f->stepwise)
				printf(" %dx%d..%dx%d", f->min_w, f->min_h, f->max_w, f->max_h);
			printf("\n");
		}
	}
	free(devs);
	return root ? cli_print_json(root) : 0;
}

enum capture_opt {
	CAPTURE_MACHINE, CAPTURE_OUTPUT, CAPTURE_AVERAGE, CAPTURE_JSON,
	CAPTURE_OPT_COUNT
};

static const struct cli_opt capture_opts[CAPTURE_OPT_COUNT] = {
	[CAPTURE_MACHINE] = CLI_OPT_MACHINE,
	[CAPTURE_OUTPUT] = { "output", 'o', "FILE", "the frame to write (.jpg or .png)", 0 },
	[CAPTURE_AVERAGE] = { "average", 0, "N", "average N frames", 0 },
	[CAPTURE_JSON] = CLI_OPT_JSON,
};
static const struct cli_optset capture_set = { "camera capture", capture_opts, CAPTURE_OPT_COUNT, 0, NULL };

/* capture's options: 0 or a usage exit status. */
static int capture_parse(const struct cli_command *cmd, int argc, char **argv, const char **machine,
			 const char **outp, long *average, int *json)
{
	struct cli_optparse p;
	int opt;

	cli_opt_start(&p, cmd, &capture_set, argc, argv);
	while ((opt = cli_opt_next(&p)) != CLI_OPT_END) {
		if (opt == CLI_OPT_BAD)
			return BL_EXIT_USAGE;
		switch ((enum capture_opt)opt) {
		case CAPTURE_MACHINE:
			*machine = p.arg;
			break;
		case CAPTURE_OUTPUT:
			*outp = p.arg;
			break;
		case CAPTURE_AVERAGE:
			if (cli_opt_long(&p, 1, 64, average))
				return BL_EXIT_USAGE;
			break;
		case CAPTURE_JSON:
			*json = 1;
			break;
		case CAPTURE_OPT_COUNT:
			break;
		}
	}
	if (p.ind != argc)
		return cli_usage(cmd, "camera capture takes no arguments besides its options");
	if (!*outp)
		return cli_usage(cmd, "camera capture needs -o FILE (.jpg or .png)");
	if (!img_save_name_ok(*outp))
		return cli_usage(cmd, "-o %s: name the file .jpg or .png", *outp);
	return 0;
}

static int camera_capture(const struct cli_command *cmd, int argc, char **argv)
{
	const char *machine_path = NULL, *outp = NULL;
	struct machine *m = NULL;
	struct rig *r = NULL;
	struct camera *cam;
	struct img im = { 0 };
	bl_err err = { 0 };
	long average = 1;
	int json = 0, rc, locked = 1, w = 0, h = 0;
	char source[128] = "", mpath[CFG_PATH_MAX];

	if ((rc = capture_parse(cmd, argc, argv, &machine_path, &outp, &average, &json)))
		return rc;
	cli_machine_path(machine_path, mpath, sizeof(mpath));
	m = malloc(sizeof(*m));
	r = malloc(sizeof(*r));
	if (!m || !r) {
		free(m);
		free(r);
		return BL_EXIT_FAIL;
	}
	rc = machine_load(mpath, m, &err);
	if (rc)
		goto out_fail;
	/* The rig maps the machine's camera.backend to its implementation, the simulator's too. */
	rc = rig_open_camera(m, NULL, r, &err);
	if (rc)
		goto out_fail;
	cam = r->cam;
	rc = cam_lock_controls(cam, &err);
	if (rc)
		goto out_close;
	if (average == 1) {
		struct cam_frame f;

		rc = cam_capture(cam, &f, &err);
		if (rc)
			goto out_close;
		locked = f.controls_locked;
		snprintf(source, sizeof(source), "%s", f.source);
		rc = img_save_frame(outp, &f, m->camera.max_pixels, &w, &h, &err);
		cam_frame_free(&f);
	} else {
		rc = cam_capture_average(cam, (int)average, &im, &locked, &err);
		snprintf(source, sizeof(source), "%s",
			 m->camera.device[0] ? m->camera.device
					     : machine_cam_backend_names[m->camera.backend]);
		if (rc == 0) {
			w = im.w;
			h = im.h;
			rc = img_save(outp, &im, &err);
		}
	}
	if (rc)
		goto out_close;
	if (!locked)
		log_warn("%s: taken with automatic camera controls: not fit for colour measurement",
			 outp);
	if (json) {
		cJSON *o = cJSON_CreateObject();

		if (o) {
			cJSON_AddStringToObject(o, "file", outp);
			cJSON_AddStringToObject(o, "source", source);
			cJSON_AddNumberToObject(o, "width", w);
			cJSON_AddNumberToObject(o, "height", h);
			cJSON_AddNumberToObject(o, "frames", (double)average);
			cJSON_AddBoolToObject(o, "controls_locked", locked);
		}
		rc = cli_print_json(o);
	} else {
		printf("%s: %dx%d, %ld frame%s from %s, controls %s\n", outp, w, h, average,
		       average == 1 ? "" : "s averaged", source, locked ? "locked" : "automatic");
	}
	img_free(&im);
	rig_close(r);
	free(m);
	free(r);
	return rc;
out_close:
	img_free(&im);
	rig_close(r);
out_fail:
	free(m);
	free(r);
	return cli_fail(&err);
}

int cli_camera_main(int argc, char **argv)
{
	const struct cli_command *cmd = cli_find("camera");

	if (argc < 2)
		return cli_usage(cmd, "camera needs a subcommand: list or capture");
	if (strcmp(argv[1], "list") == 0)
		return camera_list(cmd, argc - 1, argv + 1);
	if (strcmp(argv[1], "capture") == 0)
		return camera_capture(cmd, argc - 1, argv + 1);
	return cli_usage(cmd, "unknown camera subcommand '%s'", argv[1]);
}

const struct cli_optset *const cli_camera_sets[] = { &list_set, &capture_set, NULL };
