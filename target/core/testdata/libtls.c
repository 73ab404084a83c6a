/* A shared library with a local (static) variable, a thread-local
 * variable reached through the general-dynamic TLS model, and a struct. */
#include "libtls.h"

static int lib_local = 0x1234;
__thread long lib_tls = 7;
tls_struct_t lib_s;

long *lib_tls_addr(void) { return &lib_tls; }
int *lib_local_addr(void) { return &lib_local; }
void lib_fill(void) { lib_s.b = 42; }
