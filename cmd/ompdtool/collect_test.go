package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ompd-go/ompd/internal/fixtures"
	"github.com/ompd-go/ompd/internal/summary"
)

// TestCollectPIDs collects two ranks of the nested fixture (ranks from
// PMIX_RANK and OMPI_COMM_WORLD_RANK in their environments) and a process
// that is gone: two records with six threads in the inner regions, one
// record with the error, the programs still running; merge then makes one
// class per thread kind spanning both ranks.
func TestCollectPIDs(t *testing.T) {
	a := holdNested(t, "PMIX_RANK=7")
	b := holdNested(t, "OMPI_COMM_WORLD_RANK=3")
	gone := deadPID(t)
	out := runTool(t, "collect", "-q", strconv.Itoa(a.Process.Pid), strconv.Itoa(b.Process.Pid), strconv.Itoa(gone))
	var recs []summary.Record
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(nil, 1<<26)
	for sc.Scan() {
		var r summary.Record
		require.NoError(t, json.Unmarshal(sc.Bytes(), &r), sc.Text())
		recs = append(recs, r)
	}
	require.Len(t, recs, 3)
	// Read at once, they come in any order.
	sort.Slice(recs, func(i, j int) bool { return recs[i].Rank > recs[j].Rank })
	for i, want := range []struct{ rank, pid int }{{7, a.Process.Pid}, {3, b.Process.Pid}} {
		r := recs[i]
		assert.Equal(t, want.rank, r.Rank)
		assert.Equal(t, want.pid, r.PID)
		assert.Empty(t, r.Error)
		assert.Contains(t, r.Runtime, "libomp")
		require.Len(t, r.Threads, 6)
		for _, th := range r.Threads {
			require.NotEmpty(t, th.Regions, "gtid %d", th.GTID)
			assert.Equal(t, 2, th.Regions[0].Level)
			assert.Equal(t, 2, th.Regions[0].NumThreads)
			assert.NotEmpty(t, th.Frames, "gtid %d", th.GTID)
			assert.NotEmpty(t, th.Stack, "gtid %d", th.GTID)
			assert.NotEmpty(t, th.Task, "gtid %d", th.GTID)
		}
	}
	assert.Equal(t, gone, recs[2].PID)
	assert.Contains(t, recs[2].Error, "is gone")
	assert.Empty(t, recs[2].Threads)
	// Detached, both still run, no thread left stopped.
	assert.NoError(t, a.Process.Signal(syscall.Signal(0)))
	assert.NoError(t, b.Process.Signal(syscall.Signal(0)))
	assertNotStopped(t, a.Process.Pid, "rank 7")
	assertNotStopped(t, b.Process.Pid, "rank 3")

	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "node1.jsonl"), []byte(out), 0o644))
	text := runTool(t, "merge", dir)
	assert.Contains(t, text, "12 threads of 3 ranks (2-3,7)")
	assert.Contains(t, text, "rank 2: process "+strconv.Itoa(gone)+" is gone")
	// Every class spans both ranks read.
	for _, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(l, "rank") && strings.Contains(l, "thread") {
			assert.True(t, strings.HasPrefix(l, "ranks 3,7: "), l)
		}
	}
}

// deadPID returns the id of a process that has ended.
func deadPID(t *testing.T) int {
	p, err := os.StartProcess("/bin/true", []string{"true"}, &os.ProcAttr{})
	require.NoError(t, err)
	_, err = p.Wait()
	require.NoError(t, err)
	return p.Pid
}

// TestParseTasks reads scontrol listpids output: a task's child has no
// rank.
func TestParseTasks(t *testing.T) {
	out := "PID      JOBID    STEPID   LOCALID GLOBALID\n" +
		"4321     12       0        0       4\n" +
		"4330     12       0        -       -\n" +
		"4322     12       batch    0       0\n"
	tasks, err := parseTasks([]byte(out))
	require.NoError(t, err)
	assert.Equal(t, []slurmTask{{pid: 4321, step: "0", rank: 4}, {pid: 4330, step: "0", rank: -1}, {pid: 4322, step: "batch", rank: 0}}, tasks)
	_, err = parseTasks([]byte("12x 1 0 0 4\n"))
	assert.ErrorContains(t, err, "unexpected line")
}

