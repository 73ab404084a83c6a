package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/ompd-go/ompd/internal/summary"
)

func jobMode() mode {
	return mode{
		synopsis: "job [flags] [-sbcast] [-dot] [-depth N] JOBID",
		about: "Print the merged OpenMP view of every rank of the running Slurm job JOBID:\n" +
			"one collector per node of the job runs in an overlapping step\n" +
			"(srun --overlap --jobid=JOBID --ntasks-per-node=1), stops briefly the\n" +
			"node's ranks and sends their classes merged (collect -merged), merged again\n" +
			"here as they arrive (see merge); -parallel is each collector's.\n" +
			"With -sbcast the tool is first copied to each node (no shared file system),\n" +
			"private to its owner. Exits 1 naming the ranks that could not be read;\n" +
			"on Ctrl-C, asks the collectors to let their ranks go and waits for them.",
		flags: flagsCommon | flagsJob,
		run:   runJob,
	}
}

func runJob(ctx context.Context, o *options, args []string, out io.Writer) error {
	if len(args) != 1 {
		return usagef("job", "want one job id, got %d arguments", len(args))
	}
	job := args[0]
	if n, err := strconv.Atoi(job); err != nil || n <= 0 {
		return usagef("job", "bad job id %q", job)
	}
	state, nodes, err := jobNodes(ctx, job)
	if err != nil {
		return err
	}
	if state != "RUNNING" {
		return fmt.Errorf("job %s is %s, not RUNNING", job, state)
	}
	// The ranks to expect: the tasks of the job's step, when it has
	// one (steps started later, and the batch script, are not ranks).
	expect, err := jobRanks(ctx, job)
	if err != nil {
		o.progressf("job: %v: ranks no collector reports are not named", err)
	}
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	if o.sbcast {
		dest, rm, err := o.broadcast(ctx, job, exe, stepArgs(job, nodes, nil, "ompdtool-sbcast-"+randomHex()))
		if err != nil {
			return err
		}
		defer rm()
		exe = dest
	}
	// A node whose slurmd does not answer makes srun abort the whole
	// step, the other nodes' collectors with it: read again without
	// such nodes, a few times at most.
	var excluded []string
	var st stepResult
	for attempt := 0; ; attempt++ {
		st, err = o.collectStep(ctx, job, nodes, excluded, exe)
		if err != nil {
			return err
		}
		var failed []string
		for _, n := range launchFailures(st.srunMsgs) {
			if !slices.Contains(excluded, n) {
				failed = append(failed, n)
			}
		}
		if st.werr == nil || len(failed) == 0 || attempt == maxRelaunch || len(excluded)+len(failed) >= nodes {
			break
		}
		excluded = append(excluded, failed...)
		o.progressf("job: the collectors could not start on node %s: reading the job's other nodes again without it", strings.Join(failed, ","))
	}
	res := st.merged.result()
	answered := res.Summary.Ranks
	why := "its node's collector failed, or did not find it"
	if len(excluded) > 0 {
		why = "its node's collector failed, or did not find it; no collector could start on node " + strings.Join(excluded, ",")
	}
	var missing summary.Ranges
	for _, r := range expect {
		for n := r.First; n <= r.Last; n++ {
			if !inRanges(res.Summary.Ranks, n) {
				missing = missing.Add(n)
				res.Errors = append(res.Errors, rankError{Rank: n, Error: "no collector reported it (" + why + ")"})
			}
		}
	}
	if len(missing) > 0 {
		res.Summary.Ranks = res.Summary.Ranks.Union(missing)
		sort.SliceStable(res.Errors, func(i, j int) bool { return res.Errors[i].Rank < res.Errors[j].Rank })
	}
	werr := st.werr
	if werr != nil && answered.Len() == 0 {
		if bytes.Contains(st.srunMsgs, []byte("Access/permission denied")) {
			return fmt.Errorf("srun of the collectors: %w (srun's message is above; Slurm refuses a step in another user's job)", werr)
		}
		return fmt.Errorf("srun of the collectors: %w (srun's message is above)", werr)
	}
	if err := o.printMerged(out, res); err != nil {
		return err
	}
	if werr != nil {
		// What the nodes that answered sent is printed; say the rest
		// is missing.
		return fmt.Errorf("srun of the collectors: %w (only ranks %s answered)", werr, answered)
	}
	if err := st.merged.badErr(); err != nil {
		return fmt.Errorf("collectors' output: %w", err)
	}
	if unread := unreadRanks(res.Summary); len(unread) > 0 {
		return fmt.Errorf("%w: %s of %d (their errors are above)", errRanksUnread, unread, res.Summary.Ranks.Len())
	}
	return nil
}

