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

// asTool makes the test binary run as ompdtool (the job tests start it
// through srun, as the collector of each node).
const asTool = "OMPDTOOL_TEST_AS_TOOL"

// stopBefore makes the test binary run as ompdtool collect stop itself
// (SIGSTOP) before it reads the rank it names.
const stopBefore = "OMPDTOOL_TEST_STOP_BEFORE"

// holdRank makes the test binary run as ompdtool collect hold the rank it
// names ("all": every rank) once seized, before reading it, until its
// context ends or the rank is gone (or a minute passes); with
// holdStubborn=1, whatever its context says.
const (
	holdRank     = "OMPDTOOL_TEST_HOLD_RANK"
	holdStubborn = "OMPDTOOL_TEST_HOLD_STUBBORN"
)

// graceEnv sets collectorsGrace (a time.Duration) in the test binary run
// as ompdtool job.
const graceEnv = "OMPDTOOL_TEST_GRACE"

// exeModeEnv makes the test binary run as ompdtool collect say where its
// executable is, its mode and owner.
const exeModeEnv = "OMPDTOOL_TEST_EXE_MODE"

func TestMain(m *testing.M) {
	if os.Getenv(asTool) == "1" {
		testHooks()
		main()
	}
	os.Exit(m.Run())
}

// testHooks sets the hooks the environment asks for, in the test binary
// run as ompdtool.
func testHooks() {
	if r, err := strconv.Atoi(os.Getenv(stopBefore)); err == nil {
		beforeRead = func(p rankProc) {
			if p.rank == r {
				fmt.Fprintf(os.Stderr, "ompdtool: test: stopping before rank %d\n", r)
				_ = syscall.Kill(os.Getpid(), syscall.SIGSTOP)
			}
		}
	}
	if h := os.Getenv(holdRank); h != "" {
		stubborn := os.Getenv(holdStubborn) == "1"
		afterAttach = func(ctx context.Context, p rankProc) {
			if h != "all" && h != strconv.Itoa(p.rank) {
				return
			}
			fmt.Fprintf(os.Stderr, "ompdtool: test: holding rank %d (process %d)\n", p.rank, p.pid)
			if stubborn {
				ctx = context.Background()
			}
			// Until the rank is gone (a test killed it), too.
			for end := time.Now().Add(time.Minute); ctx.Err() == nil && time.Now().Before(end) && !procfs.Gone(fmt.Sprintf("/proc/%d", p.pid)); {
				time.Sleep(20 * time.Millisecond)
			}
		}
	}
	if d, err := time.ParseDuration(os.Getenv(graceEnv)); err == nil {
		collectorsGrace = d
	}
	if os.Getenv(exeModeEnv) == "1" && len(os.Args) > 1 {
		if exe, err := os.Executable(); err == nil {
			if st, err := os.Stat(exe); err == nil {
				fmt.Fprintf(os.Stderr, "ompdtool: test: executable %s mode %v uid %d\n", exe, st.Mode().Perm(), st.Sys().(*syscall.Stat_t).Uid)
			}
		}
	}
}

// hybridTruth is what a rank of the hybrid fixture recorded.
type hybridTruth struct {
	Rank    int    `json:"rank"`
	PID     int    `json:"pid"`
	Node    string `json:"node"`
	Threads int    `json:"threads"`
	Region  []struct {
		Num   int    `json:"num"`
		Team  int    `json:"team"`
		Level int    `json:"level"`
		State string `json:"state"`
	} `json:"region"`
}

// mpiFlavor is an MPI implementation the hybrid fixture is built with and
// launched by (srun --mpi=...), its compiler named exactly: Debian installs
// both side by side, mpicc being whichever its alternatives pick.
type mpiFlavor struct {
	name string
	cc   string   // its mpicc
	srun string   // srun's --mpi plugin for it
	env  []string // what its ranks need
}

