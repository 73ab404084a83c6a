package gomp

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/ompd-go/ompd/internal/gomp/gompver"
	"github.com/ompd-go/ompd/internal/omprt"
)

// DisplayControlVars builds what libgomp's OMP_DISPLAY_ENV=verbose prints,
// line for line, from the runtime's globals at the stop (libgomp keeps no
// text of it). GCC 12 prints the global ICVs; GCC 13 and later print the
// initial ICVs of the host ("[host]" and "[all]" lines). Every value
// lives in hidden symbols: without libgomp's debug information this is
// ErrUnavailable.
func (r *Runtime) DisplayControlVars() ([]omprt.ControlVar, error) {
	if r.source == omprt.LayoutKnownTable {
		// libgomp's globals are out of reach: the OMP_* variables it
		// started with, marked as such.
		if vars, err := r.envControlVars(); err == nil {
			return vars, nil
		}
		return nil, r.needsDebug("the display control variables")
	}
	d := &display{r: r}
	var in *displayICVs
	var err error
	if r.lib.newestNode == "" || !gompver.Less("5.1", strings.TrimPrefix(r.lib.newestNode, "GOMP_")) {
		in, err = d.globalICVs()
	} else {
		d.devices = true
		in, err = d.initialICVs()
	}
	if err != nil {
		return nil, err
	}
	return d.lines(in)
}

// displayICVs are the values the block prints per device.
type displayICVs struct {
	dyn              bool
	maxActive        uint64
	nthreads         []uint64 // the value, then the list's further entries
	sched            uint64
	chunk            int64
	bind             []int64
	stacksize        uint64
	waitPolicy       int64
	threadLimit      uint64
	nteams           int64
	teamsThreadLimit int64
	defaultDevice    int64
}

type display struct {
	r       *Runtime
	devices bool // GCC 13+: [host] and [all] prefixes
	err     error
}

// sym reads an integer global of size bytes.
func (d *display) sym(name string, size uint64) uint64 {
	if d.err != nil {
		return 0
	}
	a, err := d.r.global(name)
	if err != nil {
		d.err = err
		return 0
	}
	v, err := d.r.mem.Uint(a, size, name)
	if err != nil {
		d.err = err
	}
	return v
}

// field reads a member of a structure at addr through the target's DWARF.
func (d *display) field(addr uint64, typ, member string, size uint64) uint64 {
	if d.err != nil {
		return 0
	}
	off, err := d.r.t.FieldOffset("struct "+typ, member)
	if err != nil {
		d.err = omprt.Wrap(omprt.ErrIncompatible, err, "gomp: %s.%s", typ, member)
		return 0
	}
	v, err := d.r.mem.Uint(addr+off, size, typ+"."+member)
	if err != nil {
		d.err = err
	}
	return v
}

// list reads entries [1, n) of an array of elem-byte integers.
func (d *display) list(first uint64, p, n, elem uint64, signed bool) []uint64 {
	out := []uint64{first}
	if d.err != nil || p == 0 {
		return out
	}
	if n > 1<<16 {
		d.err = omprt.Errorf(omprt.ErrCorrupt, "gomp: list of %d entries", n)
		return out
	}
	for i := uint64(1); i < n; i++ {
		v, err := d.r.mem.Uint(p+i*elem, elem, "ICV list")
		if err != nil {
			d.err = err
			return out
		}
		out = append(out, v)
	}
	return out
}

func toInts(v []uint64, size uint) []int64 {
	out := make([]int64, len(v))
	for i, x := range v {
		out[i] = int64(x<<(64-8*size)) >> (64 - 8*size)
	}
	return out
}

// maxActiveLevels is gomp_global_icv's max-active-levels-var, or, in GCC
// 10 and older, which keep it in no ICV block, gomp_max_active_levels_var.
func (d *display) maxActiveLevels(icv omprt.View) uint64 {
	if fl := d.r.lay.f(icvMaxActiveLevels); fl.Size > 0 {
		return icv.F(fl)
	}
	return d.sym("gomp_max_active_levels_var", 8)
}

