/* sim_store.c: the world file: the simulated world's whole state in a checksummed snapshot and a log of what each action changed. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/fs.h"
#include "sim/sim_internal.h"

/*
 * Layout (host byte order: a world file belongs to the machine that made
 * it, like a core file): magic, version, seed, fingerprint, owner (version
 * 3: a hash of the run that made it, 0 for nobody's), then the world
 * field by field, the touched canvas cells only, and an FNV-1a checksum of
 * everything before it. A snapshot is written atomically (fs_write_atomic);
 * between snapshots each save appends a record to PATH.log (see replay_log),
 * flushed before the save returns: after a power loss the two hold the world
 * after the last completed action.
 */
static const unsigned char magic[8] = { 'B', 'L', 'S', 'I', 'M', 'W', 'L', 'D' };
#define WORLD_VERSION 3u
#define WORLD_OLDEST 2u /* version 2 had no owner: nobody's */
#define WORLD_MAX_BYTES (1u << 30)

struct wbuf {
	unsigned char *p;
	size_t n, cap;
	int oom;
};

static void put(struct wbuf *b, const void *v, size_t n)
{
	if (b->oom)
		return;
	if (b->n + n > b->cap) {
		size_t cap = b->cap ? b->cap : 4096;
		unsigned char *np;

		while (cap < b->n + n)
			cap *= 2;
		np = realloc(b->p, cap);
		if (!np) {
			b->oom = 1;
			return;
		}
		b->p = np;
		b->cap = cap;
	}
	memcpy(b->p + b->n, v, n);
	b->n += n;
}

#define PUT(b, v) put((b), &(v), sizeof(v))

struct rbuf {
	const unsigned char *p;
	size_t n, off;
	int bad;
};

static void get(struct rbuf *r, void *v, size_t n)
{
	if (r->bad || r->off + n > r->n) {
		r->bad = 1;
		memset(v, 0, n);
		return;
	}
	memcpy(v, r->p + r->off, n);
	r->off += n;
}

#define GET(r, v) get((r), &(v), sizeof(v))

/*
 * FNV-1a over 64-bit words (then the tail bytes): the world is saved after
 * every action, and a byte at a time its megabytes cost more than the rest of
 * the save. It detects damage; it is no defence against forgery.
 */
static uint64_t world_sum(const unsigned char *p, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ULL, w;
	size_t i = 0;

	for (; i + 8 <= n; i += 8) {
		memcpy(&w, p + i, 8);
		h ^= w;
		h *= 0x100000001b3ULL;
		h ^= h >> 29;
	}
	for (; i < n; i++) {
		h ^= p[i];
		h *= 0x100000001b3ULL;
	}
	return h;
}

static void put_rng(struct wbuf *b, const rng *r)
{
	int32_t spare = r->has_spare;

	put(b, r->s, sizeof(r->s));
	PUT(b, spare);
	PUT(b, r->spare);
}

static void get_rng(struct rbuf *b, rng *r)
{
	int32_t spare;

	get(b, r->s, sizeof(r->s));
	GET(b, spare);
	GET(b, r->spare);
	r->has_spare = spare != 0;
}

static void put_pots(struct wbuf *b, const struct sim_pot *p, int n)
{
	uint32_t k = (uint32_t)n;

	PUT(b, k);
	for (int i = 0; i < n; i++) {
		put(b, p[i].ml, sizeof(p[i].ml));
		PUT(b, p[i].mixed);
	}
}

static void get_pots(struct rbuf *b, struct sim_pot *p, int n)
{
	uint32_t k;

	GET(b, k);
	if (k != (uint32_t)n) {
		b->bad = 1;
		return;
	}
	for (int i = 0; i < n; i++) {
		get(b, p[i].ml, sizeof(p[i].ml));
		GET(b, p[i].mixed);
	}
}

