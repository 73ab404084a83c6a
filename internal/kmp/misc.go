package kmp

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/ompd-go/ompd/internal/omprt"
)

// needOMPD fails for what only a runtime built with OMPD support has.
func (rt *Runtime) needOMPD(what string) error {
	if rt.l.source != omprt.LayoutOMPDTables {
		return errorf(ErrUnsupported, "%s: the runtime is built without OMPD support", what)
	}
	return nil
}

// OpenMPVersion returns _OPENMP of the runtime.
func (rt *Runtime) OpenMPVersion() (int, error) {
	v, err := rt.global("__kmp_openmp_version", 4, true)
	return int(v), err
}

// NumProcs returns __kmp_avail_proc.
func (rt *Runtime) NumProcs() (int, error) {
	v, err := rt.global("__kmp_avail_proc", 4, true)
	return int(v), err
}

// ThreadLimit returns __kmp_cg_max_nth.
func (rt *Runtime) ThreadLimit() (int, error) {
	v, err := rt.global("__kmp_cg_max_nth", 4, true)
	return int(v), err
}

// DLLLocations returns the names in ompd_dll_locations.
func (rt *Runtime) DLLLocations() ([]string, error) {
	if err := rt.needOMPD("DLL locations"); err != nil {
		return nil, err
	}
	addr, err := rt.sym("ompd_dll_locations")
	if err != nil {
		return nil, wrapErr(ErrIncompatible, err, "ompd_dll_locations")
	}
	arr, err := rt.readPtr(addr, "ompd_dll_locations")
	if err != nil {
		return nil, err
	}
	if arr == 0 {
		return nil, errorf(ErrUnavailable, "ompd_dll_locations is not set yet")
	}
	ptr := uint64(rt.mem.PtrSize)
	var out []string
	for i := uint64(0); ; i++ {
		if i >= maxDLLs {
			return nil, errorf(ErrCorrupt, "ompd_dll_locations has no end within %d entries", maxDLLs)
		}
		p, err := rt.readPtr(arr+i*ptr, "ompd_dll_locations entry")
		if err != nil {
			return nil, err
		}
		if p == 0 {
			return out, nil
		}
		s, err := rt.mem.String(p, "ompd_dll_locations entry")
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
}

// DisplayControlVars returns the runtime's display block, with the values
// it records wrongly corrected from runtime state (see
// ompd.AddressSpace.DisplayControlVars).
func (rt *Runtime) DisplayControlVars() ([]omprt.ControlVar, error) {
	if err := rt.needOMPD("display control variables"); err != nil {
		return nil, err
	}
	addr, err := rt.sym("ompd_env_block")
	if err != nil {
		return nil, wrapErr(ErrIncompatible, err, "ompd_env_block")
	}
	block, err := rt.readPtr(addr, "ompd_env_block")
	if err != nil {
		return nil, err
	}
	// ompd_size_t is a uint64_t on every target.
	size, err := rt.global("ompd_env_block_size", 8, false)
	if err != nil {
		return nil, err
	}
	if block == 0 || size == 0 {
		return nil, errorf(ErrUnavailable, "display control variables not recorded yet")
	}
	if size < 0 || size > maxEnvBlock {
		return nil, errorf(ErrCorrupt, "ompd_env_block_size %d out of range", size)
	}
	b, err := rt.mem.Read(block, int(size))
	if err != nil {
		return nil, wrapErr(ErrReadFailed, err, "ompd_env_block at %#x", block)
	}
	cur := rt.currentSettings()
	var out []omprt.ControlVar
	for _, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		name, val, _ := strings.Cut(line, "=")
		cv := omprt.ControlVar{Name: name, Raw: line}
		if c, ok := cur[name]; ok && c != val {
			cv.Corrected, cv.RuntimeRaw, cv.Raw, val = true, line, name+"="+c, c
		}
		if len(val) >= 2 && val[0] == '\'' && val[len(val)-1] == '\'' {
			val = val[1 : len(val)-1]
		}
		cv.Value = val
		out = append(out, cv)
	}
	return out, nil
}

var breakpointNames = []string{"ompd_bp_parallel_begin", "ompd_bp_parallel_end", "ompd_bp_task_begin",
	"ompd_bp_task_end", "ompd_bp_thread_begin", "ompd_bp_thread_end", "ompd_dll_locations_valid"}

// Breakpoints returns the runtime's OMPD breakpoint functions.
func (rt *Runtime) Breakpoints() ([]omprt.Breakpoint, error) {
	if err := rt.needOMPD("breakpoints"); err != nil {
		return nil, err
	}
	out := make([]omprt.Breakpoint, len(breakpointNames))
	for i, name := range breakpointNames {
		a, err := rt.sym(name)
		if err != nil {
			return nil, wrapErr(ErrIncompatible, err, "breakpoint %s", name)
		}
		out[i] = omprt.Breakpoint{Name: name, Addr: a}
	}
	return out, nil
}

// ompdEnableBP is the runtime's OMPD_ENABLE_BP bit of ompd_state.
const ompdEnableBP = 0x1

// Enabled reports whether ompd_state has OMPD_ENABLE_BP set.
func (rt *Runtime) Enabled() (bool, error) {
	if err := rt.needOMPD("enabled"); err != nil {
		return false, err
	}
	v, err := rt.global("ompd_state", 8, false)
	return v&ompdEnableBP != 0, err
}

