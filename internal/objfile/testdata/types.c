/* Types whose layout objfile's DWARF answers are checked against: main
 * prints sizeof/offsetof and bit-field positions as key=value lines. Also
 * a static and a global variable of the same name (in dup.c) and a
 * thread-local variable. */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

struct inner {
	short x;
	short y;
};

typedef struct inner inner_t;
typedef const inner_t cinner_t;

union value {
	int i;
	double d;
};

struct outer {
	char a;
	long b;
	inner_t in[2];
	union value v;
	union {
		int u1;
		long long u2;
	};
	struct {
		char s1;
		struct {
			int deep;
		};
	};
	unsigned int f1 : 3;
	unsigned int f2 : 5;
	unsigned int f3 : 20;
	struct inner *next;
};

typedef struct outer outer_t;
typedef outer_t outer_alias_t;
typedef union value value_t;

outer_alias_t g_outer;
value_t g_value;
cinner_t g_cinner = {1, 2};
__thread int g_tls = 3;
static int only_local = 4;
int dup_name = 5;

int *only_local_addr(void) { return &only_local; }

static int bitpos(const unsigned char *p, size_t n) {
	for (size_t i = 0; i < n * 8; i++)
		if (p[i / 8] & (1 << (i % 8)))
			return (int)i;
	return -1;
}

int main(void) {
	struct outer o;
	memset(&o, 0, sizeof o);
	o.f1 = 7;
	int f1 = bitpos((unsigned char *)&o, sizeof o);
	memset(&o, 0, sizeof o);
	o.f2 = 31;
	int f2 = bitpos((unsigned char *)&o, sizeof o);
	memset(&o, 0, sizeof o);
	o.f3 = 1;
	int f3 = bitpos((unsigned char *)&o, sizeof o);
	printf("size_outer=%zu size_inner=%zu size_value=%zu b=%zu in=%zu v=%zu u2=%zu s1=%zu deep=%zu next=%zu "
	       "f1=%d f2=%d f3=%d\n",
	       sizeof(struct outer), sizeof(struct inner), sizeof(union value), offsetof(struct outer, b),
	       offsetof(struct outer, in), offsetof(struct outer, v), offsetof(struct outer, u2),
	       offsetof(struct outer, s1), offsetof(struct outer, deep), offsetof(struct outer, next), f1, f2,
	       f3);
	return *only_local_addr() - 4;
}
