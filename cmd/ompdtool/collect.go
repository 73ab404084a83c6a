package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/ompd-go/ompd/internal/summary"
	"github.com/ompd-go/ompd/target/delve"
)

func collectMode() mode {
	return mode{
		synopsis: "collect [flags] [-job JOBID[.STEP]] [-node NAME] [PID...]",
		about: "Attach briefly to each MPI rank of a job on this node, take its OpenMP state\n" +
			"and stacks, detach (leaving it running as it was) and write one JSON line per\n" +
			"rank (rank, host, pid, runtime, every thread's state, regions, task, frames).\n" +
			"The processes are the PIDs given, or those `scontrol listpids JOBID.STEP NODE`\n" +
			"lists, or (-job JOBID) every process of this node whose environment names the\n" +
			"job and a rank (SLURM_PROCID; PMIX_RANK, OMPI_COMM_WORLD_RANK, PMI_RANK outside\n" +
			"Slurm) and that has an OpenMP runtime loaded; with -job JOBID, every task\n" +
			"`scontrol listpids JOBID NODE` lists that the scan misses (another user's,\n" +
			"gone) is reported too. A rank that cannot be read gets a line with its\n" +
			"error; the others are still read. -merged writes one line of\n" +
			"already-merged classes instead, for `ompdtool merge` to merge again.",
		flags: flagsCommon | flagsCollect,
		live:  true,
		run:   runCollect,
	}
}

// rankVars are the environment variables that give a process's MPI rank,
// the most specific first.
var rankVars = []string{"SLURM_PROCID", "PMIX_RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK"}

// beforeRead, when set (by a test), is called before each rank is read,
// once the ranks read before it (with -parallel 1, all of them) are done.
var beforeRead func(rankProc)

// rankProc is a process of a job to read.
type rankProc struct {
	pid  int
	rank int
	host string
	err  string // why it is not read, if known before
}

