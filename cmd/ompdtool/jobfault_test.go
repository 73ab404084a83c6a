package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ompd-go/ompd/internal/fixtures"
	"github.com/ompd-go/ompd/internal/procfs"
	"github.com/ompd-go/ompd/internal/summary"
)

// The faults a whole-job read meets, each on the real 4-node cluster.

// toolRun is a run of the tool under way, its progress (standard error)
// read line by line.
type toolRun struct {
	cmd      *exec.Cmd
	stdout   bytes.Buffer
	lines    *bufio.Scanner
	progress []string
}

// start starts the tool as the user (asUser) or as root, with extraEnv.
func (h *hybridUser) start(t *testing.T, ctx context.Context, asUser bool, extraEnv []string, args ...string) *toolRun {
	t.Helper()
	r := &toolRun{cmd: h.command(ctx, extraEnv, args...)}
	if !asUser {
		r.cmd.SysProcAttr = nil
	}
	r.cmd.Stdout = &r.stdout
	stderr, err := r.cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, r.cmd.Start())
	r.lines = bufio.NewScanner(stderr)
	return r
}

// waitFor reads progress until the n-th line that contains s, and returns
// it; "" if the tool's output ends first.
func (r *toolRun) waitFor(s string, n int) string {
	for r.lines.Scan() {
		l := r.lines.Text()
		r.progress = append(r.progress, l)
		if strings.Contains(l, s) {
			if n--; n == 0 {
				return l
			}
		}
	}
	return ""
}

// wait reads the rest of the progress and waits for the tool: its exit
// status.
func (r *toolRun) wait(t *testing.T) int {
	t.Helper()
	r.waitFor("\x00", 1)
	err := r.cmd.Wait()
	if err == nil {
		return 0
	}
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee, r.text())
	return ee.ExitCode()
}

func (r *toolRun) text() string { return strings.Join(r.progress, "\n") }

// assertFree checks that no rank (but those of skip) is stopped or traced
// by anyone, and that each goes on running.
func assertFree(t *testing.T, truths map[int]hybridTruth, skip ...int) {
	t.Helper()
	for r, tr := range truths {
		if slices.Contains(skip, r) {
			continue
		}
		what := "rank " + strconv.Itoa(r)
		tids, err := procfs.Tasks(tr.PID)
		require.NoError(t, err, what)
		for _, tid := range tids {
			if tracer, comm := procfs.Tracer(tid); tracer != 0 {
				cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", tracer))
				st, _ := procfs.ReadStat(fmt.Sprintf("/proc/%d", tracer))
				t.Errorf("%s: thread %d traced by %d (%s, state %c): %q", what, tid, tracer, comm, st.State, cmdline)
			}
		}
		assertRuns(t, tr.PID, what)
	}
}

// assertNoCollector checks that no collector (exe running collect) is
// left.
func assertNoCollector(t *testing.T, exe string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); len(collectors(exe)) > 0; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Errorf("collectors left running: %v", collectors(exe))
			return
		}
	}
}

// collectors are the processes running exe collect.
func collectors(exe string) []int {
	var pids []int
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		if p, err := os.Readlink(filepath.Join(d, "exe")); err != nil || p != exe {
			continue
		}
		if cmdline, err := os.ReadFile(filepath.Join(d, "cmdline")); err == nil && bytes.Contains(cmdline, []byte("\x00collect\x00")) && !procfs.Gone(d) {
			pid, _ := strconv.Atoi(filepath.Base(d))
			pids = append(pids, pid)
		}
	}
	return pids
}

// TestJobInterrupted interrupts `ompdtool job` (SIGINT, as Ctrl-C) at
// several moments of a read of an 8-rank job: once srun is started, while
// the collectors read rank after rank, while every collector holds a rank
// seized and stopped, and while they hold them and ignore the request to
// let go (Slurm then kills them). Each time the tool exits 130 and no rank
// is left stopped or traced: every one runs on.
func TestJobInterrupted(t *testing.T) {
	env := slurmCluster(t)
	h := newHybridUser(t, env)
	job, truths := h.submit(t, 8, "5 300")
	for _, m := range []struct {
		name   string
		wait   string // the progress line to interrupt at
		nth    int
		env    []string
		expect string // in the progress after the interruption
	}{
		{"srun started", "job: srun ", 1, nil, "asking the collectors to let their ranks go"},
		{"reading", "collect: reading rank", 3, nil, "asking the collectors to let their ranks go"},
		{"ranks held", "test: holding rank", 4, []string{holdRank + "=all"}, "asking the collectors to let their ranks go"},
		{"collectors stubborn", "test: holding rank", 4, []string{holdRank + "=all", holdStubborn + "=1", graceEnv + "=2s"},
			"the collectors did not end within 2s; ending srun"},
	} {
		t.Run(m.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			r := h.start(t, ctx, true, m.env, "job", "-parallel", "1", job)
			require.NotEmpty(t, r.waitFor(m.wait, m.nth), "no %q in the progress:\n%s", m.wait, r.text())
			require.NoError(t, r.cmd.Process.Signal(syscall.SIGINT))
			assert.Equal(t, 130, r.wait(t), r.text())
			assert.Contains(t, r.text(), m.expect)
			assert.Contains(t, r.text(), "ompdtool: interrupted")
			assertNoCollector(t, h.toolExe)
			assertFree(t, truths)
		})
	}
}