var (
	// openMPI over PMIx; several ranks per fake node across fake
	// nodes need the TCP transport.
	openMPI = mpiFlavor{name: "Open MPI", cc: "mpicc.openmpi", srun: "pmix", env: []string{"OMPI_MCA_btl=self,tcp"}}
	// mpich over Slurm's PMI-2.
	mpich = mpiFlavor{name: "MPICH", cc: "mpicc.mpich", srun: "pmi2"}
)

// hybridUser runs jobs of the hybrid fixture and the tool as a normal
// user (nobody): every file they use is theirs to read.
type hybridUser struct {
	mpi     mpiFlavor
	env     []string // the cluster's clients' environment
	userEnv []string
	dir     string // the user's: the fixture, the tool, the truths
	exe     string // the fixture
	toolExe string // this test binary, run as the tool
	asUser  *syscall.SysProcAttr
}

// newHybridUser builds the fixture with Open MPI and copies the tool where
// the user can run them.
func newHybridUser(t *testing.T, env []string) *hybridUser {
	return newHybridUserMPI(t, env, openMPI)
}

// newHybridUserMPI is newHybridUser with MPI implementation mpi.
func newHybridUserMPI(t *testing.T, env []string, mpi mpiFlavor) *hybridUser {
	fixtures.RequireTool(t, mpi.cc)
	dir, err := os.MkdirTemp("", "ompd-job-")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	require.NoError(t, os.Chmod(dir, 0o1777))
	h := &hybridUser{
		mpi:     mpi,
		env:     env,
		userEnv: append(append([]string(nil), env...), "HOME="+dir),
		dir:     dir,
		exe:     filepath.Join(dir, "hybrid"),
		toolExe: filepath.Join(dir, "ompdtool.test"),
		asUser:  &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}},
	}
	out, err := exec.Command(mpi.cc, "-fopenmp", "-g", "-O0", "-o", h.exe, filepath.Join("testdata", "hybrid.c")).CombinedOutput()
	require.NoError(t, err, "%s", out)
	self, err := os.Executable()
	require.NoError(t, err)
	b, err := os.ReadFile(self)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(h.toolExe, b, 0o755))
	return h
}

// submit submits the fixture as a job of ranks ranks, two per node, with
// args after DIR ("HUNG_RANK SECONDS [NODUMP_RANK]") and extraEnv, and
// waits for every rank's truth. The batch script outlives the fixture's
// step, so that a rank killed by a test ends that step, not the job and the
// collectors' step with it. A job whose ranks do not all get in place is
// cancelled and submitted once more: on a loaded machine Open MPI's
// start-up can fail (a peer's TCP connect timed out and two ranks crashed
// while starting), before any rank runs the code under test.
func (h *hybridUser) submit(t *testing.T, ranks int, args string, extraEnv ...string) (string, map[int]hybridTruth) {
	for attempt := 1; ; attempt++ {
		job, truths, jobOut := h.trySubmit(t, ranks, args, extraEnv...)
		if len(truths) == ranks {
			return job, truths
		}
		if attempt == 2 {
			t.Fatalf("only %d of %d ranks got in place, in two jobs; job output:\n%s", len(truths), ranks, jobOut)
		}
		t.Logf("only %d of %d ranks got in place; cancelling job %s and submitting again. Job output:\n%s", len(truths), ranks, job, jobOut)
		_ = exec.Command("scancel", job).Run()
	}
}