func runCollect(ctx context.Context, o *options, args []string, out io.Writer) error {
	o.bt = true // the stacks are part of every thread's class
	procs, err := o.findProcs(ctx, args)
	if err != nil {
		return err
	}
	if len(procs) == 0 {
		o.progressf("collect: no process of the job on this node")
	}
	if o.chunk < 0 || (o.chunk > 0 && o.chunk < 16) {
		return usagef("collect", "-chunk %d: want 0 or at least 16 bytes", o.chunk)
	}
	if o.chunk > 0 {
		cw := &chunkWriter{w: out, size: o.chunk}
		out = cw
	}
	if o.parallel < 1 {
		return usagef("collect", "-parallel %d: want 1 or more", o.parallel)
	}
	enc := json.NewEncoder(out)
	var sums []*summary.Summary
	var errs []rankError
	// Up to o.parallel ranks are read at once; each record is written
	// as soon as it is read.
	recs := make(chan summary.Record)
	sem := make(chan struct{}, o.parallel)
	go func() {
		var wg sync.WaitGroup
		for _, p := range procs {
			if ctx.Err() != nil {
				break
			}
			sem <- struct{}{}
			if beforeRead != nil {
				beforeRead(p)
			}
			o.progressf("collect: reading rank %d (process %d)", p.rank, p.pid)
			wg.Add(1)
			go func(p rankProc) {
				defer wg.Done()
				recs <- o.collectOne(ctx, p)
				<-sem
			}(p)
		}
		wg.Wait()
		close(recs)
	}()
	var encErr error
	for rec := range recs {
		if encErr != nil {
			continue // drain
		}
		if o.merged {
			sums = append(sums, rec.Summary())
			errs = append(errs, recordErrors(rec)...)
			continue
		}
		encErr = enc.Encode(rec)
	}
	if encErr != nil {
		return encErr
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if o.merged {
		return enc.Encode(jobJSON{Summary: summary.Merge(sums...), Errors: errs})
	}
	return nil
}

// collectOne attaches to one process, reads it and detaches.
func (o *options) collectOne(ctx context.Context, p rankProc) summary.Record {
	rec := summary.Record{Rank: p.rank, Host: p.host, PID: p.pid}
	if p.err != "" {
		rec.Error = p.err
		return rec
	}
	proc, err := delve.Attach(ctx, p.pid, o.liveOptions(ctx)...)
	if err != nil {
		rec.Error = attachError(p.pid, err).Error()
		return rec
	}
	s, _, err := o.read(ctx, proc, p.rank)
	if derr := proc.Detach(false); err == nil && derr != nil {
		err = fmt.Errorf("detaching: %w", derr)
	}
	if err != nil {
		rec.Error = attachError(p.pid, err).Error()
		return rec
	}
	return summary.NewRecord(p.rank, p.host, p.pid, s, o.summaryOptions(proc))
}

// recordErrors are the errors of a record, for a merged summary.
func recordErrors(r summary.Record) []rankError {
	var errs []rankError
	if r.Error != "" {
		errs = append(errs, rankError{Rank: r.Rank, Error: r.Error})
	}
	for _, e := range r.Errors {
		errs = append(errs, rankError{Rank: r.Rank, Error: e})
	}
	return errs
}

// attachError says why process pid could not be read, in the words of the
// usual causes: it is gone, or ptrace is not allowed.
func attachError(pid int, err error) error {
	return attachErrorYama(pid, err, "/proc/sys/kernel/yama/ptrace_scope")
}

// attachErrorYama is attachError with Yama's ptrace_scope file at yama.
func attachErrorYama(pid int, err error, yama string) error {
	if _, serr := os.Stat(fmt.Sprintf("/proc/%d", pid)); errors.Is(serr, os.ErrNotExist) || errors.Is(err, delve.ErrExited) || errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("process %d is gone (it ended or was killed): %w", pid, err)
	}
	// An exited process not reaped yet refuses ptrace with EPERM too.
	if state, _, ok := procStat(fmt.Sprintf("/proc/%d", pid)); ok && (state == 'Z' || state == 'X') {
		return fmt.Errorf("process %d is gone (it exited; not reaped yet): %w", pid, err)
	}
	if errors.Is(err, syscall.EPERM) || errors.Is(err, os.ErrPermission) || strings.Contains(err.Error(), "operation not permitted") {
		msg := fmt.Sprintf("process %d: not allowed to trace it (ptrace: permission denied; is it another user's?)", pid)
		if scope, rerr := os.ReadFile(yama); rerr == nil {
			if s := strings.TrimSpace(string(scope)); s != "0" {
				msg += fmt.Sprintf("; Yama ptrace_scope is %s (%s): only a parent may trace its children, or root/CAP_SYS_PTRACE", s, yama)
			}
		}
		return fmt.Errorf("%s: %w", msg, err)
	}
	return fmt.Errorf("process %d: %w", pid, err)
}

// findProcs finds the processes to read: the PIDs given, or the job's on
// this node.
func (o *options) findProcs(ctx context.Context, pids []string) ([]rankProc, error) {
	host := o.node
	if host == "" {
		host = os.Getenv("SLURMD_NODENAME")
	}
	if host == "" {
		host, _ = os.Hostname()
	}
	if len(pids) > 0 {
		if o.job != "" {
			return nil, usagef("collect", "give -job or process ids, not both")
		}
		var procs []rankProc
		named := map[int]bool{} // ranks that rank variables give
		var unnamed []int       // positions of processes without one
		for i, a := range pids {
			pid, err := strconv.Atoi(a)
			if err != nil || pid <= 0 {
				return nil, usagef("collect", "bad process id %q", a)
			}
			p := rankProc{pid: pid, rank: -1, host: host}
			if env, err := procEnv(pid); err == nil {
				if r, ok := envRank(env); ok {
					p.rank = r
					named[r] = true
				}
				if h := env["SLURMD_NODENAME"]; h != "" {
					p.host = h
				}
			}
			if p.rank < 0 {
				unnamed = append(unnamed, i)
			}
			procs = append(procs, p)
		}
		// A process without a rank variable is its position in the
		// list, unless a rank variable names that rank: then the next
		// number no process has.
		next := 0
		for r := range named {
			next = max(next, r+1)
		}
		next = max(next, len(pids))
		for _, i := range unnamed {
			if named[i] {
				procs[i].rank = next
				next++
			} else {
				procs[i].rank = i
			}
			named[procs[i].rank] = true
		}
		return procs, nil
	}
	if o.job == "" {
		return nil, usagef("collect", "give -job JOBID[.STEP] or process ids")
	}
	job, step, hasStep := strings.Cut(o.job, ".")
	if _, err := strconv.Atoi(job); err != nil {
		return nil, usagef("collect", "bad job id %q", o.job)
	}
	if hasStep {
		if o.node == "" && os.Getenv("SLURMD_NODENAME") == "" {
			return nil, usagef("collect", "-job JOBID.STEP needs -node NAME (or SLURMD_NODENAME)")
		}
		tasks, err := listTasks(ctx, job+"."+step, host)
		if err != nil {
			return nil, err
		}
		return stepRanks(tasks, host), nil
	}
	ownStep := os.Getenv("SLURM_STEP_ID")
	// The tasks Slurm started on this node, listed before the scan so
	// that a task the scan misses was there to find.
	tasks, lerr := listTasks(ctx, job, host)
	if errors.Is(lerr, errNoSteps) {
		tasks, lerr = nil, nil
	}
	procs, err := scanProcs("/proc", job, host, ownStep, os.Getpid())
	if err != nil {
		return nil, err
	}
	if lerr != nil {
		o.progressf("collect: %v: ranks whose processes this user cannot read are not reported", lerr)
		return procs, nil
	}
	return missingTasks("/proc", host, procs, tasks, ownStep), nil
}