// TestTaskRanks finds a job's ranks among the processes scontrol listpids
// lists, in a fake /proc: a task with OpenMP is its rank; of a wrapper
// and its child, the child with OpenMP; a child an MPI launcher ranked
// (mpirun's, in the batch step or under a step's daemon) is that rank; a
// task gone, or without OpenMP in a step with OpenMP, is reported; the
// collector's own step and steps without OpenMP give none; and a process
// that carries the job's variables but that Slurm does not list (an
// impostor) is never a rank, with or without SLURMD_NODENAME.
func TestTaskRanks(t *testing.T) {
	root := t.TempDir()
	proc := func(pid, ppid int, state, env, maps string) {
		d := filepath.Join(root, strconv.Itoa(pid))
		require.NoError(t, os.MkdirAll(d, 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(d, "environ"), []byte(strings.ReplaceAll(env, " ", "\x00")), 0o644))
		require.NoError(t, os.WriteFile(filepath.Join(d, "maps"), []byte(maps), 0o644))
		stat := fmt.Sprintf("%d (x y) %s %d 1 1", pid, state, ppid)
		require.NoError(t, os.WriteFile(filepath.Join(d, "stat"), []byte(stat), 0o644))
	}
	omp := "7f00-7f10 r-xp 0 08:01 1 /usr/lib/x86_64-linux-gnu/libgomp.so.1.0.0\n"
	job := "SLURM_JOB_ID=5 SLURMD_NODENAME=n1 SLURM_STEP_ID=0 "
	proc(10, 1, "R", job+"SLURM_PROCID=0", omp)  // rank 0
	proc(11, 1, "Z", job+"SLURM_PROCID=1", omp)  // rank 1, exited
	proc(13, 1, "S", job+"SLURM_PROCID=3", "")   // rank 3: a wrapper
	proc(14, 13, "R", job+"SLURM_PROCID=3", omp) // its child, with OpenMP
	proc(15, 1, "S", job+"SLURM_PROCID=4", "")   // rank 4: no OpenMP
	proc(16, 1, "S", job+"SLURM_PROCID=6", "")   // rank 6: a daemon (orted)
	proc(17, 16, "R", job+"SLURM_PROCID=6 OMPI_COMM_WORLD_RANK=7", omp)
	proc(18, 16, "R", job+"SLURM_PROCID=6 OMPI_COMM_WORLD_RANK=8", omp)
	proc(20, 1, "S", "SLURM_JOB_ID=5 SLURM_PROCID=0", "")                  // the batch script
	proc(22, 20, "R", "SLURM_JOB_ID=5 SLURM_PROCID=0 PMI_RANK=9", omp)     // mpirun's rank there
	proc(23, 20, "R", "SLURM_JOB_ID=5 SLURM_PROCID=0", omp)                // not a rank
	proc(21, 1, "S", "SLURM_JOB_ID=5 SLURM_STEP_ID=1 SLURM_PROCID=0", "")  // step 1, no OpenMP here
	proc(30, 1, "S", "SLURM_JOB_ID=5 SLURM_STEP_ID=2 SLURM_PROCID=0", omp) // the collector's step
	proc(40, 1, "R", job+"SLURM_PROCID=0", omp)                            // impostors
	proc(41, 1, "R", "SLURM_JOB_ID=5 SLURM_STEP_ID=0 SLURM_PROCID=5", omp) // (no node)
	proc(42, 1, "R", "SLURM_JOB_ID=5 PMIX_RANK=2 OMPI_COMM_WORLD_RANK=2", omp)
	tasks, err := parseTasks([]byte("PID JOBID STEPID LOCALID GLOBALID\n" +
		"10 5 0 0 0\n11 5 0 1 1\n12 5 0 2 2\n13 5 0 3 3\n14 5 0 - -\n15 5 0 4 4\n" +
		"16 5 0 5 6\n17 5 0 - -\n18 5 0 - -\n" +
		"20 5 batch 0 0\n22 5 batch - -\n23 5 batch - -\n21 5 1 0 9\n30 5 2 0 0\n"))
	require.NoError(t, err)
	want := []rankProc{
		{pid: 10, rank: 0, host: "n1"},
		{pid: 11, rank: 1, host: "n1"}, // read: gone
		{pid: 12, rank: 2, host: "n1"}, // read: gone
		{pid: 14, rank: 3, host: "n1"},
		{pid: 15, rank: 4, host: "n1", err: "process 15 (task of step 0): no OpenMP runtime loaded in it or its children"},
		{pid: 17, rank: 7, host: "n1"},
		{pid: 18, rank: 8, host: "n1"},
		{pid: 22, rank: 9, host: "n1"},
	}
	assert.Equal(t, want, taskRanks(root, "n1", tasks, "2"))
	// Reading another job's step, from the collector's step: all steps.
	assert.Contains(t, taskRanks(root, "n1", tasks, ""), rankProc{pid: 30, rank: 0, host: "n1"})
}