// trySubmit is one submission of submit: the job, the truths of the ranks
// that got in place within 90 seconds and, if not all did, the job's
// output.
func (h *hybridUser) trySubmit(t *testing.T, ranks int, args string, extraEnv ...string) (string, map[int]hybridTruth, []byte) {
	for r := 0; r < ranks; r++ {
		_ = os.Remove(filepath.Join(h.dir, "truth."+strconv.Itoa(r)))
	}
	out := filepath.Join(h.dir, "job.out")
	sbatch := exec.Command("sbatch", "-N4", "-n"+strconv.Itoa(ranks), "--ntasks-per-node=2", "-o", out,
		"--wrap", "srun --mpi="+h.mpi.srun+" "+h.exe+" "+h.dir+" "+args+"; sleep 300")
	sbatch.Env = append(append(append(h.userEnv, h.mpi.env...), "OMP_NUM_THREADS=2"), extraEnv...)
	sbatch.SysProcAttr = h.asUser
	b, err := sbatch.CombinedOutput()
	require.NoError(t, err, "%s", b)
	m := regexp.MustCompile(`Submitted batch job (\d+)`).FindSubmatch(b)
	require.NotNil(t, m, "%s", b)
	job := string(m[1])
	t.Cleanup(func() { _ = exec.Command("scancel", job).Run() })

	truths := map[int]hybridTruth{}
	deadline := time.Now().Add(90 * time.Second)
	for len(truths) < ranks {
		for r := 0; r < ranks; r++ {
			b, err := os.ReadFile(filepath.Join(h.dir, "truth."+strconv.Itoa(r)))
			if err != nil {
				continue
			}
			var tr hybridTruth
			require.NoError(t, json.Unmarshal(b, &tr), "%s", b)
			truths[r] = tr
		}
		if time.Now().After(deadline) {
			jobOut, _ := os.ReadFile(out)
			return job, truths, jobOut
		}
		time.Sleep(100 * time.Millisecond)
	}
	return job, truths, nil
}

// command is the tool run as the user, with extraEnv.
func (h *hybridUser) command(ctx context.Context, extraEnv []string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, h.toolExe, args...)
	cmd.Env = append(append(h.userEnv, asTool+"=1"), extraEnv...)
	cmd.SysProcAttr = h.asUser
	return cmd
}