// slurmTask is a process of a job step on a node, as `scontrol listpids`
// lists it: a task (rank >= 0) or a child of one (rank -1).
type slurmTask struct {
	pid  int
	step string
	rank int
}

// errNoSteps reports that scontrol listpids found no step of the job on
// the node.
var errNoSteps = errors.New("no steps of the job on the node")

// listTasks asks `scontrol listpids SPEC NODE` for the processes of a job
// on a node (SPEC JOB: every step's; JOB.STEP: one step's). An error
// matches errNoSteps when scontrol says there are none.
func listTasks(ctx context.Context, spec, host string) ([]slurmTask, error) {
	cmd := exec.CommandContext(ctx, "scontrol", "listpids", spec, host)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	outb, err := cmd.Output()
	if err != nil {
		said := strings.TrimSpace(stderr.String() + string(outb))
		if strings.Contains(said, "There are no steps") {
			err = fmt.Errorf("%w (%w)", err, errNoSteps)
		}
		return nil, fmt.Errorf("scontrol listpids %s %s: %w: %s", spec, host, err, said)
	}
	return parseTasks(outb)
}

// parseTasks reads `scontrol listpids` output: PID JOBID STEPID LOCALID
// GLOBALID, the global id being the rank, "-" for a task's child.
func parseTasks(b []byte) ([]slurmTask, error) {
	var tasks []slurmTask
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 5 || f[0] == "PID" {
			continue
		}
		t := slurmTask{step: f[2], rank: -1}
		var err error
		if t.pid, err = strconv.Atoi(f[0]); err != nil {
			return nil, fmt.Errorf("scontrol listpids: unexpected line %q", sc.Text())
		}
		if f[3] != "-" && f[4] != "-" {
			if t.rank, err = strconv.Atoi(f[4]); err != nil || t.rank < 0 {
				return nil, fmt.Errorf("scontrol listpids: unexpected line %q", sc.Text())
			}
		}
		tasks = append(tasks, t)
	}
	return tasks, sc.Err()
}

