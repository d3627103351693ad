/* File: keep_modules.c
 * LD_PRELOAD shim for scripts/sanitize.sh: dlclose() keeps every module loaded, so that
 * LeakSanitizer can still name the OpenMPI plugins (mca_*) that allocated memory it reports at
 * exit, and tests/sanitizers/lsan.supp can suppress them by library name. */
int dlclose(void* handle) {
  (void)handle;
  return 0;
}