// TestJobFaults reads an 8-rank job (two ranks per node) where rank 2 is
// traced by strace and two impostors (processes of the job's user with
// OpenMP, carrying the job's id and rank variables in their environment,
// one with its node's name, one without) claim ranks 4 and 1: as the
// job's user (`job`) and as root (`collect -job` on the nodes, outside the
// job), the real ranks 1 and 4 are read, never the impostors; rank 2 is
// named traced by strace; `job` exits 1 naming rank 2; the other ranks run
// on, neither stopped nor traced. Last, rank 6 is killed while its
// collector holds it: it is gone, and `job` names ranks 2 and 6.
func TestJobFaults(t *testing.T) {
	fixtures.RequireTool(t, "strace", "gcc")
	env := slurmCluster(t)
	h := newHybridUser(t, env)
	job, truths := h.submit(t, 8, "5 300")
	t.Logf("job running %v", time.Now().Format("15:04:05.000"))

	// The impostors.
	hold := buildHold(t, h.dir)
	impostor := func(rank int, node string) int {
		ready := filepath.Join(h.dir, "impostor"+strconv.Itoa(rank))
		cmd := exec.Command(hold, ready)
		cmd.Env = append(os.Environ(), "OMP_NUM_THREADS=2", "SLURM_JOB_ID="+job, "SLURM_JOBID="+job, "SLURM_STEP_ID=0",
			"SLURM_PROCID="+strconv.Itoa(rank), "PMIX_RANK="+strconv.Itoa(rank), "OMPI_COMM_WORLD_RANK="+strconv.Itoa(rank))
		if node != "" {
			cmd.Env = append(cmd.Env, "SLURMD_NODENAME="+node)
		}
		cmd.SysProcAttr = h.asUser
		require.NoError(t, cmd.Start())
		t.Cleanup(func() {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		})
		waitReady(t, ready)
		return cmd.Process.Pid
	}
	impostors := []int{impostor(4, truths[4].Node), impostor(1, "")}

	// strace holds rank 2.
	const traced, killed = 2, 6
	strace := exec.Command("strace", "-f", "-o", "/dev/null", "-p", strconv.Itoa(truths[traced].PID))
	require.NoError(t, strace.Start())
	t.Cleanup(func() {
		_ = strace.Process.Signal(syscall.SIGTERM)
		_ = strace.Wait()
	})
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if tracer, _ := procfs.Tracer(truths[traced].PID); tracer == strace.Process.Pid {
			break
		}
		require.True(t, time.Now().Before(deadline), "strace does not trace rank %d", traced)
	}

	// As root, on the node of each rank an impostor claims, outside the
	// job (root reads every process, the impostors' environment too):
	// the job's processes only.
	for _, rank := range []int{1, 4} {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		r := h.start(t, ctx, false, nil, "collect", "-job", job, "-node", truths[rank].Node)
		start := time.Now()
		code := r.wait(t)
		cancel()
		t.Logf("root collect on %s: %v", truths[rank].Node, time.Since(start))
		require.Equal(t, 0, code, r.text())
		pids := map[int]int{}
		for _, l := range strings.Split(strings.TrimSpace(r.stdout.String()), "\n") {
			var rec summary.Record
			require.NoError(t, json.Unmarshal([]byte(l), &rec), l)
			pids[rec.Rank] = rec.PID
			assert.Empty(t, rec.Error, "root: rank %d", rec.Rank)
			assert.Len(t, rec.Threads, truths[rec.Rank].Threads, "root: rank %d", rec.Rank)
		}
		want := map[int]int{}
		for rk, tr := range truths {
			if tr.Node == truths[rank].Node {
				want[rk] = tr.PID
			}
		}
		assert.Equal(t, want, pids, "root, node %s", truths[rank].Node)
	}
	assertFree(t, truths, traced)

	// As the user, then with rank 6 killed while its collector holds
	// it, once the other collectors are done (its death ends the MPI
	// job: the last thing the test does).
	for _, kill := range []bool{false, true} {
		who := "user"
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		var extra []string
		if kill {
			who += ", rank killed"
			extra = []string{holdRank + "=" + strconv.Itoa(killed)}
		}
		r := h.start(t, ctx, true, extra, "-json", "job", job)
		if kill {
			require.NotEmpty(t, r.waitFor("test: holding rank "+strconv.Itoa(killed), 1), r.text())
			waitOneCollector(t, h.toolExe)
			require.NoError(t, syscall.Kill(truths[killed].PID, syscall.SIGKILL))
		}
		code := r.wait(t)
		cancel()
		t.Logf("%s: job done %v", who, time.Now().Format("15:04:05.000"))
		text := r.text()
		assert.Equal(t, 1, code, "%s: %s", who, text)
		unread := strconv.Itoa(traced)
		if kill {
			unread += "," + strconv.Itoa(killed)
		}
		assert.Contains(t, text, "ompdtool: ranks not read: "+unread+" of 8", who)
		// Each rank read is the job's process, never an impostor.
		read := map[int]int{}
		for _, m := range regexp.MustCompile(`reading rank (\d+) \(process (\d+)\)`).FindAllStringSubmatch(text, -1) {
			rank, _ := strconv.Atoi(m[1])
			pid, _ := strconv.Atoi(m[2])
			read[rank] = pid
		}
		for _, rank := range []int{1, 4} {
			assert.Equal(t, truths[rank].PID, read[rank], "%s: rank %d", who, rank)
		}
		for _, pid := range impostors {
			assert.NotContains(t, text, fmt.Sprintf("(process %d)", pid), who)
		}
		var got jobJSON
		require.NoError(t, json.Unmarshal(r.stdout.Bytes(), &got), r.stdout.String())
		errs := map[int]string{}
		for _, e := range got.Errors {
			errs[e.Rank] += e.Error
		}
		assert.Contains(t, errs[traced], fmt.Sprintf("is already traced by process %d (strace)", strace.Process.Pid), who)
		if kill {
			assert.Contains(t, errs[killed], "is gone", who)
		}
		assert.Len(t, errs, len(strings.Split(unread, ",")), "%s: %v", who, errs)
		for rank, tr := range truths {
			if rank != traced && (!kill || rank != killed) {
				assert.Equal(t, tr.Threads, threadsOf(got.Summary, rank), "%s: threads of rank %d", who, rank)
			}
		}
		assertNoCollector(t, h.toolExe)
		if !kill {
			assertFree(t, truths, traced)
		}
	}
}

