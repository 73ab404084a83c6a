/* A local symbol with the name of types.c's global one. */
static int dup_name = 6;

int *dup_local_addr(void) { return &dup_name; }