// Enable sets or clears OMPD_ENABLE_BP in ompd_state.
func (rt *Runtime) Enable(on bool) error {
	if err := rt.needOMPD("enable"); err != nil {
		return err
	}
	addr, err := rt.sym("ompd_state")
	if err != nil {
		return wrapErr(ErrIncompatible, err, "ompd_state")
	}
	size := rt.l.globals["ompd_state"]
	if size == 0 {
		size = 8
	}
	if size != 1 && size != 2 && size != 4 && size != 8 {
		return errorf(ErrIncompatible, "enable: ompd_state is %d bytes", size)
	}
	cur, err := rt.readUint(addr, size, "ompd_state")
	if err != nil {
		return err
	}
	if on {
		cur |= ompdEnableBP
	} else {
		cur &^= ompdEnableBP
	}
	buf := omprt.PutUint(rt.mem.Order, size, cur)
	if err := rt.t.WriteMemory(addr, buf); err != nil {
		return wrapErr(ErrWriteFailed, err, "enable: write ompd_state at %#x", addr)
	}
	rt.Refresh()
	return nil
}

var procBindNames = []string{"false", "true", "primary", "close", "spread", "intel", "default"}

func procBindName(v int64) string {
	if v >= 0 && v < int64(len(procBindNames)) {
		return procBindNames[v]
	}
	return "ProcBind(" + strconv.FormatInt(v, 10) + ")"
}

// currentSettings returns, for the OMP_* display variables backed by
// runtime state this package can read, their values now, formatted as the
// runtime's display block formats them.
//
// LLVM's runtime writes its display block (ompd_env_block) at the very
// start of its initialization, before it reads the environment (LLVM 19:
// __kmp_env_dump runs before __kmp_env_initialize in
// __kmp_do_serial_initialize), so the block holds the defaults, not what the
// program runs with. Only variables whose value sits in a runtime global
// with a known C type are corrected; the rest keep the block's text.
func (rt *Runtime) currentSettings() map[string]string {
	s := rt.stop()
	out := map[string]string{}
	intVar := func(env, sym string) {
		if v, err := rt.global(sym, 4, true); err == nil {
			out[env] = strconv.FormatInt(v, 10)
		}
	}
	boolVar := func(env, sym string) {
		if v, err := rt.global(sym, 4, true); err == nil {
			out[env] = strconv.FormatBool(v != 0)
		}
	}
	intVar("OMP_MAX_ACTIVE_LEVELS", "__kmp_dflt_max_active_levels")
	if v, ok := out["OMP_MAX_ACTIVE_LEVELS"]; ok {
		// The runtime prints OMP_NESTED as this deprecation line.
		out["OMP_NESTED: deprecated; max-active-levels-var"] = v
	}
	intVar("OMP_THREAD_LIMIT", "__kmp_cg_max_nth")
	intVar("OMP_MAX_TASK_PRIORITY", "__kmp_max_task_priority")
	intVar("OMP_DEFAULT_DEVICE", "__kmp_default_device")
	boolVar("OMP_CANCELLATION", "__kmp_omp_cancellation")
	boolVar("OMP_DISPLAY_AFFINITY", "__kmp_display_affinity")
	if v, err := rt.globalString("__kmp_affinity_format"); err == nil && v != "" {
		out["OMP_AFFINITY_FORMAT"] = "'" + v + "'"
	}
	if v, err := rt.global("__kmp_stksize", uint64(rt.mem.PtrSize), false); err == nil && v > 0 {
		out["OMP_STACKSIZE"] = formatSize(uint64(v))
	}
	sched, err1 := rt.global("__kmp_sched", 4, true)
	chunk, err2 := rt.global("__kmp_chunk", 4, true)
	if err1 == nil && err2 == nil {
		sc := decodeSchedule(sched, chunk)
		if sc.Kind != 0 {
			v := schedNames[sc.Kind]
			if chunk != 0 {
				v += "," + strconv.FormatInt(chunk, 10)
			}
			if sc.Monotonic {
				v = "monotonic:" + v
			} else if sc.Nonmonotonic {
				v = "nonmonotonic:" + v
			}
			out["OMP_SCHEDULE"] = "'" + v + "'"
		}
	}
	l := rt.l
	if list, err := s.nested(&s.nth, "__kmp_nested_nth", l.nestedNth, l.nestedNthUsed, -1); err == nil && len(list) > 0 {
		out["OMP_NUM_THREADS"] = "'" + joinInts(list) + "'"
	}
	if list, err := s.nested(&s.bind, "__kmp_nested_proc_bind", l.nestedBind, l.nestedBindUsed, -1); err == nil && len(list) > 0 {
		names := make([]string, len(list))
		for i, v := range list {
			names[i] = procBindName(v)
		}
		out["OMP_PROC_BIND"] = "'" + strings.Join(names, ",") + "'"
	}
	// dyn-var's initial value lives in a struct member: __kmp_global.g.g_dynamic.
	if g, err := rt.t.FieldOffset("kmp_global_t", "g"); err == nil {
		if d, err := rt.t.FieldOffset("kmp_base_global_t", "g_dynamic"); err == nil {
			if addr, err := rt.sym("__kmp_global"); err == nil {
				if v, err := rt.readUint(addr+g+d, 4, "__kmp_global.g.g_dynamic"); err == nil {
					out["OMP_DYNAMIC"] = strconv.FormatBool(v != 0)
				}
			}
		}
	}
	return out
}

// formatSize writes a byte count as the runtime does (256k, 4M).
func formatSize(n uint64) string {
	units := []string{"", "k", "M", "G", "T"}
	u := 0
	for u < len(units)-1 && n >= 1024 && n%1024 == 0 {
		n /= 1024
		u++
	}
	return fmt.Sprintf("%d%s", n, units[u])
}