// maxRelaunch bounds how many times the collectors are started again
// without the nodes where they could not start.
const maxRelaunch = 2

// stepArgs are srun's arguments for a step of one task on each node of
// job (nodes of them) but those excluded, beside its running steps, named
// name.
func stepArgs(job string, nodes int, excluded []string, name string) []string {
	n := strconv.Itoa(nodes - len(excluded))
	args := []string{"--overlap", "--jobid=" + job, "-N" + n, "-n" + n,
		"--ntasks-per-node=1", "--mem-per-cpu=0", "--mpi=none", "--kill-on-bad-exit=0", "--job-name=" + name}
	if len(excluded) > 0 {
		args = append(args, "--exclude="+strings.Join(excluded, ","))
	}
	return args
}

// stepResult is what one step of collectors gave.
type stepResult struct {
	merged   *merger
	werr     error  // srun's failure
	srunMsgs []byte // the end of srun's standard error
}

// collectStep runs a collector on each node of job (nodes of them) but
// those excluded, in a step of its own, and merges what they send as it
// comes. On an interruption (ctx done) it asks them to stop (see
// stopCollectors) and returns ctx's error.
func (o *options) collectStep(ctx context.Context, job string, nodes int, excluded []string, exe string) (stepResult, error) {
	// Under a step name of its own, to find it, to ask its tasks to
	// stop.
	stepName := "ompdtool-collect-" + randomHex()
	// Each node sends its ranks already merged (the merge is
	// associative), errors by rank kept. srun forwards output in
	// pieces of 1 KiB, interleaving the nodes': it comes in labelled
	// lines shorter than that.
	srunArgs := append(stepArgs(job, nodes, excluded, stepName), "--label", exe, "collect", "-merged", "-chunk", "900",
		"-parallel", strconv.Itoa(o.parallel), "-job", job)
	if o.quiet {
		srunArgs = append(srunArgs, "-q")
	}
	for _, d := range o.debugDirs {
		srunArgs = append(srunArgs, "-debug-dir", d)
	}
	o.progressf("job: srun %s", strings.Join(srunArgs, " "))
	cmd := exec.Command("srun", srunArgs...)
	// srun in a process group of its own: a Ctrl-C at the terminal
	// reaches this tool alone, which asks the collectors to stop (see
	// stopCollectors); srun gets SIGTERM if this tool dies.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	// srun's own messages (and the collectors' progress) go on to
	// stderr; their end is kept to tell why srun failed.
	srunErr := &tailWriter{max: 16 << 10}
	cmd.Stderr = io.MultiWriter(o.stderr, srunErr)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return stepResult{}, err
	}
	if err := cmd.Start(); err != nil {
		return stepResult{}, fmt.Errorf("srun: %w", err)
	}
	srunDone := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		select {
		case <-srunDone:
		case <-ctx.Done():
			o.stopCollectors(job, stepName, cmd.Process, srunDone)
		}
	}()
	m := &merger{depth: o.depth}
	lerr := m.addChunks(stdout, "line")
	if lerr != nil {
		_, _ = io.Copy(io.Discard, stdout)
	}
	werr := cmd.Wait()
	close(srunDone)
	<-stopped
	if err := ctx.Err(); err != nil {
		return stepResult{}, err
	}
	if lerr != nil {
		return stepResult{}, lerr
	}
	return stepResult{merged: m, werr: werr, srunMsgs: srunErr.b}, nil
}