/* The world but its canvas: what every save writes, the snapshot and each log record. */
static void put_head(struct wbuf *b, struct sim *s)
{
	struct sim_world *w = &s->w;
	uint32_t nx = (uint32_t)w->nx, ny = (uint32_t)w->ny;
	int64_t t_ns = clk_now_ns(s->clock), actions = w->actions, frames = w->frames;
	uint8_t flags[3] = { (uint8_t)w->homed, (uint8_t)w->held, (uint8_t)w->fault };
	int32_t tool = w->cur_tool;

	PUT(b, t_ns);
	PUT(b, w->arm_time_s);
	PUT(b, actions);
	PUT(b, frames);
	PUT(b, w->pos);
	put(b, flags, sizeof(flags));
	put(b, w->fault_msg, sizeof(w->fault_msg));
	put_rng(b, &w->r_arm);
	put_rng(b, &w->r_cmd);
	put_rng(b, &w->r_frame);
	put_rng(b, &w->r_cam);
	put_rng(b, &w->r_disp);
	PUT(b, tool);
	put_pots(b, w->wells, s->m.n_wells);
	put_pots(b, w->mix, s->m.n_cells);
	put_pots(b, &w->water, 1);
	put_pots(b, w->tools, SIM_N_TOOLS);
	put_pots(b, w->deep, SIM_N_TOOLS);
	PUT(b, nx);
	PUT(b, ny);
}

/* The canvas cells that differ from the bare canvas (all), or those changed since the last save. */
static void put_cells(struct wbuf *b, struct sim *s, int changed_only)
{
	struct sim_world *w = &s->w;
	size_t ncell = (size_t)w->nx * w->ny, n_at = b->n;
	uint32_t count = 0;

	/* The count goes before the cells; one pass over the canvas, the count written after. */
	PUT(b, count);
	for (size_t i = 0; i < ncell; i++) {
		const struct sim_cell *c = &w->cells[i];
		uint32_t idx = (uint32_t)i;

		if (changed_only ? !w->unsaved[i] : !c->touched)
			continue;
		count++;
		PUT(b, idx);
		put(b, c->base, sizeof(c->base));
		put(b, c->wet, sizeof(c->wet));
		PUT(b, c->wet_mm);
		PUT(b, c->dry_mm);
		PUT(b, c->t_wet_s);
	}
	if (!b->oom)
		memcpy(b->p + n_at, &count, sizeof(count));
}

int sim_world_serialize(struct sim *s, unsigned char **out, size_t *len, bl_err *err)
{
	struct wbuf b = { 0 };
	uint32_t ver = WORLD_VERSION;
	uint64_t sum;

	/* Paint past its drying time is dry, whenever the last look at it was: one canonical state. */
	sim_world_dry(s);
	put(&b, magic, sizeof(magic));
	PUT(&b, ver);
	PUT(&b, s->seed);
	PUT(&b, s->fingerprint);
	PUT(&b, s->owner);
	put_head(&b, s);
	put_cells(&b, s, 0);
	if (!b.oom) {
		sum = world_sum(b.p, b.n);
		PUT(&b, sum);
	}
	if (b.oom) {
		free(b.p);
		return bl_fail(err, BL_ENOMEM, "sim: out of memory saving the world");
	}
	*out = b.p;
	*len = b.n;
	return 0;
}

/* Reads the header of a world file: checks magic, version and checksum, returns its seed. */
static int check_header(const char *path, const unsigned char *p, size_t n, struct rbuf *r,
			uint64_t *seed, uint64_t *fp, uint64_t *owner, bl_err *err)
{
	unsigned char mg[8];
	uint32_t ver;
	uint64_t sum;

	if (n < sizeof(magic) + 4 + 16 + 8)
		return bl_fail(err, BL_EINVAL, "%s: not a brushloop world file (too short)", path);
	memcpy(&sum, p + n - 8, 8);
	*r = (struct rbuf){ p, n - 8, 0, 0 };
	get(r, mg, sizeof(mg));
	if (memcmp(mg, magic, sizeof(magic)) != 0)
		return bl_fail(err, BL_EINVAL, "%s: not a brushloop world file", path);
	GET(r, ver);
	if (ver < WORLD_OLDEST || ver > WORLD_VERSION)
		return bl_fail(err, BL_EINVAL, "%s: world file version %u, this brushloop reads %u to %u",
			       path, ver, WORLD_OLDEST, WORLD_VERSION);
	if (world_sum(p, n - 8) != sum)
		return bl_fail(err, BL_EINVAL, "%s: the world file is damaged (checksum mismatch)",
			       path);
	GET(r, *seed);
	GET(r, *fp);
	*owner = 0;
	if (ver >= 3)
		GET(r, *owner);
	return 0;
}

