package kmp

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/ompd-go/ompd/internal/omprt"
)

// DisplayControlVars returns the runtime's display block, with the values
// it records wrongly corrected from runtime state, the variables it leaves
// out added, and the rest marked stale (see
// ompd.AddressSpace.DisplayControlVars).
//
// LLVM's runtime writes its display block (ompd_env_block) at the very
// start of its initialization, before it reads the environment (LLVM 19:
// __kmp_env_dump runs before __kmp_env_initialize in
// __kmp_do_serial_initialize), so the block holds the defaults, not what
// the program runs with, and leaves out OMP_WAIT_POLICY and KMP_LIBRARY,
// which print nothing while __kmp_library is still library_none.
func (rt *Runtime) DisplayControlVars() ([]omprt.ControlVar, error) {
	if err := rt.needOMPD("display control variables"); err != nil {
		return nil, err
	}
	block, err := rt.globalPtr("ompd_env_block")
	if err != nil {
		return nil, err
	}
	// ompd_size_t is a uint64_t on every target.
	size, err := rt.global("ompd_env_block_size", 8, false)
	if err != nil {
		return nil, err
	}
	if block == 0 || size == 0 {
		return nil, errorf(omprt.ErrUnavailable, "display control variables not recorded yet")
	}
	if size < 0 || size > maxEnvBlock {
		return nil, errorf(omprt.ErrCorrupt, "ompd_env_block_size %d out of range", size)
	}
	b, err := rt.mem.Read(block, int(size))
	if err != nil {
		return nil, wrapErr(omprt.ErrReadFailed, err, "ompd_env_block at %#x", block)
	}
	cur := rt.currentSettings()
	var out []omprt.ControlVar
	seen := map[string]bool{}
	for _, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		name, val, _ := strings.Cut(line, "=")
		seen[name] = true
		cv := omprt.ControlVar{Name: name, Raw: line}
		if c, ok := cur[name]; !ok {
			cv.Stale = true
		} else if c != val {
			cv.Corrected, cv.RuntimeRaw, cv.Raw, val = true, line, name+"="+c, c
		}
		cv.Value = unquote(val)
		out = append(out, cv)
	}
	for _, name := range addedVars {
		if c, ok := cur[name]; ok && !seen[name] {
			cv := omprt.ControlVar{Name: name, Value: unquote(c), Raw: name + "=" + c, Corrected: true}
			// In the runtime's order: by name, before the first greater one.
			i := len(out)
			for j := range out {
				if out[j].Name > name {
					i = j
					break
				}
			}
			out = append(out[:i], append([]omprt.ControlVar{cv}, out[i:]...)...)
		}
	}
	return out, nil
}

// addedVars are the variables the runtime's display block leaves out but
// OMP_DISPLAY_ENV prints.
var addedVars = []string{"KMP_LIBRARY", "OMP_WAIT_POLICY"}

func unquote(v string) string {
	if len(v) >= 2 && v[0] == '\'' && v[len(v)-1] == '\'' {
		return v[1 : len(v)-1]
	}
	return v
}

var procBindNames = []string{"false", "true", "primary", "close", "spread", "intel", "default"}

func procBindName(v int64) string {
	if v >= 0 && v < int64(len(procBindNames)) {
		return procBindNames[v]
	}
	return "ProcBind(" + strconv.FormatInt(v, 10) + ")"
}

// LLVM 19's enum library_type (kmp.h).
const (
	libraryNone = iota
	librarySerial
	libraryTurnaround
	libraryThroughput
)

// LLVM 19's enum affinity_type and kmp_hw_t (kmp.h).
const (
	affinityCompact  = 3
	affinityExplicit = 5
	hwUnknown        = -1
)

// hwKeywords are __kmp_hw_get_keyword(gran, plural) for kmp_hw_t 0...
var hwKeywords = []string{"sockets", "proc_groups", "numa_domains", "dice", "ll_caches", "l3_caches",
	"tiles", "modules", "l2_caches", "l1_caches", "cores", "threads"}

