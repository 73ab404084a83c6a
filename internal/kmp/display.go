package kmp

import (
	"encoding/binary"
	"fmt"
	"slices"
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
	text := string(b)
	out := make([]omprt.ControlVar, 0, strings.Count(text, "\n")+1+len(addedVars))
	for rest := text; rest != ""; {
		var line string
		line, rest, _ = strings.Cut(rest, "\n")
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		name, val, _ := strings.Cut(line, "=")
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
		c, ok := cur[name]
		if !ok || slices.ContainsFunc(out, func(cv omprt.ControlVar) bool { return cv.Name == name }) {
			continue
		}
		cv := omprt.ControlVar{Name: name, Value: unquote(c), Raw: name + "=" + c, Corrected: true}
		// In the runtime's order: by name, before the first greater one.
		i := len(out)
		for j := range out {
			if out[j].Name > name {
				i = j
				break
			}
		}
		out = slices.Insert(out, i, cv)
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
	out := make(map[string]string, 96)
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
	if list, err := s.nested(&s.nth, "__kmp_nested_nth", l.nestedNth, l.nestedNthUsed, -1); err == nil {
		if len(list) > 0 {
			out["OMP_NUM_THREADS"] = "'" + string(joinInts(nil, list)) + "'"
		} else {
			// An empty list prints as not defined.
			out["OMP_NUM_THREADS"] = undefined
		}
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
	if v, ok := rt.globalMember("g_dynamic"); ok {
		out["OMP_DYNAMIC"] = strconv.FormatBool(v != 0)
	}
	if v, err := rt.global("__kmp_tool", 4, true); err == nil {
		out["OMP_TOOL"] = map[bool]string{true: "enabled", false: "disabled"}[v != 0]
	}
	for env, sym := range map[string]string{"OMP_TOOL_LIBRARIES": "__kmp_tool_libraries", "OMP_TOOL_VERBOSE_INIT": "__kmp_tool_verbose_init"} {
		if p, err := rt.globalPtr(sym); err == nil && p == 0 {
			// A null string prints as not defined.
			out[env] = undefined
		} else if v, err := rt.globalString(sym); err == nil {
			out[env] = v
		}
	}
	rt.kmpSettings(out)
	rt.tuningSettings(out)
	return out
}

// undefined is how the display block writes a variable the runtime
// prints as not defined.
const undefined = "undefined"

// globalMember reads the 4-byte member name of __kmp_global.g.
func (rt *Runtime) globalMember(name string) (uint64, bool) {
	g, err := rt.fieldOffset("kmp_global_t", "g")
	if err != nil {
		return 0, false
	}
	d, err := rt.fieldOffset("kmp_base_global_t", name)
	if err != nil {
		return 0, false
	}
	addr, err := rt.sym("__kmp_global")
	if err != nil {
		return 0, false
	}
	v, err := rt.readUint(addr+g+d, 4, "__kmp_global.g."+name)
	return v, err == nil
}

// LLVM 19's barrier kinds (enum barrier_type, in the order of
// __kmp_barrier_branch_bit_env_name; the reduction barrier exists where
// KMP_FAST_REDUCTION_BARRIER is set, as on x86-64) and barrier patterns
// (__kmp_barrier_pattern_name, indexed by kmp_bar_pat_e).
var (
	barrierVars     = []string{"KMP_PLAIN_BARRIER", "KMP_FORKJOIN_BARRIER", "KMP_REDUCTION_BARRIER"}
	barrierPatterns = []string{"linear", "tree", "hyper", "hierarchical", "dist"}
)

// LLVM 19's enum dynamic_mode with USE_LOAD_BALANCE (Linux), as the
// runtime's print functions name its members. The enums that differ by
// machine (kmp_lock_kind, affinity_top_method) are the arch package's
// (arch.Arch.LibompLockKinds, LibompTopMethods).
var dynamicModeNames = []string{undefined, "load balance", "random", "thread limit"}

// LLVM 19's enum sched_type members that __kmp_static and __kmp_guided
// hold (kmp.h).
const (
	schedStaticGreedy     = 40
	schedStaticBalanced   = 41
	schedGuidedIterative  = 42
	schedGuidedAnalytical = 43
)

// LLVM 19's enum affinity_type (kmp.h), past affinityCompact and
// affinityExplicit.
const (
	affinityNone = iota
	affinityPhysical
	affinityLogical
	_ // affinityCompact
	affinityScatter
	_ // affinityExplicit
	affinityBalanced
	affinityDisabled
	affinityDefault
)

// bits returns the bit-field of bs bits at bit offset bo (DWARF's
// data_bit_offset) of v, a size-byte value read in the target's byte
// order: DWARF counts the offset from the first byte's least significant
// bit on little-endian targets and from its most significant bit on
// big-endian ones (s390x).
func (rt *Runtime) bits(v, size, bo, bs uint64) uint64 {
	if rt.t.ByteOrder() == binary.ByteOrder(binary.BigEndian) {
		bo = size*8 - bo - bs
	}
	return v >> bo & (1<<bs - 1)
}

// kmpSettings adds to out the KMP_* display variables that the runtime
// sets while it initializes, after it wrote its display block: the
// barrier branch bits and patterns, the lock kind, KMP_SCHEDULE, the
// topology method, KMP_DYNAMIC_MODE and the two affinity settings, each
// formatted as its __kmp_stg_print_* function in LLVM 19 kmp_settings.cpp
// prints it. A variable whose global cannot be read or holds a value this
// package does not know is left out (and stays stale).
func (rt *Runtime) kmpSettings(out map[string]string) {
	elem := func(sym string, i int) (uint64, bool) {
		base, err := rt.sym(sym)
		if err != nil {
			return 0, false
		}
		v, err := rt.readUint(base+uint64(i)*4, 4, sym)
		return v, err == nil
	}
	for i, name := range barrierVars {
		g, ok1 := elem("__kmp_barrier_gather_branch_bits", i)
		r, ok2 := elem("__kmp_barrier_release_branch_bits", i)
		if ok1 && ok2 {
			out[name] = fmt.Sprintf("'%d,%d'", int32(g), int32(r))
		}
		g, ok1 = elem("__kmp_barrier_gather_pattern", i)
		r, ok2 = elem("__kmp_barrier_release_pattern", i)
		if ok1 && ok2 && g < uint64(len(barrierPatterns)) && r < uint64(len(barrierPatterns)) {
			out[name+"_PATTERN"] = "'" + barrierPatterns[g] + "," + barrierPatterns[r] + "'"
		}
	}
	name := func(env, sym string, names []string) {
		if v, err := rt.global(sym, 4, true); err == nil && v >= 0 && v < int64(len(names)) {
			out[env] = names[v]
		}
	}
	if a, err := omprt.Arch(rt.t); err == nil {
		name("KMP_LOCK_KIND", "__kmp_user_lock_kind", a.LibompLockKinds)
		name("KMP_TOPOLOGY_METHOD", "__kmp_affinity_top_method", a.LibompTopMethods)
	}
	if v, ok := rt.globalMember("g_dynamic_mode"); ok && v < uint64(len(dynamicModeNames)) {
		out["KMP_DYNAMIC_MODE"] = dynamicModeNames[v]
	}
	st, err1 := rt.global("__kmp_static", 4, true)
	gd, err2 := rt.global("__kmp_guided", 4, true)
	if err1 == nil && err2 == nil {
		// The runtime prints nothing for a kind it does not name; so
		// does this.
		v := map[int64]string{schedStaticGreedy: "static,greedy", schedStaticBalanced: "static,balanced"}[st]
		if g := map[int64]string{schedGuidedIterative: "guided,iterative", schedGuidedAnalytical: "guided,analytical"}[gd]; g != "" {
			v += ";" + g
		}
		out["KMP_SCHEDULE"] = "'" + v + "'"
	}
	if v, ok := rt.affinitySetting("__kmp_affinity", false); ok {
		out["KMP_AFFINITY"] = v
	}
	if v, ok := rt.affinitySetting("__kmp_hh_affinity", true); ok {
		out["KMP_HIDDEN_HELPER_AFFINITY"] = v
	}
}

// hwKeyword is __kmp_hw_get_keyword(gran, false): hwKeywords in the
// singular.
func hwKeyword(gran int64) string {
	if gran < 0 || gran >= int64(len(hwKeywords)) {
		return "unknown"
	}
	if k := hwKeywords[gran]; k != "dice" {
		return strings.TrimSuffix(k, "s")
	}
	return "die"
}

// affinitySetting is the kmp_affinity_t global sym as
// __kmp_print_affinity_env prints it (KMP_AFFINITY, or with hh
// KMP_HIDDEN_HELPER_AFFINITY, which leaves out respect and reset); false
// where the DWARF for kmp_affinity_t or one of its fields cannot be read.
func (rt *Runtime) affinitySetting(sym string, hh bool) (string, bool) {
	base, err := rt.sym(sym)
	if err != nil {
		return "", false
	}
	flagsOff, err := rt.fieldOffset("kmp_affinity_t", "flags")
	if err != nil {
		return "", false
	}
	flags, err := rt.readUint(base+flagsOff, 4, sym+".flags")
	if err != nil {
		return "", false
	}
	bad := false
	flag := func(name string) bool {
		bo, bs, err := rt.bitField("kmp_affinity_flags_t", name)
		if err != nil || bs == 0 || bo+bs > 32 {
			bad = true
			return false
		}
		return rt.bits(flags, 4, bo, bs) != 0
	}
	field := func(name string) int64 {
		off, err := rt.fieldOffset("kmp_affinity_t", name)
		if err != nil {
			bad = true
			return 0
		}
		v, err := rt.readUint(base+off, 4, sym+"."+name)
		if err != nil {
			bad = true
		}
		return int64(int32(v))
	}
	word := func(set bool, yes, no string) string {
		if set {
			return yes + ","
		}
		return no + ","
	}
	var b strings.Builder
	b.WriteString("'")
	b.WriteString(word(flag("verbose"), "verbose", "noverbose"))
	b.WriteString(word(flag("warnings"), "warnings", "nowarnings"))
	// KMP_AFFINITY_CAPABLE(): the runtime found an affinity mask.
	maskSize, err := rt.global("__kmp_affin_mask_size", uint64(rt.mem.PtrSize), false)
	if err != nil {
		return "", false
	}
	if maskSize <= 0 {
		b.WriteString("disabled'")
		return b.String(), !bad
	}
	if !hh {
		b.WriteString(word(flag("respect"), "respect", "norespect"))
		b.WriteString(word(flag("reset"), "reset", "noreset"))
	}
	b.WriteString("granularity=")
	switch {
	case flag("core_types_gran"):
		b.WriteString("core_type,")
	case flag("core_effs_gran"):
		b.WriteString("core_eff,")
	default:
		b.WriteString(hwKeyword(field("gran")) + ",")
	}
	compact, offset := field("compact"), field("offset")
	switch typ := field("type"); typ {
	case affinityNone:
		b.WriteString("none")
	case affinityPhysical:
		fmt.Fprintf(&b, "physical,%d", offset)
	case affinityLogical:
		fmt.Fprintf(&b, "logical,%d", offset)
	case affinityCompact:
		fmt.Fprintf(&b, "compact,%d,%d", compact, offset)
	case affinityScatter:
		fmt.Fprintf(&b, "scatter,%d,%d", compact, offset)
	case affinityExplicit:
		off, err := rt.fieldOffset("kmp_affinity_t", "proclist")
		if err != nil {
			return "", false
		}
		p, err := rt.readPtr(base+off, sym+".proclist")
		if err != nil {
			return "", false
		}
		list := "(null)"
		if p != 0 {
			if list, err = rt.mem.String(p, sym+".proclist"); err != nil {
				return "", false
			}
		}
		fmt.Fprintf(&b, "proclist=[%s],explicit", list)
	case affinityBalanced:
		fmt.Fprintf(&b, "balanced,%d,%d", compact, offset)
	case affinityDisabled:
		b.WriteString("disabled")
	case affinityDefault:
		b.WriteString("default")
	default:
		b.WriteString("<unknown>")
	}
	b.WriteString("'")
	return b.String(), !bad
}

// places returns OMP_PLACES as __kmp_stg_print_places prints it, from
// __kmp_affinity and the proc-bind list bind; false where this package
// cannot tell (no DWARF for kmp_affinity_t, or core-type places, which
// it does not decode).
func (rt *Runtime) places(bind []int64) (string, bool) {
	if len(bind) == 0 || bind[0] == 0 { // proc_bind_false
		return undefined, true
	}
	base, err := rt.sym("__kmp_affinity")
	if err != nil {
		return "", false
	}
	field := func(name string, size uint64, signed bool) (int64, bool) {
		off, err := rt.fieldOffset("kmp_affinity_t", name)
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
		off, err := rt.fieldOffset("kmp_affinity_t", "proclist")
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
	bit := func(outer, typ, name string) (bool, bool) {
		off, err := rt.fieldOffset("kmp_affinity_t", outer)
		if err != nil {
			return false, false
		}
		bo, bs, err := rt.bitField(typ, name)
		if err != nil || bs == 0 || bs > 32 {
			return false, false
		}
		addr := base + off + bo/8
		v, err := rt.readUint(addr, 8, "__kmp_affinity."+outer)
		if err != nil {
			return false, false
		}
		return rt.bits(v, 8, bo%8, bs) != 0, true
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

// formatSize writes a byte count as the runtime does (256k, 4M):
// __kmp_str_buf_print_size.
func formatSize(n uint64) string {
	units := []string{"", "k", "M", "G", "T", "P", "E"}
	u := 0
	for u < len(units)-1 && n > 0 && n%1024 == 0 {
		n /= 1024
		u++
	}
	return fmt.Sprintf("%d%s", n, units[u])
}
