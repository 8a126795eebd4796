/* image.h: decoding and encoding of camera frames and target images: JPEG through TurboJPEG, PNG through libpng, packed RGB. */
#ifndef BL_VISION_IMAGE_H
#define BL_VISION_IMAGE_H

#include <stddef.h>
#include <stdint.h>

#include "base/err.h"
#include "vision/camera.h"

/*
 * A decoded image: packed 8-bit RGB, rows top to bottom, stride 3 * w bytes,
 * turned as a JPEG's EXIF orientation says a viewer shows it (TurboJPEG
 * leaves that to the caller). icc holds an embedded ICC profile when the
 * file had one (PNG iCCP, JPEG APP2 ICC_PROFILE), else NULL.
 */
struct img {
	int w, h;              /* px, as shown (after the EXIF orientation) */
	unsigned char *px;     /* 3 * w * h bytes, owned */
	size_t px_cap;         /* bytes allocated at px when img_alloc or img_resize made them, else 0 */
	uint16_t *px16;        /* the same pixels at 16 bits a sample when the file has them (a 16-bit PNG), else NULL; owned */
	unsigned char *icc;    /* embedded ICC profile (owned) or NULL */
	size_t icc_len;
	const char *icc_from;  /* where icc came from ("iCCP", "gAMA and cHRM", ...), static */
	int orientation;       /* the JPEG's EXIF orientation (1..8), applied to px; 0: none */
};

/* What an EXIF orientation (0..8) did to the stored picture: "turned 90 degrees clockwise". */
const char *img_orientation_name(int orientation);

/* Largest image file brushloop reads (a 16-bit 8K PNG stays well under it). */
#define IMG_MAX_FILE_BYTES (512u << 20)

/*
 * Reads the format and size from the header of an encoded image without
 * decoding it. name is used in messages (a file name or a frame source).
 */
int img_probe(const unsigned char *buf, size_t len, const char *name, enum cam_format *fmt,
	      int *w, int *h, bl_err *err);

/*
 * Decodes a JPEG or PNG held in memory (the format is told from the first
 * bytes). The header's size is checked against max_pixels before any pixel
 * memory is allocated. A truncated or corrupt file is BL_EINVAL with a
 * message naming it, never a partly grey image. Harmless libjpeg warnings
 * (extraneous bytes before a marker, as some webcams send) are accepted.
 */
int img_decode(const unsigned char *buf, size_t len, const char *name, long max_pixels,
	       struct img *out, bl_err *err);

/* Reads and decodes an image file (refuses directories, empty files and files over IMG_MAX_FILE_BYTES). */
int img_load(const char *path, long max_pixels, struct img *out, bl_err *err);

/* Decodes a camera frame: JPEG, PNG or packed RGB24 of the frame's width and height. */
int img_decode_frame(const struct cam_frame *f, long max_pixels, struct img *out, bl_err *err);

/*
 * img_decode_frame into im as the last decode into it left it (or zeroed):
 * a JPEG or RGB24 frame goes into its pixel buffer when that is big enough
 * (img_resize), so that a camera's frames decode one after another into the
 * same memory. On failure im may be freed; img_free it in the end.
 */
int img_decode_frame_into(const struct cam_frame *f, long max_pixels, struct img *im,
			  bl_err *err);

/* Allocates a w x h image (contents undefined). */
int img_alloc(struct img *im, int w, int h, bl_err *err);

/*
 * Makes im, zeroed or an image img_alloc or img_resize made, a w x h image
 * (contents undefined) in the pixel buffer it has when that is big enough;
 * its px16 and icc are freed.
 */
int img_resize(struct img *im, int w, int h, bl_err *err);

/* Compresses to JPEG (quality 1..100, 4:4:4 chroma); *out is malloc'd. */
int img_encode_jpeg(const struct img *im, int quality, unsigned char **out, size_t *len,
		    bl_err *err);

/* Compresses to PNG (8-bit RGB); *out is malloc'd. */
int img_encode_png(const struct img *im, unsigned char **out, size_t *len, bl_err *err);

/* Writes the image atomically as PNG or JPEG (quality 95), chosen by the extension of path. */
int img_save(const char *path, const struct img *im, bl_err *err);

/* Whether path names a file img_save can write (.png, .jpg or .jpeg, in any case). */
int img_save_name_ok(const char *path);

/*
 * Writes a camera frame atomically in the format path's name says: a JPEG
 * frame to a .jpg or .jpeg file byte for byte (recompressing would lose
 * detail), anything else decoded and encoded by img_save. *w and *h (may be
 * NULL) receive the size written.
 */
int img_save_frame(const char *path, const struct cam_frame *f, long max_pixels, int *w, int *h,
		   bl_err *err);

void img_free(struct img *im);

#endif