int sim_world_peek_seed(const char *path, int *exists, uint64_t *seed, bl_err *err)
{
	char *buf;
	size_t len;
	struct rbuf r;
	uint64_t fp, owner;
	int rc;

	*exists = access(path, F_OK) == 0;
	if (!*exists)
		return 0;
	rc = fs_read_file(path, WORLD_MAX_BYTES, &buf, &len, err);
	if (rc)
		return rc;
	rc = check_header(path, (unsigned char *)buf, len, &r, seed, &fp, &owner, err);
	free(buf);
	return rc;
}

/* What the head holds that the world takes only once every record is read. */
struct head {
	int64_t t_ns, actions, frames;
	int32_t tool;
};

static void get_head(struct rbuf *r, struct sim *s, struct head *h)
{
	struct sim_world *w = &s->w;
	uint8_t flags[3];
	uint32_t nx, ny;

	GET(r, h->t_ns);
	GET(r, w->arm_time_s);
	GET(r, h->actions);
	GET(r, h->frames);
	GET(r, w->pos);
	get(r, flags, sizeof(flags)); /* unused: after power-up nothing is latched (sim_world_load) */
	get(r, w->fault_msg, sizeof(w->fault_msg));
	w->fault_msg[sizeof(w->fault_msg) - 1] = '\0';
	get_rng(r, &w->r_arm);
	get_rng(r, &w->r_cmd);
	get_rng(r, &w->r_frame);
	get_rng(r, &w->r_cam);
	get_rng(r, &w->r_disp);
	GET(r, h->tool);
	get_pots(r, w->wells, s->m.n_wells);
	get_pots(r, w->mix, s->m.n_cells);
	get_pots(r, &w->water, 1);
	get_pots(r, w->tools, SIM_N_TOOLS);
	get_pots(r, w->deep, SIM_N_TOOLS);
	GET(r, nx);
	GET(r, ny);
	if (nx != (uint32_t)w->nx || ny != (uint32_t)w->ny || h->tool < -1 || h->tool >= SIM_N_TOOLS)
		r->bad = 1;
}

static void get_cells(struct rbuf *r, struct sim *s)
{
	struct sim_world *w = &s->w;
	size_t ncell = (size_t)w->nx * w->ny;
	uint32_t count, prev = 0;

	GET(r, count);
	if (count > ncell)
		r->bad = 1;
	for (uint32_t k = 0; k < count && !r->bad; k++) {
		uint32_t idx;
		struct sim_cell *c;

		GET(r, idx);
		if (r->bad || idx >= ncell || (k && idx <= prev)) {
			r->bad = 1;
			break;
		}
		prev = idx;
		c = &w->cells[idx];
		get(r, c->base, sizeof(c->base));
		get(r, c->wet, sizeof(c->wet));
		GET(r, c->wet_mm);
		GET(r, c->dry_mm);
		GET(r, c->t_wet_s);
		c->touched = 1;
		w->dirty[idx] = 1;
		if (c->wet_mm > 0.0f) {
			sim_world_mark_wet(w, idx);
			if (c->t_wet_s < w->oldest_wet_s)
				w->oldest_wet_s = c->t_wet_s;
		} else if (c->wet_pos >= 0) {
			sim_world_unmark_wet(w, idx); /* dried since the record before */
		}
	}
}