// missingTasks adds to procs, found by scanning procDir, the tasks of the
// job's steps (numbered ones other than ownStep) on this node that the scan
// did not find, so that no rank goes unreported: a task whose process (or
// a child of it) cannot be read (another user's, or made not dumpable),
// or that is gone, is read anyway, which says why it fails; a task of a
// step whose other tasks here have OpenMP gets an error saying it has
// none. The tasks of steps without OpenMP on this node (the batch
// script, a step of tools) are left out.
func missingTasks(procDir, host string, procs []rankProc, tasks []slurmTask, ownStep string) []rankProc {
	found := map[int]bool{} // ranks
	pids := map[int]bool{}
	for _, p := range procs {
		found[p.rank] = true
		pids[p.pid] = true
	}
	ompSteps := map[string]bool{} // steps with a rank found here
	byStep := map[string][]slurmTask{}
	for _, t := range tasks {
		if _, err := strconv.Atoi(t.step); err != nil || t.step == ownStep {
			continue // batch, extern, the collector's own step
		}
		byStep[t.step] = append(byStep[t.step], t)
		if pids[t.pid] {
			ompSteps[t.step] = true
		}
	}
	steps := make([]string, 0, len(byStep))
	for s := range byStep {
		steps = append(steps, s)
	}
	sort.Strings(steps)
	for _, step := range steps {
		ts := byStep[step]
		for _, t := range ts {
			if t.rank < 0 || found[t.rank] {
				continue
			}
			// The task and its children.
			cands := []int{t.pid}
			for _, c := range ts {
				if c.rank < 0 && descends(procDir, c.pid, t.pid) {
					cands = append(cands, c.pid)
				}
			}
			var unreadable, gone, omp []int
			for _, pid := range cands {
				dir := filepath.Join(procDir, strconv.Itoa(pid))
				_, err := readEnv(filepath.Join(dir, "environ"))
				switch {
				case errors.Is(err, os.ErrPermission):
					unreadable = append(unreadable, pid)
				case err != nil || exited(dir):
					gone = append(gone, pid)
				default:
					if maps, err := os.ReadFile(filepath.Join(dir, "maps")); err == nil && hasOpenMP(maps) {
						omp = append(omp, pid)
					}
				}
			}
			p := rankProc{rank: t.rank, host: host}
			switch {
			case len(omp) > 0:
				p.pid = omp[len(omp)-1]
			case len(unreadable) > 0:
				p.pid = unreadable[len(unreadable)-1]
			case len(gone) == len(cands) && ompSteps[step]:
				p.pid = t.pid
			case ompSteps[step]:
				p.pid = t.pid
				p.err = fmt.Sprintf("process %d (task of step %s): no OpenMP runtime loaded in it or its children", t.pid, step)
			default:
				continue
			}
			found[t.rank] = true
			procs = append(procs, p)
		}
	}
	sort.Slice(procs, func(i, j int) bool { return procs[i].rank < procs[j].rank })
	return procs
}

// procStat reads the state letter and the parent's pid from the stat file
// of the /proc directory dir; ok is false when it cannot be read.
func procStat(dir string) (state byte, ppid int, ok bool) {
	st, err := os.ReadFile(filepath.Join(dir, "stat"))
	if err != nil {
		return 0, 0, false
	}
	// pid (comm) state ppid ...: comm may hold spaces and parentheses.
	i := bytes.LastIndexByte(st, ')')
	if i < 0 {
		return 0, 0, false
	}
	f := strings.Fields(string(st[i+1:]))
	if len(f) < 2 || len(f[0]) != 1 {
		return 0, 0, false
	}
	if ppid, err = strconv.Atoi(f[1]); err != nil {
		return 0, 0, false
	}
	return f[0][0], ppid, true
}

// exited tells whether the process of /proc directory dir has exited
// (a zombie not reaped yet), or is gone.
func exited(dir string) bool {
	state, _, ok := procStat(dir)
	return !ok || state == 'Z' || state == 'X'
}

// descends tells whether process pid under procDir is a descendant of
// process anc.
func descends(procDir string, pid, anc int) bool {
	for i := 0; i < 64 && pid > 1; i++ {
		_, ppid, ok := procStat(filepath.Join(procDir, strconv.Itoa(pid)))
		if !ok {
			return false
		}
		if pid = ppid; pid == anc {
			return true
		}
	}
	return false
}

// stepRanks returns the tasks of tasks (not their children) as the ranks
// on node host.
func stepRanks(tasks []slurmTask, host string) []rankProc {
	var procs []rankProc
	for _, t := range tasks {
		if t.rank >= 0 {
			procs = append(procs, rankProc{pid: t.pid, rank: t.rank, host: host})
		}
	}
	return procs
}

