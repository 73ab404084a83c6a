// Package procfs reads what ompd-go needs of a live Linux process outside
// of any debugger: its memory (process_vm_readv, which needs no ptrace
// stop), its auxiliary vector, the state and parent of a process or
// thread, and who traces it. The live targets and the job collector share
// these readers.
package procfs

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// ErrNoAuxv reports an auxiliary vector entry the process does not have.
var ErrNoAuxv = errors.New("auxiliary vector entry not found")

// Auxv returns the value of the auxiliary vector entry typ of process pid
// (a 64-bit little-endian process).
func Auxv(pid int, typ uint64) (uint64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/auxv", pid))
	if err != nil {
		return 0, err
	}
	for i := 0; i+16 <= len(b); i += 16 {
		k := binary.LittleEndian.Uint64(b[i:])
		if k == typ {
			return binary.LittleEndian.Uint64(b[i+8:]), nil
		}
		if k == 0 {
			break
		}
	}
	return 0, fmt.Errorf("process %d: entry %d: %w", pid, typ, ErrNoAuxv)
}

// Stat is what a /proc stat file says of a process or thread.
type Stat struct {
	State byte // R, S, D, T, t, Z, X ...
	PPID  int
}

// ReadStat reads the stat file of the /proc directory dir (/proc/PID or
// /proc/PID/task/TID); ok is false when it cannot be read or parsed.
func ReadStat(dir string) (st Stat, ok bool) {
	b, err := os.ReadFile(filepath.Join(dir, "stat"))
	if err != nil {
		return Stat{}, false
	}
	return ParseStat(b)
}

// ParseStat parses the content of a /proc stat file.
func ParseStat(b []byte) (st Stat, ok bool) {
	// pid (comm) state ppid ...: comm may hold spaces and parentheses,
	// so the state follows the last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return Stat{}, false
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 2 || len(f[0]) != 1 {
		return Stat{}, false
	}
	ppid, err := strconv.Atoi(f[1])
	if err != nil {
		return Stat{}, false
	}
	return Stat{State: f[0][0], PPID: ppid}, true
}

// Gone tells whether the process of /proc directory dir has ended: it is
// gone, or a zombie not reaped yet.
func Gone(dir string) bool {
	st, ok := ReadStat(dir)
	return !ok || st.State == 'Z' || st.State == 'X' || st.State == 'x'
}

// Tracer returns the process that traces process (or thread) pid, from the
// TracerPid line of its status file, and that tracer's command name; 0 if
// none traces it or it cannot be told.
func Tracer(pid int) (tracer int, comm string) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, ""
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "TracerPid:"); ok {
			tracer, _ = strconv.Atoi(strings.TrimSpace(v))
			break
		}
	}
	if tracer <= 0 {
		return 0, ""
	}
	c, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", tracer))
	return tracer, strings.TrimSpace(string(c))
}

// Tasks lists the thread ids of process pid, from /proc/PID/task.
func Tasks(pid int) ([]int, error) {
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		return nil, err
	}
	tids := make([]int, 0, len(ents))
	for _, e := range ents {
		if tid, err := strconv.Atoi(e.Name()); err == nil {
			tids = append(tids, tid)
		}
	}
	return tids, nil
}