// globalICVs reads GCC 12's values: gomp_global_icv and the lists.
func (d *display) globalICVs() (*displayICVs, error) {
	v, err := d.r.globalICV()
	if err != nil {
		return nil, err
	}
	l := d.r.lay
	in := &displayICVs{
		dyn:           v.F(l.f(icvDyn)) != 0,
		maxActive:     d.maxActiveLevels(v),
		sched:         v.F(l.f(icvRunSched)),
		chunk:         v.FI(l.f(icvRunSchedChunk)),
		threadLimit:   v.F(l.f(icvThreadLimit)),
		defaultDevice: v.FI(l.f(icvDefaultDevice)),
	}
	in.nthreads = d.list(v.F(l.f(icvNthreads)), d.ptr("gomp_nthreads_var_list"), d.sym("gomp_nthreads_var_list_len", 8), 8, false)
	in.bind = toInts(d.list(uint64(v.FI(l.f(icvBind))), d.ptr("gomp_bind_var_list"), d.sym("gomp_bind_var_list_len", 8), 1, true), 1)
	in.stacksize = d.sym("stacksize", 8)
	in.waitPolicy = int64(int32(d.sym("wait_policy", 4)))
	in.nteams = int64(int32(d.sym("gomp_nteams_var", 4)))
	in.teamsThreadLimit = int64(int32(d.sym("gomp_teams_thread_limit_var", 4)))
	return in, d.err
}

func (d *display) ptr(name string) uint64 { return d.sym(name, 8) }

// initialICVs reads GCC 13+'s values: the host's entry of
// gomp_initial_icv_list (the ICVs the environment set without a device
// suffix). Device-specific entries (OMP_*_ALL, OMP_*_DEV...) print further
// lines this package does not build: they are refused.
func (d *display) initialICVs() (*displayICVs, error) {
	item := d.ptr("gomp_initial_icv_list")
	var none uint64
	for i := 0; item != 0 && d.err == nil; i++ {
		if i > 1<<10 {
			return nil, omprt.Errorf(omprt.ErrCorrupt, "gomp: gomp_initial_icv_list does not end")
		}
		dev := int32(d.field(item, "gomp_icv_list", "device_num", 4))
		if dev == -3 {
			none = item
		} else if d.err == nil {
			return nil, omprt.Errorf(omprt.ErrUnsupported, "gomp: device-specific ICVs (device %d) in OMP_DISPLAY_ENV", dev)
		}
		item = d.field(item, "gomp_icv_list", "next", 8)
	}
	if d.err != nil {
		return nil, d.err
	}
	if none == 0 {
		return nil, omprt.Errorf(omprt.ErrUnavailable, "gomp: no host entry in gomp_initial_icv_list (libgomp not initialized?)")
	}
	f := func(member string, size uint64) uint64 { return d.field(none, "gomp_icv_list", "icvs."+member, size) }
	in := &displayICVs{
		dyn:              f("dyn_var", 1) != 0,
		maxActive:        f("max_active_levels_var", 1),
		sched:            f("run_sched_var", 4),
		chunk:            int64(int32(f("run_sched_chunk_size", 4))),
		threadLimit:      f("thread_limit_var", 4),
		defaultDevice:    int64(int32(f("default_device_var", 4))),
		stacksize:        f("stacksize", 8),
		waitPolicy:       int64(int32(f("wait_policy", 4))),
		nteams:           int64(int32(f("nteams_var", 4))),
		teamsThreadLimit: int64(int32(f("teams_thread_limit_var", 4))),
	}
	in.nthreads = d.list(f("nthreads_var", 8), f("nthreads_var_list", 8), f("nthreads_var_list_len", 8), 8, false)
	in.bind = toInts(d.list(uint64(int8(f("bind_var", 1))), f("bind_var_list", 8), f("bind_var_list_len", 8), 1, true), 1)
	return in, d.err
}

var bindNames = map[int64]string{0: "FALSE", 1: "TRUE", 2: "MASTER", 3: "CLOSE", 4: "SPREAD"}

var allocators = []string{"", "omp_default_mem_alloc", "omp_large_cap_mem_alloc", "omp_const_mem_alloc",
	"omp_high_bw_mem_alloc", "omp_low_lat_mem_alloc", "omp_cgroup_mem_alloc", "omp_pteam_mem_alloc", "omp_thread_mem_alloc"}

