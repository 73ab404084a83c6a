/* hybrid.c: an MPI+OpenMP job that hangs in known places, for the
 * whole-job tests of ompdtool.
 * Usage: hybrid DIR HUNG_RANK SECONDS [NODUMP_RANK]
 *
 * Every rank runs one parallel region (OMP_NUM_THREADS threads), so that
 * its OpenMP threads exist. Rank HUNG_RANK then enters a region of 3
 * threads in which thread 0 spins in spin() and the others wait in a
 * barrier; every other rank waits in MPI_Barrier for it, forever. Each rank
 * writes its truth to DIR/truth.RANK once in place: its rank, pid, node,
 * how many OpenMP threads it has and, per thread of the region it hangs in,
 * omp_get_thread_num, omp_get_num_threads, omp_get_level and its state
 * (work_parallel spinning; in the barrier wait_barrier_explicit, or on
 * gcc's libgomp wait_barrier: gcc calls GOMP_barrier for an explicit
 * barrier and a worksharing construct's implicit one alike). A rank
 * writes it only once it is in MPI_Barrier, or its threads in theirs: a
 * helper thread waits for the flag that the call sets (the barrier's
 * threads count themselves in just before it). Rank NODUMP_RANK makes
 * itself not dumpable: other users cannot read its /proc files nor trace
 * it, as if it were another user's. The job ends itself after SECONDS
 * (alarm). */
#include <mpi.h>
#include <omp.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <unistd.h>

#if defined(__GNUC__) && !defined(__clang__)
#define BARRIER_STATE "wait_barrier"
#else
#define BARRIER_STATE "wait_barrier_explicit"
#endif

static volatile int forever = 1;

/* in_barrier is set by MPI_Barrier below as it enters the library's. */
static volatile int in_barrier;

/* MPI_Barrier sets in_barrier and jumps to the library's barrier (a tail
 * call: no frame of its own, the stack is PMPI_Barrier < main as without
 * it), so that a rank is in it from the moment the flag is set. */
__attribute__((optimize("O2", "optimize-sibling-calls"))) int MPI_Barrier(MPI_Comm comm) {
	in_barrier = 1;
	return PMPI_Barrier(comm);
}

__attribute__((noinline)) void spin(void) {
	while (forever)
		;
}

struct truth {
	const char *dir;
	int rank, threads, n;
	int nums[3], teams[3], levels[3];
	const char *states[3];
};

static void truth(const struct truth *t) {
	char path[4096], tmp[4096];
	snprintf(path, sizeof path, "%s/truth.%d", t->dir, t->rank);
	snprintf(tmp, sizeof tmp, "%s.tmp", path);
	FILE *f = fopen(tmp, "w");
	if (!f) {
		perror(tmp);
		exit(1);
	}
	const char *node = getenv("SLURMD_NODENAME");
	fprintf(f, "{\"rank\":%d,\"pid\":%d,\"node\":\"%s\",\"threads\":%d,\"region\":[", t->rank, (int)getpid(),
		node ? node : "", t->threads);
	for (int i = 0; i < t->n; i++)
		fprintf(f, "%s{\"num\":%d,\"team\":%d,\"level\":%d,\"state\":\"%s\"}", i ? "," : "", t->nums[i],
			t->teams[i], t->levels[i], t->states[i]);
	fprintf(f, "]}\n");
	fclose(f);
	rename(tmp, path); /* the test waits for the file: whole or nothing */
}

/* after_barrier writes the truth once the rank is in MPI_Barrier. */
static void *after_barrier(void *arg) {
	while (!in_barrier)
		usleep(1000);
	truth(arg);
	return NULL;
}

int main(int argc, char **argv) {
	if (argc != 4 && argc != 5) {
		fprintf(stderr, "usage: hybrid DIR HUNG_RANK SECONDS [NODUMP_RANK]\n");
		return 2;
	}
	alarm(atoi(argv[3]));
	MPI_Init(&argc, &argv);
	int rank;
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	if (argc == 5 && rank == atoi(argv[4]))
		prctl(PR_SET_DUMPABLE, 0);
	int threads = 0;
#pragma omp parallel
	{
#pragma omp single
		threads = omp_get_num_threads();
	}
	static struct truth t;
	t.dir = argv[1];
	t.rank = rank;
	t.threads = threads;
	if (rank == atoi(argv[2])) {
		static volatile int waiting;
#pragma omp parallel num_threads(3)
		{
			int i = omp_get_thread_num();
			t.nums[i] = i;
			t.teams[i] = omp_get_num_threads();
			t.levels[i] = omp_get_level();
			t.states[i] = i == 0 ? "work_parallel" : BARRIER_STATE;
#pragma omp barrier
			if (i == 0) {
				t.n = t.teams[0];
				if (t.teams[0] > t.threads)
					t.threads = t.teams[0];
				while (waiting < t.n - 1)
					;
				truth(&t);
				spin();
			}
			__atomic_add_fetch(&waiting, 1, __ATOMIC_SEQ_CST);
#pragma omp barrier
		}
	} else {
		pthread_t helper;
		pthread_create(&helper, NULL, after_barrier, &t);
	}
	MPI_Barrier(MPI_COMM_WORLD);
	MPI_Finalize();
	return 0;
}
