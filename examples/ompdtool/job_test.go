package main

import (
	"bytes"
	"context"
	"encoding/json"
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
	"github.com/ompd-go/ompd/internal/summary"
)

// asTool makes the test binary run as ompdtool (the job tests start it
// through srun, as the collector of each node).
const asTool = "OMPDTOOL_TEST_AS_TOOL"

func TestMain(m *testing.M) {
	if os.Getenv(asTool) == "1" {
		main()
	}
	os.Exit(m.Run())
}

// hybridTruth is what a rank of the hybrid fixture recorded.
type hybridTruth struct {
	Rank    int    `json:"rank"`
	PID     int    `json:"pid"`
	Node    string `json:"node"`
	Threads int    `json:"threads"`
	Region  []struct {
		Num   int `json:"num"`
		Team  int `json:"team"`
		Level int `json:"level"`
	} `json:"region"`
}

// slurmCluster starts the 4-node cluster of scripts/slurm-cluster.sh,
// installing its packages first under CI=true, and returns the
// environment its clients need; it is stopped at the end of the test.
func slurmCluster(t *testing.T) []string {
	t.Helper()
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
	fixtures.RequireTool(t, "munged", "slurmctld", "slurmd", "srun", "sbatch", "squeue", "scancel", "mpicc")
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
	// The job is a normal user's (nobody's), and so is the tool that
	// reads it, except where said: every file they use is theirs to read.
	dir, err := os.MkdirTemp("", "ompd-job-")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	require.NoError(t, os.Chmod(dir, 0o1777))
	asUser := &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	userEnv := append(env, "HOME="+dir)
	exe := filepath.Join(dir, "hybrid")
	out, err := exec.Command("mpicc", "-fopenmp", "-g", "-O0", "-o", exe, filepath.Join("testdata", "hybrid.c")).CombinedOutput()
	require.NoError(t, err, "%s", out)
	self, err := os.Executable()
	require.NoError(t, err)
	userTool := filepath.Join(dir, "ompdtool.test")
	b, err := os.ReadFile(self)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(userTool, b, 0o755))

	const ranks, hung = 8, 5
	sbatch := exec.Command("sbatch", "-N4", "-n8", "--ntasks-per-node=2", "-o", filepath.Join(dir, "job.out"),
		"--wrap", "srun --mpi=pmix "+exe+" "+dir+" 5 120")
	sbatch.Env = append(userEnv, "OMPI_MCA_btl=self,tcp", "OMP_NUM_THREADS=2")
	sbatch.SysProcAttr = asUser
	out, err = sbatch.CombinedOutput()
	require.NoError(t, err, "%s", out)
	m := regexp.MustCompile(`Submitted batch job (\d+)`).FindSubmatch(out)
	require.NotNil(t, m, "%s", out)
	job := string(m[1])
	t.Cleanup(func() { _ = exec.Command("scancel", job).Run() })

	truths := map[int]hybridTruth{}
	deadline := time.Now().Add(90 * time.Second)
	for len(truths) < ranks {
		for r := 0; r < ranks; r++ {
			b, err := os.ReadFile(filepath.Join(dir, "truth."+strconv.Itoa(r)))
			if err != nil {
				continue
			}
			var tr hybridTruth
			require.NoError(t, json.Unmarshal(b, &tr), "%s", b)
			truths[r] = tr
		}
		if time.Now().After(deadline) {
			jobOut, _ := os.ReadFile(filepath.Join(dir, "job.out"))
			t.Fatalf("only %d of %d ranks got in place; job output:\n%s", len(truths), ranks, jobOut)
		}
		time.Sleep(100 * time.Millisecond)
	}

	// runAs runs the tool as the job's user.
	runAs := func(args ...string) (string, string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, userTool, args...)
		cmd.Env = append(userEnv, asTool+"=1")
		cmd.SysProcAttr = asUser
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		return string(out), stderr.String(), err
	}
	tool := func(args ...string) string {
		out, stderr, err := runAs(args...)
		require.NoError(t, err, "ompdtool %s\n%s", strings.Join(args, " "), stderr)
		return out
	}
	var got jobJSON
	require.NoError(t, json.Unmarshal([]byte(tool("-q", "-json", "job", job)), &got))
	s := got.Summary
	require.NotNil(t, s)
	assert.Equal(t, "0-7", s.Ranks.String())
	total := 0
	for _, tr := range truths {
		total += tr.Threads
	}
	assert.Equal(t, total, s.Threads)
	for _, e := range got.Errors {
		assert.Contains(t, e.Error, "breakpoints", "rank %d", e.Rank) // libgomp has none; nothing else may fail
	}

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
		assert.Equal(t, "5", g.Ranks.String(), g.Describe())
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
	assert.Equal(t, "0-4,6-7", barrier.String())

	// The same through a copy of the tool on each node (sbcast); each
	// node sends its ranks merged.
	text, progress, err := runAs("job", "-sbcast", "-parallel", "2", job)
	require.NoError(t, err, progress)
	assert.Contains(t, progress, " collect -merged -chunk 900 -parallel 2 -job "+job)
	lines := strings.Split(text, "\n")
	require.Greater(t, len(lines), 2, text)
	_, err = os.Stat("/tmp/ompdtool-" + job)
	assert.ErrorIs(t, err, os.ErrNotExist, "the copies of the tool are removed")
	// By the stacks' prefix from _start to MPI_Barrier, every waiting
	// rank is one class.
	assert.Contains(t, tool("-q", "job", "-depth", "5", job), "ranks 0-4,6-7: 7 threads work_serial, serial; stack PMPI_Barrier < main < ")
	assert.Regexp(t, `^rank 5: 1 thread work_parallel in main\._omp_fn\.\d+( \(hybrid\.c:\d+\))?, level 1, team of 3; stack spin < `, lines[1])

	// Another user's job (root's) is refused to the user, saying why.
	sb := exec.Command("sbatch", "-N1", "-o", "/dev/null", "--wrap", "sleep 60")
	sb.Env = env
	out, err = sb.CombinedOutput()
	require.NoError(t, err, "%s", out)
	m = regexp.MustCompile(`Submitted batch job (\d+)`).FindSubmatch(out)
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
	_, stderr, err := runAs("-q", "job", rootJob)
	assert.Error(t, err)
	assert.Contains(t, stderr, "permission denied")
	assert.Contains(t, stderr, "another user's job")
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