// scanProcs finds the ranks of job on node host among the processes under
// procDir: a rank variable and the job's id in the environment, an OpenMP
// runtime in the mappings, not of step ownStep (the collector's own) nor
// process self. Where several processes claim a rank (a wrapper and its
// child), the last started one that loaded OpenMP wins.
func scanProcs(procDir, job, host, ownStep string, self int) ([]rankProc, error) {
	ents, err := os.ReadDir(procDir)
	if err != nil {
		return nil, err
	}
	byRank := map[int]rankProc{}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		env, err := readEnv(filepath.Join(procDir, e.Name(), "environ"))
		if err != nil {
			continue // another user's, or gone: missingTasks reports it
		}
		if env["SLURM_JOB_ID"] != job && env["SLURM_JOBID"] != job {
			continue
		}
		if h := env["SLURMD_NODENAME"]; h != "" && host != "" && h != host {
			continue
		}
		if ownStep != "" && env["SLURM_STEP_ID"] == ownStep {
			continue
		}
		rank, ok := envRank(env)
		if !ok {
			continue
		}
		maps, err := os.ReadFile(filepath.Join(procDir, e.Name(), "maps"))
		if err != nil || !hasOpenMP(maps) {
			continue
		}
		if old, ok := byRank[rank]; !ok || pid > old.pid {
			byRank[rank] = rankProc{pid: pid, rank: rank, host: host}
		}
	}
	procs := make([]rankProc, 0, len(byRank))
	for _, p := range byRank {
		procs = append(procs, p)
	}
	sort.Slice(procs, func(i, j int) bool { return procs[i].rank < procs[j].rank })
	return procs, nil
}

// hasOpenMP tells whether a /proc/PID/maps lists an OpenMP runtime.
func hasOpenMP(maps []byte) bool {
	for _, lib := range []string{"/libomp.so", "/libgomp.so", "/libiomp5.so", "/libomp-"} {
		if bytes.Contains(maps, []byte(lib)) {
			return true
		}
	}
	return false
}

func procEnv(pid int) (map[string]string, error) {
	return readEnv(fmt.Sprintf("/proc/%d/environ", pid))
}

func readEnv(path string) (map[string]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	env := map[string]string{}
	for _, kv := range bytes.Split(b, []byte{0}) {
		if k, v, ok := strings.Cut(string(kv), "="); ok {
			env[k] = v
		}
	}
	return env, nil
}

// envRank is the rank an environment names, if any.
func envRank(env map[string]string) (int, bool) {
	for _, v := range rankVars {
		if s, ok := env[v]; ok {
			if r, err := strconv.Atoi(s); err == nil && r >= 0 {
				return r, true
			}
		}
	}
	return 0, false
}

// chunkWriter splits each line written to it (by one Write, as
// json.Encoder writes) into lines of at most size bytes: "+" and a piece,
// the last one "=" and a piece.
type chunkWriter struct {
	w    io.Writer
	size int
}

func (c *chunkWriter) Write(p []byte) (int, error) {
	line := bytes.TrimSuffix(p, []byte("\n"))
	var b bytes.Buffer
	n := c.size - 2
	for len(line) > n {
		b.WriteByte('+')
		b.Write(line[:n])
		b.WriteByte('\n')
		line = line[n:]
	}
	b.WriteByte('=')
	b.Write(line)
	b.WriteByte('\n')
	if _, err := c.w.Write(b.Bytes()); err != nil {
		return 0, err
	}
	return len(p), nil
}

// chunkReader joins the lines of several chunkWriters, interleaved and
// labelled by task as srun --label writes them ("3: +piece").
type chunkReader struct {
	parts map[string][]byte
}

// line takes one labelled line; it returns a whole line when one ends.
func (c *chunkReader) line(l []byte) ([]byte, bool, error) {
	label, rest, ok := bytes.Cut(l, []byte(": "))
	if !ok || len(rest) == 0 || (rest[0] != '+' && rest[0] != '=') {
		return nil, false, fmt.Errorf("not a labelled piece of a record: %.60q", l)
	}
	if c.parts == nil {
		c.parts = map[string][]byte{}
	}
	task := string(bytes.TrimSpace(label))
	c.parts[task] = append(c.parts[task], rest[1:]...)
	if rest[0] == '+' {
		return nil, false, nil
	}
	whole := c.parts[task]
	delete(c.parts, task)
	return whole, true, nil
}
