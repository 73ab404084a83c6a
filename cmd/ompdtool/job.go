package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/ompd-go/ompd/internal/summary"
)

func jobMode() mode {
	return mode{
		synopsis: "job [flags] [-sbcast] [-dot] [-depth N] JOBID",
		about: "Print the merged OpenMP view of every rank of the running Slurm job JOBID:\n" +
			"one collector per node of the job runs in an overlapping step\n" +
			"(srun --overlap --jobid=JOBID --ntasks-per-node=1), attaches briefly to the\n" +
			"node's ranks and sends their classes merged (collect -merged), merged again\n" +
			"here as they arrive (see merge); -parallel is each collector's.\n" +
			"With -sbcast the tool is first copied to each node (no shared file system).",
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
	// One task per node of the job, beside its running steps.
	step := []string{"--overlap", "--jobid=" + job, "-N" + strconv.Itoa(nodes), "-n" + strconv.Itoa(nodes),
		"--ntasks-per-node=1", "--mem-per-cpu=0", "--mpi=none", "--kill-on-bad-exit=0"}
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	if o.sbcast {
		dest := fmt.Sprintf("/tmp/ompdtool-%s", job)
		o.progressf("job: copying %s to %s on the job's nodes (sbcast)", exe, dest)
		if err := command(ctx, "sbcast", "--jobid="+job, "--force", exe, dest); err != nil {
			return err
		}
		exe = dest
		defer func() {
			// Remove the copies (with a context of its own: the
			// collection's may be done).
			rmCtx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			if err := command(rmCtx, "srun", append(step, "rm", "-f", dest)...); err != nil {
				o.progressf("job: removing the copies of the tool: %v", err)
			}
		}()
	}
	// Each node sends its ranks already merged (the merge is
	// associative), errors by rank kept. srun forwards output in
	// pieces of 1 KiB, interleaving the nodes': it comes in labelled
	// lines shorter than that.
	srunArgs := append(append([]string(nil), step...), "--label", exe, "collect", "-merged", "-chunk", "900",
		"-parallel", strconv.Itoa(o.parallel), "-job", job)
	if o.quiet {
		srunArgs = append(srunArgs, "-q")
	}
	for _, d := range o.debugDirs {
		srunArgs = append(srunArgs, "-debug-dir", d)
	}
	o.progressf("job: srun %s", strings.Join(srunArgs, " "))
	cmd := exec.CommandContext(ctx, "srun", srunArgs...)
	// srun's own messages (and the collectors' progress) go on to
	// stderr; their end is kept to tell why srun failed.
	srunErr := &tailWriter{max: 16 << 10}
	cmd.Stderr = io.MultiWriter(o.stderr, srunErr)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("srun: %w", err)
	}
	m := merger{depth: o.depth}
	lerr := m.addChunks(stdout, "collectors' output")
	if lerr != nil {
		_, _ = io.Copy(io.Discard, stdout)
	}
	werr := cmd.Wait()
	if lerr != nil {
		return lerr
	}
	res := m.result()
	answered := res.Summary.Ranks
	var missing summary.Ranges
	for _, r := range expect {
		for n := r.First; n <= r.Last; n++ {
			if !inRanges(res.Summary.Ranks, n) {
				missing = missing.Add(n)
				res.Errors = append(res.Errors, rankError{Rank: n, Error: "no collector reported it (its node's collector failed, or did not find it)"})
			}
		}
	}
	if len(missing) > 0 {
		res.Summary.Ranks = res.Summary.Ranks.Union(missing)
		sort.SliceStable(res.Errors, func(i, j int) bool { return res.Errors[i].Rank < res.Errors[j].Rank })
	}
	if werr != nil && answered.Len() == 0 {
		if bytes.Contains(srunErr.b, []byte("Access/permission denied")) {
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
	return nil
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