// currentSettings returns, for the display variables backed by runtime
// state this package can read, their values now, formatted as the
// runtime's display block formats them (what follows NAME=).
//
// Each comes from the global the runtime's own print function for the
// variable reads (LLVM 19 kmp_settings.cpp, __kmp_stg_print_*), printed
// the way that function prints it with __kmp_env_format 0, as the block
// was written.
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
	intVar("OMP_NUM_TEAMS", "__kmp_nteams")
	intVar("OMP_TEAMS_THREAD_LIMIT", "__kmp_teams_thread_limit")
	intVar("KMP_TEAMS_THREAD_LIMIT", "__kmp_teams_max_nth")
	intVar("KMP_DEVICE_THREAD_LIMIT", "__kmp_max_nth")
	intVar("KMP_ALL_THREADPRIVATE", "__kmp_tp_capacity")
	boolVar("OMP_CANCELLATION", "__kmp_omp_cancellation")
	boolVar("OMP_DISPLAY_AFFINITY", "__kmp_display_affinity")
	if verbose, err := rt.global("__kmp_display_env_verbose", 4, true); err == nil {
		if verbose != 0 {
			out["OMP_DISPLAY_ENV"] = "VERBOSE"
		} else {
			boolVar("OMP_DISPLAY_ENV", "__kmp_display_env")
		}
	}
	if v, err := rt.globalString("__kmp_affinity_format"); err == nil && v != "" {
		out["OMP_AFFINITY_FORMAT"] = "'" + v + "'"
	}
	if v, err := rt.global("__kmp_stksize", uint64(rt.mem.PtrSize), false); err == nil && v > 0 {
		// KMP_STACKSIZE counts bytes, OMP_STACKSIZE kilobytes; both print
		// a multiple of 1024 the same way.
		out["OMP_STACKSIZE"] = formatSize(uint64(v))
		if v%1024 == 0 {
			out["KMP_STACKSIZE"] = formatSize(uint64(v))
		}
	}
	if lib, err := rt.global("__kmp_library", 4, true); err == nil {
		switch lib {
		case librarySerial:
			out["KMP_LIBRARY"] = "serial"
		case libraryTurnaround:
			out["KMP_LIBRARY"], out["OMP_WAIT_POLICY"] = "turnaround", "ACTIVE"
		case libraryThroughput:
			out["KMP_LIBRARY"], out["OMP_WAIT_POLICY"] = "throughput", "PASSIVE"
		}
	}
	bt, err1 := rt.global("__kmp_dflt_blocktime", 4, true)
	units, err2 := rt.global("__kmp_blocktime_units", 1, false)
	if err1 == nil && err2 == nil && (units == 'm' || units == 'u') {
		if units == 'm' {
			bt /= 1000
		}
		out["KMP_BLOCKTIME"] = fmt.Sprintf("%d%cs", bt, rune(units))
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
		out["OMP_NUM_THREADS"] = "'" + string(joinInts(nil, list)) + "'"
	}
	bind, bindErr := s.nested(&s.bind, "__kmp_nested_proc_bind", l.nestedBind, l.nestedBindUsed, -1)
	if bindErr == nil && len(bind) > 0 {
		names := make([]string, len(bind))
		for i, v := range bind {
			names[i] = procBindName(v)
		}
		out["OMP_PROC_BIND"] = "'" + strings.Join(names, ",") + "'"
	}
	if bindErr == nil {
		if v, ok := rt.places(bind); ok {
			out["OMP_PLACES"] = v
		}
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

// places returns OMP_PLACES as __kmp_stg_print_places prints it, from
// __kmp_affinity and the proc-bind list bind; false where this package
// cannot tell (no DWARF for kmp_affinity_t, or core-type places, which
// it does not decode).
func (rt *Runtime) places(bind []int64) (string, bool) {
	const undefined = "undefined"
	if len(bind) == 0 || bind[0] == 0 { // proc_bind_false
		return undefined, true
	}
	base, err := rt.sym("__kmp_affinity")
	if err != nil {
		return "", false
	}
	field := func(name string, size uint64, signed bool) (int64, bool) {
		off, err := rt.t.FieldOffset("kmp_affinity_t", name)
		if err != nil {
			return 0, false
		}
		v, err := rt.readUint(base+off, size, "__kmp_affinity."+name)
		if err != nil {
			return 0, false
		}
		if signed {
			return int64(int32(v)), true
		}
		return int64(v), true
	}
	typ, ok1 := field("type", 4, true)
	gran, ok2 := field("gran", 4, true)
	if !ok1 || !ok2 {
		return "", false
	}
	switch typ {
	case affinityExplicit:
		off, err := rt.t.FieldOffset("kmp_affinity_t", "proclist")
		if err != nil {
			return "", false
		}
		p, err := rt.readPtr(base+off, "__kmp_affinity.proclist")
		if err != nil {
			return "", false
		}
		if p == 0 {
			return undefined, true
		}
		list, err := rt.mem.String(p, "__kmp_affinity.proclist")
		if err != nil {
			return "", false
		}
		return "'" + list + "'", true
	case affinityCompact:
	default:
		return undefined, true
	}
	if gran == hwUnknown {
		return undefined, true
	}
	if gran < 0 || gran >= int64(len(hwKeywords)) || rt.coreAttrPlaces(base) {
		return "", false
	}
	num, ok := field("num_masks", 4, false)
	if !ok {
		return "", false
	}
	if num == 0 {
		if n, err := rt.global("__kmp_affinity_num_places", 4, true); err == nil && n > 0 {
			num = n
		}
	}
	v := "'" + hwKeywords[gran]
	if num > 0 {
		v += "(" + strconv.FormatInt(num, 10) + ")"
	}
	return v + "'", true
}

// coreAttrPlaces reports whether places are core types or efficiencies
// (hybrid processors), or whether that cannot be read: either way this
// package does not print them.
func (rt *Runtime) coreAttrPlaces(base uint64) bool {
	bf, ok := rt.t.(interface {
		BitField(typeName, field string) (uint64, uint64, error)
	})
	if !ok {
		return true
	}
	bit := func(outer, typ, name string) (bool, bool) {
		off, err := rt.t.FieldOffset("kmp_affinity_t", outer)
		if err != nil {
			return false, false
		}
		bo, bs, err := bf.BitField(typ, name)
		if err != nil || bs == 0 || bs > 32 {
			return false, false
		}
		addr := base + off + bo/8
		v, err := rt.readUint(addr, 8, "__kmp_affinity."+outer)
		if err != nil {
			return false, false
		}
		return (v>>(bo%8))&(1<<bs-1) != 0, true
	}
	for _, f := range [][3]string{
		{"core_attr_gran", "kmp_affinity_attrs_t", "valid"},
		{"flags", "kmp_affinity_flags_t", "core_types_gran"},
		{"flags", "kmp_affinity_flags_t", "core_effs_gran"},
	} {
		set, ok := bit(f[0], f[1], f[2])
		if !ok || set {
			return true
		}
	}
	return false
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
