/* A library the program dlopens: its TLS block is allocated in a thread
 * only when the thread first uses the variable. */
__thread long dyn_tls = 5;

long *dyn_tls_addr(void) { return &dyn_tls; }