// waitOneCollector waits until one collector (exe running collect) is
// left, the others done.
func waitOneCollector(t *testing.T, exe string) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); len(collectors(exe)) != 1; time.Sleep(20 * time.Millisecond) {
		require.True(t, time.Now().Before(deadline), "collectors %v: not one left", collectors(exe))
	}
}

// TestJobNodeDown reads an 8-rank job while the slurmd of node n4 (ranks 6
// and 7) is stopped (SIGSTOP), then dead (SIGKILL): srun cannot start a
// collector there and aborts the step, the other nodes' collectors with
// it; the tool reads the other nodes again without n4, prints the six
// ranks and exits 1 naming 6 and 7, whose collector could not start;
// every rank runs on.
func TestJobNodeDown(t *testing.T) {
	env := slurmCluster(t)
	h := newHybridUser(t, env)
	job, truths := h.submit(t, 8, "5 300")
	var conf string
	for _, e := range env {
		if v, ok := strings.CutPrefix(e, "SLURM_CONF="); ok {
			conf = v
		}
	}
	b, err := os.ReadFile(filepath.Join(filepath.Dir(conf), "run", "slurmd-n4.pid"))
	require.NoError(t, err)
	slurmd, err := strconv.Atoi(strings.TrimSpace(string(b)))
	require.NoError(t, err)
	for _, sig := range []syscall.Signal{syscall.SIGSTOP, syscall.SIGKILL} {
		require.NoError(t, syscall.Kill(slurmd, sig))
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		r := h.start(t, ctx, true, nil, "-json", "job", job)
		code := r.wait(t)
		cancel()
		text := r.text()
		assert.Equal(t, 1, code, text)
		assert.Contains(t, text, "job: the collectors could not start on node n4: reading the job's other nodes again without it", sig)
		assert.Contains(t, text, "ompdtool: ranks not read: 6-7 of 8", sig)
		var got jobJSON
		require.NoError(t, json.Unmarshal(r.stdout.Bytes(), &got), r.stdout.String())
		assert.Equal(t, "0-7", got.Summary.Ranks.String())
		for rank, tr := range truths {
			if rank < 6 {
				assert.Equal(t, tr.Threads, threadsOf(got.Summary, rank), "%v: threads of rank %d", sig, rank)
			}
		}
		var missing []int
		for _, e := range got.Errors {
			assert.Contains(t, e.Error, "no collector could start on node n4", sig)
			missing = append(missing, e.Rank)
		}
		assert.Equal(t, []int{6, 7}, missing, sig)
		if sig == syscall.SIGSTOP {
			require.NoError(t, syscall.Kill(slurmd, syscall.SIGCONT))
		}
		assertNoCollector(t, h.toolExe)
		assertFree(t, truths)
	}
}

// TestJobMPICH reads a hung job of the hybrid fixture built with MPICH and
// launched through Slurm's PMI-2 (srun --mpi=pmi2), as the Open MPI job of
// TestJobSlurm: every rank, its threads, the hung rank's region and the
// others in MPI_Barrier.
func TestJobMPICH(t *testing.T) {
	env := slurmCluster(t)
	h := newHybridUserMPI(t, env, mpich)
	const hung = 5
	job, truths := h.submit(t, 8, "5 120")
	checkHybridJob(t, h.tool(t)("-q", "-json", "job", job), truths, hung)
}