// runAs runs the tool as the user: its stdout, its stderr.
func (h *hybridUser) runAs(args ...string) (string, string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := h.command(ctx, nil, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	return string(out), stderr.String(), err
}

// tool is runAs that requires success.
func (h *hybridUser) tool(t *testing.T) func(args ...string) string {
	return func(args ...string) string {
		out, stderr, err := h.runAs(args...)
		require.NoError(t, err, "ompdtool %s\n%s\n%s", strings.Join(args, " "), stderr, out)
		return out
	}
}

// slurmCluster starts the 4-node cluster of scripts/slurm-cluster.sh,
// installing its packages first under CI=true, and returns the
// environment its clients need; it is stopped at the end of the test.
func slurmCluster(t *testing.T) []string {
	t.Helper()
	fixtures.Watchdog(t, fixtures.LiveBound())
	root, err := fixtures.ModuleRoot()
	require.NoError(t, err)
	script := filepath.Join(root, "scripts", "slurm-cluster.sh")
	if os.Getuid() != 0 {
		fixtures.Unavailable(t, "the test Slurm cluster runs its daemons as root")
	}
	if os.Getenv("CI") == "true" {
		out, err := exec.Command("bash", script, "install").CombinedOutput()
		require.NoError(t, err, "%s", out)
	}
	fixtures.RequireTool(t, "munged", "slurmctld", "slurmd", "srun", "sbatch", "squeue", "scancel", "sbcast")
	dir, err := os.MkdirTemp("", "ompd-slurm-") // short: munge's socket path has a limit
	require.NoError(t, err)
	t.Cleanup(func() {
		out, err := exec.Command("bash", script, "stop", dir).CombinedOutput()
		assert.NoError(t, err, "%s", out)
		_ = os.RemoveAll(dir)
	})
	out, err := exec.Command("bash", script, "start", dir).CombinedOutput()
	require.NoError(t, err, "%s", out)
	return append(os.Environ(), "SLURM_CONF="+filepath.Join(dir, "slurm.conf"))
}

// TestJobSlurm runs a hung hybrid MPI+OpenMP job of 8 ranks on a 4-node
// Slurm cluster (rank 5 spinning in an OpenMP region of 3 threads, the
// others in MPI_Barrier) and checks what `ompdtool job` merges against what
// each rank recorded. The job and the tool are a normal user's; the same
// user asking for root's job is refused.
func TestJobSlurm(t *testing.T) {
	env := slurmCluster(t)
	h := newHybridUser(t, env)
	const ranks, hung = 8, 5
	job, truths := h.submit(t, ranks, "5 120")
	runAs, tool := h.runAs, h.tool(t)
	checkHybridJob(t, tool("-q", "-json", "job", job), truths, hung)

	// The same through a copy of the tool on each node (sbcast); each
	// node sends its ranks merged. The copies are the user's alone, and
	// removed at the end.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := h.command(ctx, []string{exeModeEnv + "=1"}, "job", "-sbcast", "-parallel", "2", job)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	textb, err := cmd.Output()
	progress, text := stderr.String(), string(textb)
	require.NoError(t, err, progress)
	assert.Contains(t, progress, " collect -merged -chunk 900 -parallel 2 -job "+job)
	copies := regexp.MustCompile(`test: executable (/tmp/ompdtool-`+job+`-[0-9a-f]{16}) mode (\S+) uid (\d+)`).FindAllStringSubmatch(progress, -1)
	require.Len(t, copies, 4, progress)
	for _, c := range copies {
		assert.Equal(t, "-rwx------", c[2], c[0])
		assert.Equal(t, "65534", c[3], c[0])
		_, err = os.Stat(c[1])
		assert.ErrorIs(t, err, os.ErrNotExist, "the copies of the tool are removed")
	}
	lines := strings.Split(text, "\n")
	require.Greater(t, len(lines), 2, text)
	// By the stacks' prefix from _start to MPI_Barrier, every waiting
	// rank is one class.
	assert.Contains(t, tool("-q", "job", "-depth", "5", job), "ranks 0-4,6-7: 7 threads work_serial, serial; stack PMPI_Barrier < main < ")
	assert.Regexp(t, `^rank 5: 1 thread work_parallel in main\._omp_fn\.\d+( \(hybrid\.c:\d+\))?, level 1, team of 3; stack spin < `, lines[1])

	// Another user's job (root's) is refused to the user, saying why.
	sb := exec.Command("sbatch", "-N1", "-o", "/dev/null", "--wrap", "sleep 60")
	sb.Env = env
	out, err := sb.CombinedOutput()
	require.NoError(t, err, "%s", out)
	m := regexp.MustCompile(`Submitted batch job (\d+)`).FindSubmatch(out)
	require.NotNil(t, m, "%s", out)
	rootJob := string(m[1])
	t.Cleanup(func() { _ = exec.Command("scancel", rootJob).Run() })
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(100 * time.Millisecond) {
		sq := exec.Command("squeue", "-h", "-j", rootJob, "-o", "%T")
		sq.Env = env
		if state, err := sq.Output(); err == nil && strings.TrimSpace(string(state)) == "RUNNING" {
			break
		}
		require.True(t, time.Now().Before(deadline), "root's job did not start")
	}
	_, refused, err := runAs("-q", "job", rootJob)
	assert.Error(t, err)
	assert.Contains(t, refused, "permission denied")
	assert.Contains(t, refused, "another user's job")
}

// checkHybridJob checks what `ompdtool -json job` printed (out) of a job
// of the hybrid fixture against what its ranks recorded: every rank, with
// as many threads as it had; the hung rank alone in the region of 3
// threads, its thread 0 spinning in spin(); every other rank's primary
// thread waiting in MPI_Barrier, serial; no error.
func checkHybridJob(t *testing.T, out string, truths map[int]hybridTruth, hung int) {
	t.Helper()
	var got jobJSON
	require.NoError(t, json.Unmarshal([]byte(out), &got), out)
	s := got.Summary
	require.NotNil(t, s)
	assert.Equal(t, fmt.Sprintf("0-%d", len(truths)-1), s.Ranks.String())
	total := 0
	for _, tr := range truths {
		total += tr.Threads
	}
	assert.Equal(t, total, s.Threads)
	// libgomp has no breakpoints, which is no error; nothing may fail.
	assert.Empty(t, got.Errors)

	// Per rank: as many threads as it had (every class holds the same
	// number of threads of each of its ranks here).
	for r, tr := range truths {
		n := 0
		for _, g := range s.Groups {
			if inRanges(g.Ranks, r) {
				n += g.Threads / g.Ranks.Len()
			}
		}
		assert.Equal(t, tr.Threads, n, "threads of rank %d", r)
	}
	// The hung rank alone is in the region, as its threads said; thread 0
	// spins in spin().
	tr := truths[hung]
	require.Len(t, tr.Region, 3)
	inRegion, spinning := 0, 0
	for _, g := range s.Groups {
		if len(g.Regions) == 0 || g.Regions[0].Level == 0 {
			continue
		}
		assert.Equal(t, strconv.Itoa(hung), g.Ranks.String(), g.Describe())
		assert.Equal(t, tr.Region[0].Level, g.Regions[0].Level, g.Describe())
		assert.Equal(t, tr.Region[0].Team, g.Regions[0].NumThreads, g.Describe())
		assert.Contains(t, g.Regions[0].Function, "main._omp_fn.", g.Describe())
		inRegion += g.Threads
		if len(g.Stack) > 0 && g.Stack[0] == "spin" {
			spinning += g.Threads
			assert.Equal(t, "work_parallel", g.State)
		}
	}
	assert.Equal(t, len(tr.Region), inRegion)
	assert.Equal(t, 1, spinning)
	// Every other rank's primary thread waits in MPI_Barrier, serial.
	var barrier summary.Ranges
	for _, g := range s.Groups {
		if strings.Contains(strings.Join(g.Stack, " "), "PMPI_Barrier") {
			assert.Len(t, g.Regions, 1, g.Describe())
			barrier = barrier.Union(g.Ranks)
		}
	}
	var others summary.Ranges
	for r := range truths {
		if r != hung {
			others = others.Add(r)
		}
	}
	assert.Equal(t, others.String(), barrier.String())
}

// TestLaunchFailures reads the nodes srun could not start a task on.
func TestLaunchFailures(t *testing.T) {
	msgs := "srun: error: slurm_receive_msgs: [[localhost]:33913] failed: Socket timed out on send/recv operation\n" +
		"srun: error: Task launch for StepId=2.0 failed on node n4: Socket timed out on send/recv operation\n" +
		"srun: error: Task launch for StepId=2.0 failed on node n2: Communication connection failure\n" +
		"srun: error: Task launch for StepId=2.1 failed on node n4: Communication connection failure\n" +
		"srun: error: Application launch failed: Socket timed out on send/recv operation\n"
	assert.Equal(t, []string{"n4", "n2"}, launchFailures([]byte(msgs)))
	assert.Empty(t, launchFailures([]byte("srun: error: n1: task 0: Exited with exit code 1\n")))
	assert.Equal(t, []string{"--overlap", "--jobid=12", "-N3", "-n3", "--ntasks-per-node=1", "--mem-per-cpu=0", "--mpi=none",
		"--kill-on-bad-exit=0", "--job-name=x", "--exclude=n4"}, stepArgs("12", 4, []string{"n4"}, "x"))
}

// TestUnreadRanks: the ranks of a merge with no thread are those not
// read.
func TestUnreadRanks(t *testing.T) {
	var m merger
	require.NoError(t, m.addLines(strings.NewReader(
		`{"rank":3,"threads":[{"gtid":0,"state":"work_serial"}]}`+"\n"+
			`{"rank":4,"error":"process 9 is gone"}`+"\n"+
			`{"rank":5,"threads":[{"gtid":0,"state":"idle"}],"errors":["thread 7: no task"]}`+"\n"+
			`{"rank":6,"error":"not allowed"}`+"\n"), "records"))
	assert.Equal(t, "4,6", unreadRanks(m.result().Summary).String())
}

// TestJobPartial: when a node's collector fails (srun exits non-zero), the
// ranks the other nodes sent are still merged and printed, and the error
// says which answered; the ranks of the job's step that no collector
// reported are named. srun and squeue are stand-ins here (shell scripts
// writing what the real ones write); TestJobSlurm runs the real ones.
func TestJobPartial(t *testing.T) {
	dir := t.TempDir()
	rec := `{"rank":3,"host":"n2","pid":77,"runtime":"GNU libgomp","threads":[{"gtid":0,"state":"work_serial","regions":[{"level":0,"num_threads":1}]}]}`
	script := map[string]string{
		"squeue": "#!/bin/sh\nif [ \"$2\" = -s ]; then printf '12.0 4\\n12.batch 1\\n'; else echo 'RUNNING 2'; fi\n",
		"srun": "#!/bin/sh\necho '1: +" + rec[:40] + "'\necho '1: =" + rec[40:] + "'\n" +
			"echo 'srun: error: n1: task 0: Exited with exit code 1' >&2\nexit 1\n",
	}
	for name, body := range script {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(body), 0o755))
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	var out, stderr bytes.Buffer
	err := run(context.Background(), []string{"-q", "job", "12"}, &out, &stderr)
	assert.ErrorContains(t, err, "only ranks 3 answered")
	assert.Contains(t, out.String(), "1 thread of 4 ranks (0-3) in 1 class")
	assert.Contains(t, out.String(), "rank 3: 1 thread work_serial, serial")
	// The step has 4 tasks: the ranks no collector reported are named.
	assert.Contains(t, out.String(), "ranks 0-2: no collector reported it")

	// srun failing with no rank read: the hint about another user's job
	// only when that is srun's reason.
	for _, c := range []struct {
		msg  string
		hint bool
	}{
		{"srun: error: Unable to create step for job 12: Access/permission denied", true},
		{"srun: error: Unable to create step for job 12: Requested nodes are busy", false},
	} {
		srun := "#!/bin/sh\necho '" + c.msg + "' >&2\nexit 1\n"
		require.NoError(t, os.WriteFile(filepath.Join(dir, "srun"), []byte(srun), 0o755))
		out.Reset()
		stderr.Reset()
		err := run(context.Background(), []string{"-q", "job", "12"}, &out, &stderr)
		require.Error(t, err)
		if c.hint {
			assert.ErrorContains(t, err, "another user's job")
		} else {
			assert.NotContains(t, err.Error(), "another user's job")
		}
		assert.Contains(t, stderr.String(), c.msg)
	}
}

