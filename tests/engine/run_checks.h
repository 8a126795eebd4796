/* run_checks.h: checks on a finished run directory that several engine test files make. */
#ifndef BL_TEST_RUN_CHECKS_H
#define BL_TEST_RUN_CHECKS_H

/*
 * No mixing cell of the run in dir ever held more than its machine's
 * mixing.cell_max_ml: its journal replayed (each dispense the gate allowed
 * in, each dip out by its brush's load_ml, a discarded cell emptied), and
 * state.json's cell_ml at the end.
 */
void run_check_cells_within_capacity(const char *dir);

#endif
