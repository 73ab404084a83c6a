/* Shared by libtls.c and prog.c: a struct whose layout the test checks
 * through DWARF against offsetof. */
#ifndef LIBTLS_H
#define LIBTLS_H

struct tls_inner {
	short x;
	short y;
};

struct tls_struct {
	char a;
	long b;
	int c[3];
	struct tls_inner in;
	union {
		int u1;
		double u2;
	};
	struct {
		char s1;
		long s2;
	};
	unsigned int f1 : 3;
	unsigned int f2 : 5;
};

typedef struct tls_struct tls_struct_t;

extern tls_struct_t lib_s;

long *lib_tls_addr(void);
int *lib_local_addr(void);
void lib_fill(void);

#endif