// TestPIDRanks: a process given by pid without a rank variable is its
// position in the list, unless another process's rank variable names that
// rank: then it gets a rank no process has.
func TestPIDRanks(t *testing.T) {
	start := func(env ...string) int {
		return fixtures.Sleeper(t, time.Minute, env...).Process.Pid
	}
	a, b, c := start(), start("PMIX_RANK=0"), start()
	var o options
	o.init(io.Discard)
	procs, err := o.findProcs(context.Background(), []string{strconv.Itoa(a), strconv.Itoa(b), strconv.Itoa(c)})
	require.NoError(t, err)
	ranks := map[int]int{}
	for _, p := range procs {
		ranks[p.pid] = p.rank
	}
	assert.Equal(t, map[int]int{a: 3, b: 0, c: 2}, ranks)
}

// TestAttachError names the causes: a process gone, ptrace refused.
func TestAttachError(t *testing.T) {
	gone := deadPID(t)
	assert.ErrorContains(t, attachError(gone, syscall.ESRCH), "is gone")
	err := attachError(os.Getpid(), syscall.EPERM)
	assert.ErrorContains(t, err, "not allowed to trace")
	assert.ErrorIs(t, err, syscall.EPERM)
	// With Yama restricting ptrace, it says so; not when it allows it.
	yama := filepath.Join(t.TempDir(), "ptrace_scope")
	require.NoError(t, os.WriteFile(yama, []byte("1\n"), 0o644))
	assert.ErrorContains(t, attachErrorYama(os.Getpid(), syscall.EPERM, yama), "Yama ptrace_scope is 1 (")
	require.NoError(t, os.WriteFile(yama, []byte("0\n"), 0o644))
	assert.NotContains(t, attachErrorYama(os.Getpid(), syscall.EPERM, yama).Error(), "Yama")
}

// TestCollectUsage: collect needs a job or process ids.
func TestCollectUsage(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"collect"}, "give -job"},
		{[]string{"collect", "-job", "x"}, "bad job id"},
		{[]string{"collect", "-job", "3", "12"}, "not both"},
		{[]string{"collect", "12y"}, "bad process id"},
		{[]string{"merge"}, "no input"},
		{[]string{"job"}, "want one job id"},
		{[]string{"-dot", "core", "a", "b"}, "-dot and -depth apply"},
	} {
		var out, stderr bytes.Buffer
		err := run(ctx, c.args, &out, &stderr)
		assert.ErrorContains(t, err, c.want, c.args)
	}
}

// TestChunks: records split into short lines by several collectors, then
// interleaved and labelled as srun --label writes them, come back whole.
func TestChunks(t *testing.T) {
	var a, b bytes.Buffer
	wa, wb := &chunkWriter{w: &a, size: 16}, &chunkWriter{w: &b, size: 16}
	recA := `{"rank":1,"host":"n1","threads":[{"gtid":0,"state":"work_serial"}]}` + "\n"
	recB := `{"rank":2}` + "\n"
	for _, w := range []struct {
		w   *chunkWriter
		rec string
	}{{wa, recA}, {wb, recB}, {wa, recA}} {
		n, err := w.w.Write([]byte(w.rec))
		require.NoError(t, err)
		assert.Equal(t, len(w.rec), n)
	}
	la, lb := strings.SplitAfter(a.String(), "\n"), strings.SplitAfter(b.String(), "\n")
	for _, l := range append(la, lb...) {
		assert.LessOrEqual(t, len(l), 16)
	}
	var mixed []string
	for i := 0; i < len(la) || i < len(lb); i++ {
		if i < len(la) && la[i] != "" {
			mixed = append(mixed, "0: "+strings.TrimSuffix(la[i], "\n"))
		}
		if i < len(lb) && lb[i] != "" {
			mixed = append(mixed, "1: "+strings.TrimSuffix(lb[i], "\n"))
		}
	}
	var c chunkReader
	var got []string
	for _, l := range mixed {
		whole, ok, err := c.line([]byte(l))
		require.NoError(t, err)
		if ok {
			got = append(got, string(whole)+"\n")
		}
	}
	assert.ElementsMatch(t, []string{recA, recA, recB}, got)
	_, _, err := c.line([]byte("0: {oops"))
	assert.ErrorContains(t, err, "not a labelled piece")
}

