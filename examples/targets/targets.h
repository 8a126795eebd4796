/* targets.h: the five example targets, drawn procedurally (the PNGs beside this file are made from them). */
#ifndef BL_EXAMPLES_TARGETS_H
#define BL_EXAMPLES_TARGETS_H

enum { TARGET_COUNT = 5 };

/* "autumn-tree", "flat-shapes", "gradient-sky", "fine-detail", "still-life" */
extern const char *const target_names[TARGET_COUNT];

/* Draws target which at w x h into rgb8 (packed sRGB, 3 bytes a pixel); 0 or -1. */
int target_draw(int which, int w, int h, unsigned char *rgb8);

#endif