// TestJobSlurmRanks runs the hybrid job on a libgomp with debug
// information (so that every thread's state is known), rank 3 made not
// dumpable (its /proc files and ptrace refused to its user, as another
// user's process would be), and reads it as its user: collect -job J.0 in
// an overlapping step (the ranks from scontrol listpids) gives every rank,
// rank 3 with its error, and the hung rank's threads in the states they
// recorded; the ranks are left running, none stopped. Then `ompdtool job`,
// with rank 7 killed while its node's collector is about to read it: rank
// 7 is gone, rank 3 not allowed, the others merged.
func TestJobSlurmRanks(t *testing.T) {
	env := slurmCluster(t)
	h := newHybridUser(t, env)
	// The libgomp of mpicc's gcc, built with debug information, where the
	// user can load it.
	major, err := exec.Command(fixtures.GCC, "-dumpversion").Output()
	require.NoError(t, err)
	version := ""
	for _, v := range fixtures.GompVersions {
		if strings.HasPrefix(v, strings.TrimSpace(string(major))+".") {
			version = v
		}
	}
	if version == "" {
		fixtures.Unavailable(t, "no libgomp build of gcc %s", strings.TrimSpace(string(major)))
	}
	gomp := fixtures.GompRuntime(t, version)
	lib := filepath.Join(h.dir, "lib")
	require.NoError(t, os.Mkdir(lib, 0o755))
	b, err := os.ReadFile(gomp.LibOMP)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(lib, "libgomp.so.1"), b, 0o755))

	const ranks, hung, nodump, killed = 8, 5, 3, 7
	job, truths := h.submit(t, ranks, fmt.Sprintf("%d 120 %d", hung, nodump), "LD_LIBRARY_PATH="+lib)
	maps, err := os.ReadFile(fmt.Sprintf("/proc/%d/maps", truths[0].PID))
	require.NoError(t, err)
	require.Contains(t, string(maps), filepath.Join(lib, "libgomp.so.1"), "the ranks run on the debug libgomp")

	// errorsOf are the errors of a merge by rank.
	errorsOf := func(res jobJSON) map[int]string {
		errs := map[int]string{}
		for _, e := range res.Errors {
			errs[e.Rank] += e.Error + "\n"
		}
		return errs
	}
	// Nothing fails but what the test makes fail.
	const failures = `trace|gone|permission|no collector|no OpenMP`

	// One collector per node, in a step of its own, the ranks from
	// scontrol listpids JOB.0 NODE.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	srun := exec.CommandContext(ctx, "srun", "--overlap", "--jobid="+job, "-N4", "-n4", "--ntasks-per-node=1",
		"--mem-per-cpu=0", "--mpi=none", "--label", h.toolExe, "collect", "-q", "-merged", "-chunk", "900", "-job", job+".0")
	srun.Env = append(h.userEnv, asTool+"=1")
	srun.SysProcAttr = h.asUser
	var srunErr bytes.Buffer
	srun.Stderr = &srunErr
	out, err := srun.Output()
	require.NoError(t, err, "%s", srunErr.String())
	var m merger
	require.NoError(t, m.addChunks(bytes.NewReader(out), "collectors"))
	res := m.result()
	assert.Equal(t, "0-7", res.Summary.Ranks.String())
	errs := errorsOf(res)
	assert.Contains(t, errs[nodump], "not allowed to trace")
	for r, tr := range truths {
		if r == nodump {
			continue
		}
		assert.NotRegexp(t, failures, errs[r], "rank %d", r)
		assert.Equal(t, tr.Threads, threadsOf(res.Summary, r), "threads of rank %d", r)
	}
	// Every thread's state is known; the hung rank's threads of its
	// region are in the states they recorded.
	want, got := map[string]int{}, map[string]int{}
	for _, th := range truths[hung].Region {
		want[th.State]++
	}
	for _, g := range res.Summary.Groups {
		assert.NotEmpty(t, g.State, g.Describe())
		if g.Ranks.String() == strconv.Itoa(hung) && len(g.Regions) > 0 && g.Regions[0].Level == 1 {
			got[g.State] += g.Threads
		}
	}
	assert.Equal(t, want, got)

	// The ranks read are left running: no thread stopped, and each
	// rank goes on using the processor (rank 5 spins, the others poll
	// in MPI_Barrier).
	for r, tr := range truths {
		assertRuns(t, tr.PID, "rank "+strconv.Itoa(r))
	}

	// `ompdtool job`, each collector reading one rank at a time; the
	// collector of rank 7's node stops itself before reading it, rank 7
	// is killed once the other collectors are done, and it goes on.
	cmd := h.command(ctx, []string{stopBefore + "=" + strconv.Itoa(killed)}, "-json", "job", "-parallel", "1", job)
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	var progress []string
	sc := bufio.NewScanner(stderr)
	for sc.Scan() {
		progress = append(progress, sc.Text())
		if !strings.Contains(sc.Text(), "stopping before rank "+strconv.Itoa(killed)) {
			continue
		}
		stopped := lastCollector(t, h.toolExe)
		require.NoError(t, syscall.Kill(truths[killed].PID, syscall.SIGKILL))
		for deadline := time.Now().Add(time.Minute); !procGone(truths[killed].PID); time.Sleep(10 * time.Millisecond) {
			require.True(t, time.Now().Before(deadline), "rank %d does not end", killed)
		}
		require.NoError(t, syscall.Kill(stopped, syscall.SIGCONT))
	}
	// It exits 1, naming the ranks it could not read.
	err = cmd.Wait()
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee, "%s", strings.Join(progress, "\n"))
	assert.Equal(t, 1, ee.ExitCode())
	assert.Contains(t, progress, "ompdtool: ranks not read: 3,7 of 8 (their errors are above)")
	var got2 jobJSON
	require.NoError(t, json.Unmarshal(stdout.Bytes(), &got2), "%s", stdout.String())
	assert.Equal(t, "0-7", got2.Summary.Ranks.String())
	errs = errorsOf(got2)
	assert.Contains(t, errs[nodump], "not allowed to trace")
	assert.Contains(t, errs[killed], "is gone")
	for r, tr := range truths {
		if r == nodump || r == killed {
			continue
		}
		assert.NotRegexp(t, failures, errs[r], "rank %d", r)
		assert.Equal(t, tr.Threads, threadsOf(got2.Summary, r), "threads of rank %d", r)
	}
}

