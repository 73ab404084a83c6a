package gomp

import (
	"errors"
	"strconv"
	"strings"
	"sync"

	"github.com/ompd-go/ompd/internal/omprt"
	"github.com/ompd-go/ompd/target"
)

// Without libgomp's debug information its globals (the address-space
// ICVs, what OMP_DISPLAY_ENV prints) cannot be found. The environment the
// program started with can (target.EnvironReader: a core's initial stack,
// /proc/PID/environ live), and libgomp reads its settings from it once, at
// start-up: its OMP_* variables are shown as display control variables
// marked as the start-up environment's, and an ICV the program cannot
// change after start-up is derived from its variable as env.c parses it,
// where that is certain.

// startEnv is the start-up environment, read once.
type startEnv struct {
	once sync.Once
	vars map[string]string
	list []string // NAME=VALUE, in order
	err  error
}

// environ returns the program's start-up environment.
func (r *Runtime) environ() (*startEnv, error) {
	e := &r.env
	e.once.Do(func() {
		er, ok := r.t.(target.EnvironReader)
		if !ok {
			e.err = omprt.Errorf(omprt.ErrUnsupported, "gomp: the target cannot read the program's start-up environment")
			return
		}
		list, err := er.Environ()
		if err != nil {
			e.err = omprt.Wrap(omprt.ErrUnavailable, err, "gomp: the program's start-up environment")
			return
		}
		e.list, e.vars = list, map[string]string{}
		for _, kv := range list {
			if k, v, ok := strings.Cut(kv, "="); ok {
				e.vars[k] = v
			}
		}
	})
	return e, e.err
}

// envSource marks a value taken from the start-up environment
// (omprt.ControlVar.Source).
const envSource = "environment"

// envControlVars lists the OMP_* and GOMP_* variables of the start-up
// environment as display control variables marked as the environment's.
func (r *Runtime) envControlVars() ([]omprt.ControlVar, error) {
	e, err := r.environ()
	if err != nil {
		return nil, err
	}
	var out []omprt.ControlVar
	for _, kv := range e.list {
		k, v, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "OMP_") || strings.HasPrefix(k, "GOMP_") {
			out = append(out, omprt.ControlVar{Name: k, Value: v, Raw: k + "='" + v + "'", Source: envSource})
		}
	}
	return out, nil
}

// envICV derives an address-space ICV from the start-up environment as
// libgomp's env.c does, for the ICVs the program cannot change after
// start-up: cancel-var (OMP_CANCELLATION), max-task-priority-var
// (OMP_MAX_TASK_PRIORITY), display-affinity-var (OMP_DISPLAY_AFFINITY),
// each its default when unset, and stacksize-var (OMP_STACKSIZE, else
// GOMP_STACKSIZE; unset, the system's default, which the environment does
// not tell). A value env.c would reject (it warns and keeps the default)
// or a device-specific variant of the variable (GCC 13's _ALL, _DEV
// suffixes) leaves the answer to the runtime's state: cause is returned.
func (r *Runtime) envICV(id omprt.ICV, cause error) (omprt.Value, error) {
	names := map[omprt.ICV]string{
		omprt.ICVCancelVar:          "OMP_CANCELLATION",
		omprt.ICVMaxTaskPriorityVar: "OMP_MAX_TASK_PRIORITY",
		omprt.ICVDisplayAffinityVar: "OMP_DISPLAY_AFFINITY",
		omprt.ICVStacksizeVar:       "OMP_STACKSIZE",
	}
	name, ok := names[id]
	if !ok || !errors.Is(cause, omprt.ErrUnavailable) {
		return omprt.Value{}, cause
	}
	e, err := r.environ()
	if err != nil {
		return omprt.Value{}, cause
	}
	for k := range e.vars {
		if strings.HasPrefix(k, name+"_") {
			return omprt.Value{}, cause
		}
	}
	v, set := e.vars[name]
	var n int64
	switch id {
	case omprt.ICVCancelVar, omprt.ICVDisplayAffinityVar:
		if set {
			b, ok := envBool(v)
			if !ok {
				return omprt.Value{}, cause
			}
			n = b
		}
	case omprt.ICVMaxTaskPriorityVar:
		if set {
			p, err := strconv.ParseUint(strings.TrimSpace(v), 10, 31)
			if err != nil {
				return omprt.Value{}, cause
			}
			n = int64(p)
		}
	case omprt.ICVStacksizeVar:
		if !set {
			v, set = e.vars["GOMP_STACKSIZE"]
		}
		s, ok := envStacksize(v)
		if !set || !ok {
			return omprt.Value{}, cause
		}
		n = s
	}
	return omprt.Value{Int: n, FromEnv: true}, nil
}

// envBool parses a boolean as env.c's parse_boolean does: "true" or
// "false", any case, spaces around.
func envBool(v string) (int64, bool) {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "true":
		return 1, true
	case "false":
		return 0, true
	}
	return 0, false
}

// envStacksize parses a stack size as env.c's parse_stacksize does: a
// number with an optional unit B, K, M or G (any case; K when none).
func envStacksize(v string) (int64, bool) {
	v = strings.TrimSpace(v)
	shift := 10
	if n := len(v); n > 0 {
		switch v[n-1] {
		case 'b', 'B':
			shift, v = 0, v[:n-1]
		case 'k', 'K':
			shift, v = 10, v[:n-1]
		case 'm', 'M':
			shift, v = 20, v[:n-1]
		case 'g', 'G':
			shift, v = 30, v[:n-1]
		}
	}
	x, err := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
	if err != nil || x > (1<<62)>>shift {
		return 0, false
	}
	return int64(x << shift), true
}