/*
 * The log beside the snapshot (PATH.log): one record per save since the
 * snapshot, each [magic][the snapshot's checksum][length][head and changed
 * cells][checksum]. Records made for another snapshot, and a torn or
 * damaged last one, end the log: a save is complete once its record is.
 */
static const uint32_t log_magic = 0x4c57424cu; /* "BLWL" */
#define LOG_MAX_BYTES (1u << 30)

static int log_path(const char *world, char *out, size_t n, bl_err *err)
{
	if (snprintf(out, n, "%s.log", world) >= (int)n)
		return bl_fail(err, BL_EINVAL, "%s: path too long", world);
	return 0;
}

static int replay_log(struct sim *s, const char *path, struct head *h, bl_err *err)
{
	char lp[CFG_PATH_MAX + 8], *buf = NULL;
	size_t len = 0, off = 0;
	int rc;

	if ((rc = log_path(path, lp, sizeof(lp), err)))
		return rc;
	if (access(lp, F_OK) != 0)
		return 0;
	if ((rc = fs_read_file(lp, LOG_MAX_BYTES, &buf, &len, err)))
		return rc;
	for (;;) {
		const unsigned char *p = (const unsigned char *)buf + off;
		uint32_t m, n;
		uint64_t base, sum;
		struct rbuf r;

		if (len - off < 4 + 8 + 4 + 8)
			break;
		memcpy(&m, p, 4);
		memcpy(&base, p + 4, 8);
		memcpy(&n, p + 12, 4);
		if (m != log_magic || base != s->base_sum || n > len - off - 24)
			break;
		memcpy(&sum, p + 16 + n, 8);
		if (world_sum(p + 4, 12 + (size_t)n) != sum)
			break;
		r = (struct rbuf){ p + 16, n, 0, 0 };
		get_head(&r, s, h);
		get_cells(&r, s);
		if (r.bad || r.off != r.n) {
			free(buf);
			return bl_fail(err, BL_EINVAL, "%s: a record at byte %zu is damaged (bad layout)",
				       lp, off);
		}
		off += 24 + (size_t)n;
	}
	free(buf);
	return 0;
}

int sim_world_load(struct sim *s, const char *path, bl_err *err)
{
	struct sim_world *w = &s->w;
	char *buf;
	size_t len;
	struct rbuf r;
	uint64_t seed, fp, owner;
	struct head h;
	int rc;

	rc = fs_read_file(path, WORLD_MAX_BYTES, &buf, &len, err);
	if (rc)
		return rc;
	rc = check_header(path, (unsigned char *)buf, len, &r, &seed, &fp, &owner, err);
	if (rc)
		goto out_buf;
	/* A world of nobody's (version 2) is any run's that an older brushloop began. */
	if (s->owner && owner && owner != s->owner) {
		rc = bl_fail(err, BL_EINVAL, "%s is another run's world (another run made it): its "
			     "canvas is not this run's canvas, so it is never taken", path);
		goto out_buf;
	}
	if (seed != s->seed || fp != s->fingerprint) {
		rc = bl_fail(err, BL_EINVAL, "%s: the world was made for another machine file (its "
			     "canvas, cell size, wells, paints or batch variation differ)", path);
		goto out_buf;
	}
	get_head(&r, s, &h);
	if (r.bad) {
		rc = bl_fail(err, BL_EINVAL, "%s: the world file does not fit this machine (or was "
			     "written by another brushloop)", path);
		goto out_buf;
	}
	get_cells(&r, s);
	if (r.bad || r.off != r.n) {
		rc = bl_fail(err, BL_EINVAL, "%s: the world file is damaged (bad layout)", path);
		goto out_buf;
	}
	memcpy(&s->base_sum, buf + len - 8, 8);
	if ((rc = replay_log(s, path, &h, err)))
		goto out_buf;
	/* The next save writes a whole snapshot: a torn record at the log's end goes with it. */
	s->snapshot_due = 1;
	/*
	 * A process starts like a machine after power-up: the paint is where it
	 * was, but the arm must be homed again and no hold or fault is latched.
	 */
	w->actions = (long)h.actions;
	w->frames = (long)h.frames;
	w->cur_tool = h.tool;
	w->homed = 0;
	w->held = 0;
	w->fault = 0;
	w->fault_msg[0] = '\0';
	clk_virtual_init(s->clock, h.t_ns);
	rc = 0;
out_buf:
	free(buf);
	return rc;
}