// launchFailures are the nodes where srun could not start a task, as its
// messages say.
func launchFailures(msgs []byte) []string {
	var nodes []string
	for _, m := range launchFailed.FindAllSubmatch(msgs, -1) {
		if n := string(m[1]); !slices.Contains(nodes, n) {
			nodes = append(nodes, n)
		}
	}
	return nodes
}

var launchFailed = regexp.MustCompile(`Task launch for StepId=\S+ failed on node (\S+):`)

// errRanksUnread reports ranks of a job that could not be read.
var errRanksUnread = errors.New("ranks not read")

// unreadRanks are the ranks of s that have no thread: those that could
// not be read (a rank read has at least one).
func unreadRanks(s *summary.Summary) summary.Ranges {
	var read summary.Ranges
	for _, g := range s.Groups {
		read = read.Union(g.Ranks)
	}
	return s.Ranks.Minus(read)
}

// Bounds of the stop of the collectors on an interruption.
var (
	// collectorsGrace is how long the collectors have to let their
	// ranks go and end, once asked.
	collectorsGrace = 30 * time.Second
	// srunGrace is how long srun has to end once told to.
	srunGrace = 10 * time.Second
)

// stopCollectors asks the collectors' step (named stepName) to stop, as
// the work was interrupted: SIGTERM to its tasks (scancel --signal, which
// leaves the step to end by itself), so that each collector lets its
// ranks go before it exits; srun then ends. Signalling srun instead would
// make Slurm kill the tasks at once. If the step cannot be found, or does
// not end in time, srun is told to end it (SIGTERM), and at last killed.
// A collector killed while it reads leaves its rank running anyway (see
// package seize); this is the orderly way.
func (o *options) stopCollectors(job, stepName string, srun *os.Process, srunDone <-chan struct{}) {
	o.progressf("job: interrupted: asking the collectors to let their ranks go")
	ctx, cancel := context.WithTimeout(context.Background(), srunGrace)
	id, err := stepID(ctx, job, stepName)
	if err == nil {
		err = command(ctx, "scancel", "--signal=TERM", id)
	}
	cancel()
	if err != nil {
		o.progressf("job: %v; ending srun", err)
		_ = srun.Signal(syscall.SIGTERM)
	}
	select {
	case <-srunDone:
		return
	case <-time.After(collectorsGrace):
		o.progressf("job: the collectors did not end within %v; ending srun", collectorsGrace)
		_ = srun.Signal(syscall.SIGTERM)
	}
	select {
	case <-srunDone:
	case <-time.After(srunGrace):
		_ = srun.Kill()
	}
}