// lines writes the block as libgomp's omp_display_env (verbose) does.
func (d *display) lines(in *displayICVs) ([]omprt.ControlVar, error) {
	var out []omprt.ControlVar
	add := func(scope, name, value string) {
		p := ""
		if d.devices && scope != "" {
			p = "[" + scope + "] "
		}
		out = append(out, omprt.ControlVar{Name: name, Value: value, Raw: p + name + " = '" + value + "'"})
	}
	b2s := func(b bool) string {
		if b {
			return "TRUE"
		}
		return "FALSE"
	}
	add("", "_OPENMP", "201511")
	add("host", "OMP_DYNAMIC", b2s(in.dyn))
	add("host", "OMP_NESTED", b2s(in.maxActive > 1))
	var nt []string
	for _, n := range in.nthreads {
		nt = append(nt, strconv.FormatUint(n, 10))
	}
	add("host", "OMP_NUM_THREADS", strings.Join(nt, ","))
	add("host", "OMP_SCHEDULE", displaySchedule(in.sched, in.chunk))
	bind := bindNames[in.bind[0]]
	for _, b := range in.bind[1:] {
		if b >= 2 && b <= 4 {
			bind += "," + bindNames[b]
		}
	}
	add("host", "OMP_PROC_BIND", bind)
	places, err := d.places()
	if err != nil {
		return nil, err
	}
	add("host", "OMP_PLACES", places)
	add("host", "OMP_STACKSIZE", strconv.FormatUint(in.stacksize, 10))
	wp := "PASSIVE"
	if in.waitPolicy > 0 {
		wp = "ACTIVE"
	}
	add("host", "OMP_WAIT_POLICY", wp)
	add("host", "OMP_THREAD_LIMIT", strconv.FormatUint(in.threadLimit, 10))
	add("host", "OMP_MAX_ACTIVE_LEVELS", strconv.FormatUint(in.maxActive, 10))
	if d.devices {
		add("host", "OMP_NUM_TEAMS", strconv.FormatInt(in.nteams, 10))
		add("host", "OMP_TEAMS_THREAD_LIMIT", strconv.FormatUint(uint64(uint32(in.teamsThreadLimit)), 10))
	} else {
		add("host", "OMP_NUM_TEAMS", strconv.FormatUint(uint64(uint32(in.nteams)), 10))
		add("host", "OMP_TEAMS_THREAD_LIMIT", strconv.FormatUint(uint64(uint32(in.teamsThreadLimit)), 10))
	}
	add("all", "OMP_CANCELLATION", b2s(d.sym("gomp_cancel_var", 1) != 0))
	add("all", "OMP_DEFAULT_DEVICE", strconv.FormatInt(in.defaultDevice, 10))
	add("all", "OMP_MAX_TASK_PRIORITY", strconv.FormatInt(int64(int32(d.sym("gomp_max_task_priority_var", 4))), 10))
	add("all", "OMP_DISPLAY_AFFINITY", b2s(d.sym("gomp_display_affinity_var", 1) != 0))
	format := ""
	if p := d.ptr("gomp_affinity_format_var"); d.err == nil {
		format, d.err = d.r.mem.String(p, "gomp_affinity_format_var")
	}
	add("host", "OMP_AFFINITY_FORMAT", format)
	alloc := d.sym("gomp_def_allocator", 8)
	name := ""
	if alloc < uint64(len(allocators)) {
		name = allocators[alloc]
	} else if d.devices {
		if p := d.ptr("gomp_def_allocator_envvar"); d.err == nil && p != 0 {
			name, d.err = d.r.mem.String(p, "gomp_def_allocator_envvar")
		}
	}
	add("host", "OMP_ALLOCATOR", name)
	offload := map[uint64]string{0: "DEFAULT", 1: "MANDATORY", 2: "DISABLED"}[d.sym("gomp_target_offload_var", 4)]
	add("all", "OMP_TARGET_OFFLOAD", offload)
	add("host", "GOMP_CPU_AFFINITY", "")
	stack := in.stacksize
	if d.devices {
		stack = d.sym("stacksize", 8)
	}
	add("host", "GOMP_STACKSIZE", strconv.FormatUint(stack, 10))
	add("host", "GOMP_SPINCOUNT", strconv.FormatUint(d.sym("gomp_spin_count_var", 8), 10))
	if d.err != nil {
		return nil, d.err
	}
	return out, nil
}