// threadsOf is how many threads of rank r a merge has (every class holds
// the same number of threads of each of its ranks in the hybrid fixture).
func threadsOf(s *summary.Summary, r int) int {
	n := 0
	for _, g := range s.Groups {
		if inRanges(g.Ranks, r) {
			n += g.Threads / g.Ranks.Len()
		}
	}
	return n
}

// assertRuns checks that process pid is not stopped (no thread in state T
// or t) and uses the processor (its user+system time grows).
func assertRuns(t *testing.T, pid int, what string) {
	t.Helper()
	assertNotStopped(t, pid, what)
	cpu := func() int {
		st, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		require.NoError(t, err, what)
		i := bytes.LastIndexByte(st, ')')
		f := strings.Fields(string(st[i+2:]))
		utime, _ := strconv.Atoi(f[11])
		stime, _ := strconv.Atoi(f[12])
		return utime + stime
	}
	before := cpu()
	for deadline := time.Now().Add(30 * time.Second); cpu() == before; time.Sleep(20 * time.Millisecond) {
		require.True(t, time.Now().Before(deadline), "%s makes no progress", what)
	}
}

// assertNotStopped checks that no thread of process pid is stopped (state
// T) or stopped by a tracer (t).
func assertNotStopped(t *testing.T, pid int, what string) {
	t.Helper()
	tasks, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/stat", pid))
	require.NoError(t, err)
	require.NotEmpty(t, tasks, "%s: no threads", what)
	for _, f := range tasks {
		if st, err := os.ReadFile(f); err == nil {
			assert.NotContains(t, []string{"T", "t"}, procState(st), "%s: %s", what, st)
		}
	}
}