// stepID finds the id (JOB.STEP) of the step of job named name.
func stepID(ctx context.Context, job, name string) (string, error) {
	for {
		out, err := exec.CommandContext(ctx, "squeue", "-h", "-s", "-j", job, "-o", "%i %j").Output()
		if err == nil {
			sc := bufio.NewScanner(bytes.NewReader(out))
			for sc.Scan() {
				if f := strings.Fields(sc.Text()); len(f) == 2 && f[1] == name {
					return f[0], nil
				}
			}
		}
		select {
		case <-ctx.Done():
			return "", fmt.Errorf("the collectors' step (%s) of job %s not found: %w", name, job, errors.Join(err, ctx.Err()))
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// broadcast copies the tool to the job's nodes (sbcast), to a file only
// its owner can read, write and run, under a name no one can foresee; rm
// removes the copies.
func (o *options) broadcast(ctx context.Context, job, exe string, step []string) (dest string, rm func(), err error) {
	// sbcast gives the copies the mode of the file it sends: send a
	// private copy.
	dir, err := os.MkdirTemp("", "ompdtool-sbcast-")
	if err != nil {
		return "", nil, err
	}
	defer os.RemoveAll(dir)
	src := filepath.Join(dir, "ompdtool")
	if err := copyFile(src, exe, 0o700); err != nil {
		return "", nil, err
	}
	dest = filepath.Join(os.TempDir(), "ompdtool-"+job+"-"+randomHex())
	o.progressf("job: copying %s to %s on the job's nodes (sbcast)", exe, dest)
	// --force: the nodes may share the directory (a file system
	// shared by all, or several nodes on one machine).
	if err := command(ctx, "sbcast", "--jobid="+job, "--force", src, dest); err != nil {
		return "", nil, err
	}
	return dest, func() {
		// With a context of its own: the collection's may be done.
		rmCtx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := command(rmCtx, "srun", append(step, "rm", "-f", dest)...); err != nil {
			o.progressf("job: removing the copies of the tool: %v", err)
		}
	}, nil
}

// copyFile copies src to a new file dst of mode perm.
func copyFile(dst, src string, perm os.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// randomHex is 16 random hexadecimal digits.
func randomHex() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// tailWriter keeps the last max bytes written to it.
type tailWriter struct {
	b   []byte
	max int
}

func (w *tailWriter) Write(p []byte) (int, error) {
	w.b = append(w.b, p...)
	if len(w.b) > w.max {
		w.b = append(w.b[:0], w.b[len(w.b)-w.max:]...)
	}
	return len(p), nil
}

// jobNodes asks squeue for a job's state and number of nodes.
func jobNodes(ctx context.Context, job string) (state string, nodes int, err error) {
	var outb bytes.Buffer
	cmd := exec.CommandContext(ctx, "squeue", "-h", "-j", job, "-o", "%T %D")
	cmd.Stdout = &outb
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return "", 0, fmt.Errorf("squeue -j %s: %w: %s", job, err, strings.TrimSpace(stderr.String()))
	}
	sc := bufio.NewScanner(&outb)
	if !sc.Scan() {
		return "", 0, fmt.Errorf("squeue -j %s: no such job", job)
	}
	f := strings.Fields(sc.Text())
	if len(f) != 2 {
		return "", 0, fmt.Errorf("squeue -j %s: unexpected answer %q", job, sc.Text())
	}
	n, err := strconv.Atoi(f[1])
	if err != nil || n <= 0 {
		return "", 0, fmt.Errorf("squeue -j %s: unexpected node count %q", job, f[1])
	}
	return f[0], n, nil
}

// inRanges tells whether n is in r.
func inRanges(r summary.Ranges, n int) bool {
	i := sort.Search(len(r), func(i int) bool { return r[i].Last >= n })
	return i < len(r) && r[i].First <= n
}

// jobRanks asks squeue for the ranks of a job: those of its one numbered
// step (0-N for a step of N+1 tasks), none if it has several or none.
func jobRanks(ctx context.Context, job string) (summary.Ranges, error) {
	var outb, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, "squeue", "-h", "-s", "-j", job, "-o", "%i %A")
	cmd.Stdout = &outb
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("squeue -s -j %s: %w: %s", job, err, strings.TrimSpace(stderr.String()))
	}
	var ranks summary.Ranges
	steps := 0
	sc := bufio.NewScanner(&outb)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 2 {
			return nil, fmt.Errorf("squeue -s -j %s: unexpected answer %q", job, sc.Text())
		}
		j, step, _ := strings.Cut(f[0], ".")
		if j != job {
			continue
		}
		if _, err := strconv.Atoi(step); err != nil {
			continue // batch, extern, a heterogeneous step's part
		}
		n, err := strconv.Atoi(f[1])
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("squeue -s -j %s: unexpected task count %q", job, f[1])
		}
		steps++
		ranks = summary.Ranges{{First: 0, Last: n - 1}}
	}
	if steps != 1 {
		return nil, nil
	}
	return ranks, sc.Err()
}

// command runs a command, its output in the error if it fails.
func command(ctx context.Context, name string, args ...string) error {
	out, err := exec.CommandContext(ctx, name, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}
