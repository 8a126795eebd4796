/* cc24.c: the X-Rite ColorChecker Classic 24's patch names and published CIELAB (cc24.h). */
#include "color/cc24.h"

const char *const color_cc24_names[COLOR_CC24_N] = {
	"dark skin", "light skin", "blue sky", "foliage", "blue flower", "bluish green",
	"orange", "purplish blue", "moderate red", "purple", "yellow green", "orange yellow",
	"blue", "green", "red", "yellow", "magenta", "cyan",
	"white 9.5", "neutral 8", "neutral 6.5", "neutral 5", "neutral 3.5", "black 2",
};

const double color_cc24_lab[COLOR_CC24_N][3] = {
	{ 37.54, 14.37, 14.92 },  { 64.66, 19.27, 17.50 },  { 49.32, -3.82, -22.54 },
	{ 43.46, -12.74, 22.72 }, { 54.94, 9.61, -24.79 },  { 70.48, -32.26, -0.37 },
	{ 62.73, 35.83, 56.50 },  { 39.43, 10.75, -45.17 }, { 50.57, 48.64, 16.67 },
	{ 30.10, 22.54, -20.87 }, { 71.77, -24.13, 58.19 }, { 71.51, 18.24, 67.37 },
	{ 28.37, 15.42, -49.80 }, { 54.38, -39.72, 32.27 }, { 42.43, 51.05, 28.62 },
	{ 81.80, 2.67, 80.41 },   { 50.63, 51.28, -14.12 }, { 49.57, -29.71, -28.32 },
	{ 95.19, -1.03, 2.93 },   { 81.29, -0.57, 0.44 },   { 66.89, -0.75, -0.06 },
	{ 50.76, -0.13, 0.14 },   { 35.63, -0.46, -0.48 },  { 20.64, 0.07, -0.46 },
};