// displaySchedule writes run-sched-var as OMP_DISPLAY_ENV does.
func displaySchedule(raw uint64, chunk int64) string {
	const monotonic = 0x80000000
	p := ""
	if raw&monotonic != 0 {
		if raw != monotonic|1 {
			p = "MONOTONIC:"
		}
	} else if raw == 1 {
		p = "NONMONOTONIC:"
	}
	c := func(def int64) string {
		if chunk != def {
			return "," + strconv.FormatInt(chunk, 10)
		}
		return ""
	}
	switch raw &^ monotonic {
	case 0:
		return p + "RUNTIME" + c(1)
	case 1:
		return p + "STATIC" + c(0)
	case 2:
		return p + "DYNAMIC" + c(1)
	case 3:
		return p + "GUIDED" + c(1)
	case 4:
		return p + "AUTO"
	}
	return p + fmt.Sprintf("%d", raw)
}

// places writes gomp_places_list as OMP_DISPLAY_ENV does: each place's
// CPUs as ranges ("{0:4},{4:4}").
func (d *display) places() (string, error) {
	list := d.ptr("gomp_places_list")
	n := d.sym("gomp_places_list_len", 8)
	setSize := d.sym("gomp_cpuset_size", 8)
	if d.err != nil {
		return "", d.err
	}
	if n > 1<<16 || setSize > maxCPUSetSize || n*setSize > maxPlacesBytes {
		return "", omprt.Errorf(omprt.ErrCorrupt, "gomp: gomp_places_list_len %d places of gomp_cpuset_size %d bytes (at most %d bytes a set, %d in all)", n, setSize, maxCPUSetSize, maxPlacesBytes)
	}
	var b strings.Builder
	for i := uint64(0); i < n; i++ {
		p, err := d.r.mem.Ptr(list+8*i, "gomp_places_list")
		if err != nil {
			return "", err
		}
		set, err := d.r.mem.Read(p, int(setSize))
		if err != nil {
			return "", omprt.Wrap(omprt.ErrReadFailed, err, "gomp: place %d", i)
		}
		b.WriteString("{")
		first, run := true, uint64(0)
		for cpu := uint64(0); cpu < 8*setSize; cpu++ {
			if set[cpu/8]&(1<<(cpu%8)) != 0 {
				if run == 0 {
					if !first {
						b.WriteString(",")
					}
					first = false
					b.WriteString(strconv.FormatUint(cpu, 10))
				}
				run++
			} else {
				if run > 1 {
					b.WriteString(":" + strconv.FormatUint(run, 10))
				}
				run = 0
			}
		}
		if run > 1 {
			b.WriteString(":" + strconv.FormatUint(run, 10))
		}
		if i+1 == n {
			b.WriteString("}")
		} else {
			b.WriteString("},")
		}
		if b.Len() > maxPlacesText {
			return "", omprt.Errorf(omprt.ErrCorrupt, "gomp: OMP_PLACES of gomp_places_list_len %d places longer than %d bytes at place %d", n, maxPlacesText, i)
		}
	}
	return b.String(), nil
}

// Bounds of what places reads and writes. libgomp sizes its cpu sets for
// the CPUs the kernel configures (config/linux/proc.c: CPU_ALLOC_SIZE of
// _SC_NPROCESSORS_CONF, grown until pthread_getaffinity_np takes it), and
// Linux configures at most 8192 (1 KiB a set); OMP_PLACES=threads there
// is 8192 places, 8 MiB of sets and about 60 KB of text. Each bound is
// several times that.
const (
	maxCPUSetSize  = 8 << 10  // bytes of one set: 65536 CPUs
	maxPlacesBytes = 32 << 20 // bytes of all the sets
	maxPlacesText  = 1 << 20  // bytes of OMP_PLACES as displayed
)