// holdSrc is an OpenMP program (gcc, so libgomp) that holds two threads in
// a parallel region after writing its pid to the file argv[1].
const holdSrc = `#include <omp.h>
#include <stdio.h>
#include <unistd.h>
int main(int argc, char **argv) {
	alarm(120);
#pragma omp parallel num_threads(2)
	{
#pragma omp barrier
		if (omp_get_thread_num() == 0) {
			FILE *f = fopen(argv[1], "w");
			fprintf(f, "%d\n", (int)getpid());
			fclose(f);
		}
		for (;;)
			pause();
	}
}
`

// buildHold builds holdSrc in dir and returns the program.
func buildHold(t *testing.T, dir string) string {
	t.Helper()
	src := filepath.Join(dir, "hold.c")
	require.NoError(t, os.WriteFile(src, []byte(holdSrc), 0o644))
	prog := filepath.Join(dir, "hold")
	out, err := exec.Command("gcc", "-fopenmp", "-g", "-o", prog, src).CombinedOutput()
	require.NoError(t, err, "%s", out)
	return prog
}

// waitReady waits until a program of holdSrc wrote its pid to ready.
func waitReady(t *testing.T, ready string) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
		if b, err := os.ReadFile(ready); err == nil && strings.HasSuffix(string(b), "\n") {
			return
		}
		require.True(t, time.Now().Before(deadline), "%s did not get ready", ready)
	}
}

// TestCollectUsers runs the collector as a normal user: it reads that
// user's rank, and says why it cannot read a rank of another user (root's)
// while reading the rest.
func TestCollectUsers(t *testing.T) {
	if os.Getuid() != 0 {
		fixtures.Unavailable(t, "switching users needs root")
	}
	fixtures.RequireTool(t, "gcc")
	const nobody = 65534
	dir, err := os.MkdirTemp("", "ompd-users-")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	require.NoError(t, os.Chmod(dir, 0o1777))
	prog := buildHold(t, dir)
	self, err := os.Executable()
	require.NoError(t, err)
	tool := filepath.Join(dir, "ompdtool.test")
	b, err := os.ReadFile(self)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(tool, b, 0o755))

	asNobody := &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
	start := func(rank int, attr *syscall.SysProcAttr) int {
		ready := filepath.Join(dir, "ready"+strconv.Itoa(rank))
		cmd := exec.Command(prog, ready)
		cmd.Env = append(os.Environ(), "PMIX_RANK="+strconv.Itoa(rank), "OMP_NUM_THREADS=2")
		cmd.SysProcAttr = attr
		require.NoError(t, cmd.Start())
		t.Cleanup(func() {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		})
		waitReady(t, ready)
		return cmd.Process.Pid
	}
	rootPID := start(0, nil)
	userPID := start(1, asNobody)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, tool, "collect", "-q", strconv.Itoa(rootPID), strconv.Itoa(userPID))
	cmd.Env = append(os.Environ(), asTool+"=1", "HOME="+dir)
	cmd.SysProcAttr = asNobody
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	outb, err := cmd.Output()
	require.NoError(t, err, "%s", stderr.String())
	var recs []summary.Record
	for _, l := range strings.Split(strings.TrimSpace(string(outb)), "\n") {
		var r summary.Record
		require.NoError(t, json.Unmarshal([]byte(l), &r), l)
		recs = append(recs, r)
	}
	require.Len(t, recs, 2)
	assert.Equal(t, 0, recs[0].Rank)
	assert.Contains(t, recs[0].Error, "not allowed to trace", recs[0].Error)
	assert.Empty(t, recs[0].Threads)
	assert.Equal(t, 1, recs[1].Rank)
	assert.Empty(t, recs[1].Error)
	assert.Contains(t, recs[1].Runtime, "libgomp")
	require.Len(t, recs[1].Threads, 2)
	for _, th := range recs[1].Threads {
		require.NotEmpty(t, th.Regions)
		assert.Equal(t, 1, th.Regions[0].Level)
		assert.Equal(t, 2, th.Regions[0].NumThreads)
		assert.Contains(t, th.Regions[0].Function, "main._omp_fn.0")
	}
}

