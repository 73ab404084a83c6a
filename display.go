package ompd

import (
	"fmt"
	"strconv"
	"strings"
)

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
func (as *AddressSpace) currentSettings() map[string]string {
	out := map[string]string{}
	intVar := func(env, sym string) {
		if v, err := as.global(sym, 4, true); err == nil {
			out[env] = strconv.FormatInt(v, 10)
		}
	}
	boolVar := func(env, sym string) {
		if v, err := as.global(sym, 4, true); err == nil {
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
	if s, err := as.globalString("__kmp_affinity_format"); err == nil && s != "" {
		out["OMP_AFFINITY_FORMAT"] = "'" + s + "'"
	}
	if v, err := as.global("__kmp_stksize", uint64(as.mem.ptrSize), false); err == nil && v > 0 {
		out["OMP_STACKSIZE"] = formatSize(uint64(v))
	}
	sched, err1 := as.global("__kmp_sched", 4, true)
	chunk, err2 := as.global("__kmp_chunk", 4, true)
	if err1 == nil && err2 == nil {
		s := decodeSchedule(sched, chunk)
		if s.Kind != 0 {
			v := s.Kind.String()
			if chunk != 0 {
				v += "," + strconv.FormatInt(chunk, 10)
			}
			if s.Monotonic {
				v = "monotonic:" + v
			} else if s.Nonmonotonic {
				v = "nonmonotonic:" + v
			}
			out["OMP_SCHEDULE"] = "'" + v + "'"
		}
	}
	if l := as.l; l != nil {
		if list, err := as.nestedList("__kmp_nested_nth", l.nestedNth, l.nestedNthUsed, -1); err == nil && len(list) > 0 {
			out["OMP_NUM_THREADS"] = "'" + joinInts(list) + "'"
		}
		if list, err := as.nestedList("__kmp_nested_proc_bind", l.nestedBind, l.nestedBindUsed, -1); err == nil && len(list) > 0 {
			names := make([]string, len(list))
			for i, v := range list {
				names[i] = ProcBind(v).String()
			}
			out["OMP_PROC_BIND"] = "'" + strings.Join(names, ",") + "'"
		}
	}
	// dyn-var's initial value lives in a struct member: __kmp_global.g.g_dynamic.
	if g, err := as.t.FieldOffset("kmp_global_t", "g"); err == nil {
		if d, err := as.t.FieldOffset("kmp_base_global_t", "g_dynamic"); err == nil {
			if addr, err := as.sym("__kmp_global"); err == nil {
				if v, err := as.readUint(addr+g+d, 4, "__kmp_global.g.g_dynamic"); err == nil {
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
