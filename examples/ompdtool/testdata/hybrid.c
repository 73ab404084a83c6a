/* hybrid.c: an MPI+OpenMP job that hangs in known places, for the
 * whole-job tests of ompdtool. Usage: hybrid DIR HUNG_RANK SECONDS
 *
 * Every rank runs one parallel region (OMP_NUM_THREADS threads), so that
 * its OpenMP threads exist. Rank HUNG_RANK then enters a region of 3
 * threads in which thread 0 spins in spin() and the others wait in a
 * barrier; every other rank waits in MPI_Barrier for it, forever. Each rank
 * writes its truth to DIR/truth.RANK once in place: its rank, pid, node,
 * how many OpenMP threads it has and, per thread of the region it hangs in,
 * omp_get_thread_num, omp_get_num_threads and omp_get_level. The job ends
 * itself after SECONDS (alarm). */
#include <mpi.h>
#include <omp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static volatile int forever = 1;

__attribute__((noinline)) void spin(void) {
	while (forever)
		;
}

static void truth(const char *dir, int rank, int threads, int n, int nums[], int teams[], int levels[]) {
	char path[4096], tmp[4096];
	snprintf(path, sizeof path, "%s/truth.%d", dir, rank);
	snprintf(tmp, sizeof tmp, "%s.tmp", path);
	FILE *f = fopen(tmp, "w");
	if (!f) {
		perror(tmp);
		exit(1);
	}
	const char *node = getenv("SLURMD_NODENAME");
	fprintf(f, "{\"rank\":%d,\"pid\":%d,\"node\":\"%s\",\"threads\":%d,\"region\":[", rank, (int)getpid(),
		node ? node : "", threads);
	for (int i = 0; i < n; i++)
		fprintf(f, "%s{\"num\":%d,\"team\":%d,\"level\":%d}", i ? "," : "", nums[i], teams[i], levels[i]);
	fprintf(f, "]}\n");
	fclose(f);
	rename(tmp, path); /* the test waits for the file: whole or nothing */
}

int main(int argc, char **argv) {
	if (argc != 4) {
		fprintf(stderr, "usage: hybrid DIR HUNG_RANK SECONDS\n");
		return 2;
	}
	alarm(atoi(argv[3]));
	MPI_Init(&argc, &argv);
	int rank;
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	int threads = 0;
#pragma omp parallel
	{
#pragma omp single
		threads = omp_get_num_threads();
	}
	if (rank == atoi(argv[2])) {
		int nums[3], teams[3], levels[3];
#pragma omp parallel num_threads(3)
		{
			int i = omp_get_thread_num();
			nums[i] = i;
			teams[i] = omp_get_num_threads();
			levels[i] = omp_get_level();
#pragma omp barrier
			if (i == 0) {
				truth(argv[1], rank, threads > teams[0] ? threads : teams[0], teams[0], nums, teams, levels);
				spin();
			}
#pragma omp barrier
		}
	} else {
		truth(argv[1], rank, threads, 0, NULL, NULL, NULL);
	}
	MPI_Barrier(MPI_COMM_WORLD);
	MPI_Finalize();
	return 0;
}