/* The whole world to path, atomically; with the world file, its log starts again. */
static int save_snapshot(struct sim *s, const char *path, bl_err *err)
{
	unsigned char *buf;
	size_t len, ncell = (size_t)s->w.nx * s->w.ny;
	char lp[CFG_PATH_MAX + 8];
	int rc;

	if ((rc = sim_world_serialize(s, &buf, &len, err)))
		return rc;
	rc = fs_write_atomic(path, buf, len, err);
	if (rc == 0 && path == s->world_file) {
		memcpy(&s->base_sum, buf + len - 8, 8);
		s->snapshot_bytes = len;
		s->log_bytes = 0;
		/* Records of the snapshot before carry its checksum: left behind by a crash here, they are passed over. */
		if (s->log_fd >= 0)
			close(s->log_fd);
		s->log_fd = -1;
		if ((rc = log_path(path, lp, sizeof(lp), err)) == 0) {
			s->log_fd = open(lp, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644);
			if (s->log_fd < 0)
				rc = bl_fail(err, BL_EIO, "%s: cannot open: %s", lp, strerror(errno));
		}
		if (rc == 0) {
			memset(s->w.unsaved, 0, ncell);
			s->snapshot_due = 0;
		}
	}
	free(buf);
	return rc;
}

/* What changed since the last save, appended to the log and flushed to the disk. */
static int append_record(struct sim *s, bl_err *err)
{
	struct wbuf b = { 0 };
	uint32_t n = 0; /* the payload's length, written once it is known */
	uint64_t sum;
	size_t ncell = (size_t)s->w.nx * s->w.ny;
	int rc = 0;

	sim_world_dry(s);
	PUT(&b, log_magic);
	PUT(&b, s->base_sum);
	PUT(&b, n);
	put_head(&b, s);
	put_cells(&b, s, 1);
	if (!b.oom) {
		n = (uint32_t)(b.n - 16);
		memcpy(b.p + 12, &n, sizeof(n));
		sum = world_sum(b.p + 4, b.n - 4);
		PUT(&b, sum);
	}
	if (b.oom) {
		free(b.p);
		return bl_fail(err, BL_ENOMEM, "sim: out of memory saving the world");
	}
	if (fs_write_fd(s->log_fd, b.p, b.n) < 0 || fdatasync(s->log_fd) < 0)
		rc = bl_fail(err, BL_ESTORAGE, "%s.log: write failed: %s", s->world_file, strerror(errno));
	else {
		s->log_bytes += b.n;
		memset(s->w.unsaved, 0, ncell);
	}
	free(b.p);
	return rc;
}

/*
 * A save after every action wrote the whole world, megabytes of canvas, with
 * an fsync: a third of a run's time. Now an action appends what it changed
 * to the log, and the snapshot is written again only when the log has grown
 * past it (and at a process's first save).
 */
int sim_save(struct sim *s, const char *path, bl_err *err)
{
	if (path && path != s->world_file)
		return save_snapshot(s, path, err);
	if (!s->world_file[0])
		return bl_fail(err, BL_EINVAL, "sim: no world file to save to");
	if (s->snapshot_due || s->log_fd < 0 || s->log_bytes > s->snapshot_bytes)
		return save_snapshot(s, s->world_file, err);
	return append_record(s, err);
}

void sim_store_close(struct sim *s)
{
	if (s->log_fd >= 0)
		close(s->log_fd);
	s->log_fd = -1;
}

int sim_state_bytes(struct sim *s, unsigned char **buf, size_t *len, bl_err *err)
{
	return sim_world_serialize(s, buf, len, err);
}