// TestCollectExited: a rank that has exited but is not reaped yet (as
// when it ends while the collector runs) is reported gone.
func TestCollectExited(t *testing.T) {
	p, err := os.StartProcess("/bin/true", []string{"true"}, &os.ProcAttr{})
	require.NoError(t, err)
	t.Cleanup(func() { _, _ = p.Wait() })
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if b, err := os.ReadFile("/proc/" + strconv.Itoa(p.Pid) + "/stat"); err == nil && strings.Contains(string(b), ") Z ") {
			break
		}
		require.True(t, time.Now().Before(deadline), "no zombie")
	}
	var r summary.Record
	require.NoError(t, json.Unmarshal([]byte(runTool(t, "collect", "-q", strconv.Itoa(p.Pid))), &r))
	assert.Contains(t, r.Error, "is gone")
}

// TestCollectRankExits: a rank that ends while the collector reads another
// is reported gone, and the others are read. The collector (this test
// binary as ompdtool, reading one rank at a time) is stopped while it
// reads rank 0, rank 1 is killed and reaped, and the collector goes on.
func TestCollectRankExits(t *testing.T) {
	a := holdNested(t, "PMIX_RANK=0")
	b := holdNested(t, "PMIX_RANK=1")
	self, err := os.Executable()
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, self, "collect", "-parallel", "1", strconv.Itoa(a.Process.Pid), strconv.Itoa(b.Process.Pid))
	cmd.Env = append(os.Environ(), asTool+"=1")
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	var out bytes.Buffer
	cmd.Stdout = &out
	require.NoError(t, cmd.Start())
	sc := bufio.NewScanner(stderr)
	var progress []string
	for sc.Scan() {
		progress = append(progress, sc.Text())
		if strings.Contains(sc.Text(), "reading rank 0 ") {
			require.NoError(t, cmd.Process.Signal(syscall.SIGSTOP))
			require.NoError(t, b.Process.Kill())
			_, _ = b.Process.Wait()
			require.NoError(t, cmd.Process.Signal(syscall.SIGCONT))
		}
	}
	require.NoError(t, cmd.Wait(), "%s", strings.Join(progress, "\n"))
	var recs []summary.Record
	for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var r summary.Record
		require.NoError(t, json.Unmarshal([]byte(l), &r), l)
		recs = append(recs, r)
	}
	require.Len(t, recs, 2)
	assert.Equal(t, 0, recs[0].Rank)
	assert.Empty(t, recs[0].Error)
	assert.Len(t, recs[0].Threads, 6)
	assert.Equal(t, 1, recs[1].Rank)
	assert.Contains(t, recs[1].Error, "is gone")
}

// TestCollectRankEndsAfterRead: a rank read whole that ends before it is
// let go (its detach fails: it is gone) keeps its snapshot; one that ends
// while it is read is reported gone. The rank is killed from the
// collector's hooks.
func TestCollectRankEndsAfterRead(t *testing.T) {
	for _, after := range []bool{true, false} {
		a := holdNested(t, "PMIX_RANK=0")
		kill := func(ctx context.Context, p rankProc) {
			require.NoError(t, a.Process.Kill())
			for deadline := time.Now().Add(30 * time.Second); !procGone(p.pid); time.Sleep(10 * time.Millisecond) {
				require.True(t, time.Now().Before(deadline), "rank %d does not end", p.rank)
			}
		}
		if after {
			beforeDetach = kill
		} else {
			afterAttach = kill
		}
		out := runTool(t, "collect", "-q", strconv.Itoa(a.Process.Pid))
		beforeDetach, afterAttach = nil, nil
		var r summary.Record
		require.NoError(t, json.Unmarshal([]byte(out), &r), out)
		if after {
			assert.Empty(t, r.Error)
			assert.Len(t, r.Threads, 6, "the snapshot read whole")
		} else {
			assert.Contains(t, r.Error, "is gone")
			assert.Empty(t, r.Threads)
		}
	}
}
