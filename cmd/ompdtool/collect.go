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

	"github.com/ompd-go/ompd/internal/procfs"
	"github.com/ompd-go/ompd/internal/seize"
	"github.com/ompd-go/ompd/internal/summary"
	"github.com/ompd-go/ompd/internal/targetopt"
)

func collectMode() mode {
	return mode{
		synopsis: "collect [flags] [-job JOBID[.STEP]] [-node NAME] [PID...]",
		about: "Stop each MPI rank of a job on this node briefly (PTRACE_SEIZE: never with a signal,\n" +
			"so a rank runs on whatever becomes of the collector), take its OpenMP state\n" +
			"and stacks, let it go and write one JSON line per rank (rank, host, pid,\n" +
			"runtime, every thread's state, regions, task, frames). The processes are the\n" +
			"PIDs given (the rank from PMIX_RANK, OMPI_COMM_WORLD_RANK, PMI_RANK or\n" +
			"SLURM_PROCID in the environment), or the job's that `scontrol listpids\n" +
			"JOBID[.STEP] NODE` lists: each task with an OpenMP runtime loaded in it or a\n" +
			"child, never a process that merely carries the job's variables. A rank\n" +
			"that cannot be read gets a line with its error; the others are still read.\n" +
			"-merged writes one line of already-merged classes instead, for\n" +
			"`ompdtool merge` to merge again.",
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

// afterAttach and beforeDetach, when set (by a test), are called with
// each rank seized and stopped, before it is read and once it is read.
var afterAttach, beforeDetach func(ctx context.Context, p rankProc)

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

// collectOne seizes one process, reads it and lets it go. The process is
// never stopped by a signal (see package seize): whatever becomes of the
// collector (killed with its step), the rank runs on.
func (o *options) collectOne(ctx context.Context, p rankProc) summary.Record {
	rec := summary.Record{Rank: p.rank, Host: p.host, PID: p.pid}
	if p.err != "" {
		rec.Error = p.err
		return rec
	}
	debug := targetopt.Debug{Debuginfod: o.debuginfod(), Ctx: ctx}
	if len(o.debugDirs) > 0 {
		debug.SetDirs(o.debugDirs...)
	}
	proc, err := seize.Attach(ctx, p.pid, debug.ObjOptions()...)
	if err != nil {
		rec.Error = attachError(p.pid, err).Error()
		return rec
	}
	if afterAttach != nil {
		afterAttach(ctx, p)
	}
	s, _, err := o.read(ctx, proc, p.rank)
	if beforeDetach != nil {
		beforeDetach(ctx, p)
	}
	derr := proc.Detach()
	switch {
	case errors.Is(derr, seize.ErrExited) && (err != nil || len(s.Errors) > 0):
		// It ended while it was read: what was read is not its state.
		err = derr
	case errors.Is(derr, seize.ErrExited):
		// It ended right after it was read whole: the snapshot stands.
		o.progressf("collect: rank %d (process %d) ended right after it was read", p.rank, p.pid)
	case err == nil && derr != nil:
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
	if errors.Is(err, seize.ErrTraced) {
		return err // it names the tracer
	}
	if _, serr := os.Stat(fmt.Sprintf("/proc/%d", pid)); errors.Is(serr, os.ErrNotExist) || errors.Is(err, seize.ErrExited) || errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("process %d is gone (it ended or was killed): %w", pid, err)
	}
	// An exited process not reaped yet refuses ptrace with EPERM too.
	if procfs.Gone(fmt.Sprintf("/proc/%d", pid)) {
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
	job, _, hasStep := strings.Cut(o.job, ".")
	if _, err := strconv.Atoi(job); err != nil {
		return nil, usagef("collect", "bad job id %q", o.job)
	}
	if hasStep && o.node == "" && os.Getenv("SLURMD_NODENAME") == "" {
		return nil, usagef("collect", "-job JOBID.STEP needs -node NAME (or SLURMD_NODENAME)")
	}
	// Slurm says which processes are the job's here: the ranks are
	// among them, whatever other processes carry in their environment.
	tasks, err := listTasks(ctx, o.job, host)
	if errors.Is(err, errNoSteps) && !hasStep {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%w: the job's processes on this node cannot be told from others", err)
	}
	ownStep := ""
	if !hasStep && os.Getenv("SLURM_JOB_ID") == job {
		ownStep = os.Getenv("SLURM_STEP_ID")
	}
	return taskRanks("/proc", host, tasks, ownStep), nil
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

// taskRanks finds the ranks among the processes of a job's steps on this
// node that scontrol listpids lists (tasks, with their rank, and their
// children), under procDir, leaving out the collector's own step
// (ownStep). Only these are ever read: a process that merely carries the
// job's variables in its environment is not the job's.
//
// A task's rank is its process, or the last started of it and its children
// that has an OpenMP runtime loaded (a wrapper's child); a child that an
// MPI launcher gave a rank (PMIX_RANK, OMPI_COMM_WORLD_RANK, PMI_RANK: one
// of the ranks an mpirun inside the job started) is that rank. A task that cannot be looked into (another
// user's, or made not dumpable), or whose processes are all gone, is read
// anyway, which says why it fails; one of a step whose other tasks here
// have OpenMP gets an error saying it has none. The steps without OpenMP
// (the batch script, a step of tools) give no rank; of the batch step,
// the processes with OpenMP and a rank variable are ranks (an mpirun
// there starts its node's ranks itself).
func taskRanks(procDir, host string, tasks []slurmTask, ownStep string) []rankProc {
	type look struct {
		unreadable, gone bool
		omp              bool
		mpiRank          int // the rank an MPI launcher gave it, -1 if none
	}
	looks := map[int]look{}
	lookAt := func(pid int) look {
		if l, ok := looks[pid]; ok {
			return l
		}
		dir := filepath.Join(procDir, strconv.Itoa(pid))
		l := look{mpiRank: -1}
		env, err := readEnv(filepath.Join(dir, "environ"))
		switch {
		case errors.Is(err, os.ErrPermission):
			l.unreadable = true
		case err != nil || procfs.Gone(dir):
			l.gone = true
		default:
			if maps, err := os.ReadFile(filepath.Join(dir, "maps")); err == nil && hasOpenMP(maps) {
				l.omp = true
			}
			if r, ok := envRank(env, rankVars[1:]...); ok {
				l.mpiRank = r
			}
		}
		looks[pid] = l
		return l
	}
	byStep := map[string][]slurmTask{}
	var steps []string
	for _, t := range tasks {
		if t.step == ownStep {
			continue
		}
		if _, ok := byStep[t.step]; !ok {
			steps = append(steps, t.step)
		}
		byStep[t.step] = append(byStep[t.step], t)
	}
	sort.Strings(steps)
	byRank := map[int]rankProc{}
	add := func(p rankProc) {
		if old, ok := byRank[p.rank]; !ok || (old.err != "" && p.err == "") || (p.err == "" && p.pid > old.pid) {
			byRank[p.rank] = p
		}
	}
	for _, step := range steps {
		ts := byStep[step]
		if _, err := strconv.Atoi(step); err != nil {
			if step != "batch" {
				continue // extern, a heterogeneous step's part
			}
			for _, t := range ts {
				if l := lookAt(t.pid); l.omp && l.mpiRank >= 0 {
					add(rankProc{pid: t.pid, rank: l.mpiRank, host: host})
				}
			}
			continue
		}
		stepOMP := false
		var pending []rankProc // tasks without OpenMP, if the step has some
		for _, t := range ts {
			if t.rank < 0 {
				continue
			}
			cands := []int{t.pid}
			for _, c := range ts {
				if c.rank < 0 && descends(procDir, c.pid, t.pid) {
					cands = append(cands, c.pid)
				}
			}
			var unreadable, gone, omp []int
			for _, pid := range cands {
				switch l := lookAt(pid); {
				case l.unreadable:
					unreadable = append(unreadable, pid)
				case l.gone:
					gone = append(gone, pid)
				case l.omp:
					omp = append(omp, pid)
				}
			}
			switch {
			case len(omp) > 0:
				stepOMP = true
				for _, pid := range omp {
					r := t.rank
					if l := lookAt(pid); pid != t.pid && l.mpiRank >= 0 {
						r = l.mpiRank
					}
					add(rankProc{pid: pid, rank: r, host: host})
				}
			case len(unreadable) > 0:
				add(rankProc{pid: unreadable[len(unreadable)-1], rank: t.rank, host: host})
			case len(gone) == len(cands):
				pending = append(pending, rankProc{pid: t.pid, rank: t.rank, host: host})
			default:
				pending = append(pending, rankProc{pid: t.pid, rank: t.rank, host: host,
					err: fmt.Sprintf("process %d (task of step %s): no OpenMP runtime loaded in it or its children", t.pid, step)})
			}
		}
		if stepOMP {
			for _, p := range pending {
				add(p)
			}
		}
	}
	procs := make([]rankProc, 0, len(byRank))
	for _, p := range byRank {
		procs = append(procs, p)
	}
	sort.Slice(procs, func(i, j int) bool { return procs[i].rank < procs[j].rank })
	return procs
}

// descends tells whether process pid under procDir is a descendant of
// process anc.
func descends(procDir string, pid, anc int) bool {
	for i := 0; i < 64 && pid > 1; i++ {
		st, ok := procfs.ReadStat(filepath.Join(procDir, strconv.Itoa(pid)))
		if !ok {
			return false
		}
		if pid = st.PPID; pid == anc {
			return true
		}
	}
	return false
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

// envRank is the rank an environment names, if any: by the first of vars
// it has (rankVars if none are given).
func envRank(env map[string]string, vars ...string) (int, bool) {
	if len(vars) == 0 {
		vars = rankVars
	}
	for _, v := range vars {
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
// labelled by task as srun --label writes them ("3: +piece"). A record
// of a task longer than max bytes is dropped.
type chunkReader struct {
	max   int
	parts map[string][]byte
	over  map[string]bool // tasks whose record is being dropped
}

// line takes one labelled line; it returns a whole line when one ends.
func (c *chunkReader) line(l []byte) ([]byte, bool, error) {
	label, rest, ok := bytes.Cut(l, []byte(": "))
	if !ok || len(rest) == 0 || (rest[0] != '+' && rest[0] != '=') {
		return nil, false, fmt.Errorf("not a labelled piece of a record: %.60q", l)
	}
	if c.parts == nil {
		c.parts, c.over = map[string][]byte{}, map[string]bool{}
	}
	task := string(bytes.TrimSpace(label))
	last := rest[0] == '='
	if c.over[task] {
		if last {
			delete(c.over, task)
		}
		return nil, false, nil
	}
	if c.max > 0 && len(c.parts[task])+len(rest)-1 > c.max {
		delete(c.parts, task)
		if !last {
			c.over[task] = true
		}
		return nil, false, fmt.Errorf("a record of task %.40q longer than %d bytes", task, c.max)
	}
	c.parts[task] = append(c.parts[task], rest[1:]...)
	if !last {
		return nil, false, nil
	}
	whole := c.parts[task]
	delete(c.parts, task)
	return whole, true, nil
}