// procState is the state letter of a /proc stat line.
func procState(st []byte) string {
	i := bytes.LastIndexByte(st, ')')
	if i < 0 || i+2 >= len(st) {
		return ""
	}
	return string(st[i+2])
}

// procGone tells whether process pid has ended (gone, or a zombie).
func procGone(pid int) bool {
	st, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	return err != nil || procState(st) == "Z" || procState(st) == "X"
}

// lastCollector waits until the only collector (exe running "collect")
// left is stopped, the others done, and returns its pid.
func lastCollector(t *testing.T, exe string) int {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
		var live []int
		stopped := 0
		dirs, _ := filepath.Glob("/proc/[0-9]*")
		for _, d := range dirs {
			if p, err := os.Readlink(filepath.Join(d, "exe")); err != nil || p != exe {
				continue
			}
			cmdline, err := os.ReadFile(filepath.Join(d, "cmdline"))
			if err != nil || !bytes.Contains(cmdline, []byte("\x00collect\x00")) {
				continue
			}
			st, err := os.ReadFile(filepath.Join(d, "stat"))
			if err != nil || procState(st) == "Z" {
				continue
			}
			pid, _ := strconv.Atoi(filepath.Base(d))
			live = append(live, pid)
			if procState(st) == "T" {
				stopped = pid
			}
		}
		if len(live) == 1 && stopped != 0 {
			return stopped
		}
		require.True(t, time.Now().Before(deadline), "collectors %v: not one left stopped", live)
	}
}
