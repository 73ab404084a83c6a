package summary

import (
	"path"

	"github.com/ompd-go/ompd"
)

// StackKey is a short description of where a thread's stack stands, for
// grouping threads ("how many threads are where"): the functions of its
// frames, innermost first, with each run of runtime frames (and the
// libraries the runtime called) folded into the runtime function the
// program called, and the frames outside every task (a worker's thread
// start) left out. Threads waiting in the same barrier of the same
// region have the same key, in every process of a job: a function without
// a name is "?? in OBJECT", never its address.
func StackKey(frames []ompd.FrameSnapshot) []string {
	var out []string
	placed := false
	for i := 0; i < len(frames); i++ {
		f := frames[i]
		if f.Task == "" && placed {
			break
		}
		placed = placed || f.Task != ""
		if f.Runtime || f.InRuntimeCall {
			j := i
			for j+1 < len(frames) && (frames[j+1].Runtime || frames[j+1].InRuntimeCall) && frames[j+1].Task == f.Task {
				j++
			}
			f, i = frames[j], j
		}
		name := f.Function
		if name == "" {
			// No address: it differs between processes (address-space
			// layout randomization), and keys merge across processes.
			name = "??"
			if f.Object != "" {
				name += " in " + path.Base(f.Object)
			}
		}
		out = append(out, name)
	}
	return out
}
