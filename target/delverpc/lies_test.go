package delverpc_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"runtime/debug"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ompd-go/ompd"
	"github.com/ompd-go/ompd/internal/fixtures"
	"github.com/ompd-go/ompd/internal/ompdtest"
	"github.com/ompd-go/ompd/target/delverpc"
)

// The harness of this file puts a lying proxy between the client and a
// real headless dlv (on a core of the nested fixture, so that every run
// asks the same questions and gets the same answers): in each run it
// corrupts one answer (a number, a string, an array, the bytes of memory,
// the answer's type or its id, an error instead of the result), stalls it
// past the client's timeout, or cuts the connection in its middle. Each
// run dials through the proxy and walks the whole API (a snapshot with
// backtraces, then every chain); no panic, an answer within lieDeadline,
// every error matching a sentinel of package ompd (and of delverpc for
// Dial), every invariant of ompdtest.Invariants kept.
//
// OMPD_GO_LIES sets how many runs (default defaultLies).

const (
	defaultLies = 50
	lieTimeout  = 300 * time.Millisecond // the client's, per call
	lieDeadline = 60 * time.Second
)

// lie is one corruption: of answer number index (from 1).
type lie struct {
	index int
	kind  int
	rng   *rand.Rand
	what  string
}

// lieKinds are the kinds of lie, by number.
var lieKinds = []string{"number", "string", "array", "memory bytes", "type", "id", "error", "stall", "cut"}

// liar forwards one client's connection to the server at upstream,
// applying l (nil: none) and counting the answers.
type liar struct {
	upstream string
	mu       sync.Mutex
	l        *lie
	answers  int
	done     string // what the lie did
}

func (p *liar) serve(c net.Conn) {
	defer c.Close()
	up, err := net.Dial("tcp", p.upstream)
	if err != nil {
		return
	}
	defer up.Close()
	go func() { _, _ = io.Copy(up, c); up.Close() }()
	dec := json.NewDecoder(up)
	for {
		var msg json.RawMessage
		if err := dec.Decode(&msg); err != nil {
			return
		}
		p.mu.Lock()
		p.answers++
		l := p.l
		hit := l != nil && p.answers == l.index
		p.mu.Unlock()
		out := []byte(msg)
		if hit {
			var what string
			out, what = l.apply(msg)
			p.mu.Lock()
			p.done = what
			p.mu.Unlock()
			switch l.kind {
			case 7: // stall past the client's timeout, then answer
				time.Sleep(2 * lieTimeout)
			case 8: // cut in the middle
				_, _ = c.Write(out[:len(out)/2])
				return
			}
		}
		if _, err := c.Write(append(out, '\n')); err != nil {
			return
		}
	}
}

// apply corrupts the JSON-RPC answer msg.
func (l *lie) apply(msg []byte) ([]byte, string) {
	var env map[string]any
	d := json.NewDecoder(bytes.NewReader(msg))
	d.UseNumber()
	if err := d.Decode(&env); err != nil {
		return msg, "not an object"
	}
	rng := l.rng
	switch l.kind {
	case 5:
		env["id"] = json.Number(strconv.Itoa(rng.IntN(1000) + 1000))
		return mustJSON(env), "answer to another request"
	case 6:
		env["result"], env["error"] = nil, "a lie"
		return mustJSON(env), "an error instead of the result"
	case 7, 8:
		return msg, lieKinds[l.kind]
	}
	var leaves []*leaf
	collect(&leaves, env["result"], func(v any) { env["result"] = v }, "result")
	var picked []*leaf
	for _, lf := range leaves {
		if lf.fits(l.kind) {
			picked = append(picked, lf)
		}
	}
	if len(picked) == 0 {
		return msg, "nothing to change"
	}
	lf := picked[rng.IntN(len(picked))]
	var what string
	switch l.kind {
	case 0:
		v := []string{"0", "-1", "1", "2147483648", "4294967296", "9223372036854775807", "-9223372036854775808",
			"18446744073709551615", "1e308", "0.5"}[rng.IntN(10)]
		lf.set(json.Number(v))
		what = "number " + v
	case 1:
		v := []string{"", "x", strings.Repeat("\xff", 3), strings.Repeat("A", 4096), "0x", "-"}[rng.IntN(6)]
		lf.set(v)
		what = fmt.Sprintf("string %.20q", v)
	case 2:
		a := lf.v.([]any)
		switch rng.IntN(4) {
		case 0:
			lf.set(a[:rng.IntN(len(a)+1)])
			what = "array cut"
		case 1:
			lf.set([]any{})
			what = "array emptied"
		case 2:
			if len(a) > 0 {
				lf.set(append(a, a[rng.IntN(len(a))]))
			}
			what = "array element repeated"
		default:
			if len(a) > 0 {
				big := make([]any, 0, 5000)
				for len(big) < 5000 {
					big = append(big, a...)
				}
				lf.set(big)
			}
			what = "array of 5000"
		}
	case 3:
		b, _ := base64.StdEncoding.DecodeString(lf.v.(string))
		if len(b) > 0 {
			for n := 1 + rng.IntN(4); n > 0; n-- {
				b[rng.IntN(len(b))] = byte(rng.Uint32())
			}
		}
		lf.set(base64.StdEncoding.EncodeToString(b))
		what = "memory bytes changed"
	case 4:
		v := []any{json.Number("7"), "7", []any{}, map[string]any{}, true, nil}[rng.IntN(6)]
		lf.set(v)
		what = fmt.Sprintf("a %T instead", v)
	}
	return mustJSON(env), what + " at " + lf.path
}

// leaf is a value of an answer and how to replace it.
type leaf struct {
	v    any
	set  func(any)
	path string
}

func (lf *leaf) fits(kind int) bool {
	switch v := lf.v.(type) {
	case json.Number:
		return kind == 0 || kind == 4
	case string:
		if kind == 3 {
			return strings.HasSuffix(lf.path, ".Mem") && len(v) > 0
		}
		return kind == 1 || kind == 4
	case []any:
		return kind == 2 || kind == 4
	}
	return kind == 4
}

func collect(out *[]*leaf, v any, set func(any), path string) {
	*out = append(*out, &leaf{v: v, set: set, path: path})
	switch x := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			collect(out, x[k], func(nv any) { x[k] = nv }, path+"."+k)
		}
	case []any:
		for i := range x {
			collect(out, x[i], func(nv any) { x[i] = nv }, path+"["+strconv.Itoa(i)+"]")
		}
	}
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// walkLies dials through the proxy and walks everything, returning what
// broke.
func walkLies(ctx context.Context, addr, exe string) []string {
	tgt, err := delverpc.Dial(ctx, addr, delverpc.WithExecutable(exe), delverpc.WithTimeout(lieTimeout))
	if err != nil {
		return dialProblems(err)
	}
	defer tgt.Close()
	as, err := ompd.Open(tgt)
	if err != nil {
		return ompdtest.SentinelProblems("open", err)
	}
	defer as.Close()
	var out []string
	s, err := as.Snapshot(ctx, ompd.WithBacktraces())
	out = append(out, ompdtest.SentinelProblems("snapshot with backtraces", err)...)
	if err == nil && len(s.Threads) > 1<<20 {
		out = append(out, fmt.Sprintf("%d threads", len(s.Threads)))
	}
	return append(out, ompdtest.Invariants(as)...)
}

// dialProblems: Dial fails with an error of package delverpc.
func dialProblems(err error) []string {
	for _, s := range []error{delverpc.ErrTimeout, delverpc.ErrDisconnected, delverpc.ErrAPIVersion, delverpc.ErrNotMulticlient,
		delverpc.ErrRunning, delverpc.ErrExited} {
		if errors.Is(err, s) {
			return nil
		}
	}
	var se *delverpc.ServerError
	if errors.As(err, &se) {
		return nil
	}
	return []string{fmt.Sprintf("dial: error matches no sentinel: %v", err)}
}

// TestLyingServer runs the harness of this file.
func TestLyingServer(t *testing.T) {
	stop := fixtures.Core(t, fixtures.Nested)
	// Each lie is bounded (lieDeadline); the server, on a core, serves
	// them all, however long the machine takes.
	t.Setenv("OMPD_GO_LIVE_BOUND", "30m")
	srv := fixtures.StartDlvCore(t, stop.Exe, stop.Core)
	count := defaultLies
	if v := os.Getenv("OMPD_GO_LIES"); v != "" {
		n, err := strconv.Atoi(v)
		require.NoError(t, err, "OMPD_GO_LIES")
		count = n
	}
	// A clean run through the proxy: how many answers a walk takes.
	p := &liar{upstream: srv.Addr}
	addr := listen(t, p.serve)
	ctx := context.Background()
	require.Empty(t, walkLies(ctx, addr, stop.Exe), "the clean walk")
	p.mu.Lock()
	answers := p.answers
	p.mu.Unlock()
	require.Greater(t, answers, 10)
	t.Logf("a walk takes %d answers", answers)

	failed := 0
	for i := 0; i < count; i++ {
		rng := rand.New(rand.NewPCG(1, uint64(i)))
		l := &lie{index: 1 + rng.IntN(answers), kind: rng.IntN(len(lieKinds)), rng: rng}
		p.mu.Lock()
		p.l, p.answers, p.done = l, 0, ""
		p.mu.Unlock()
		var problems []string
		done := make(chan struct{})
		go func() {
			defer close(done)
			defer func() {
				if r := recover(); r != nil {
					problems = append(problems, fmt.Sprintf("panic: %v\n%s", r, debug.Stack()))
				}
			}()
			problems = walkLies(ctx, addr, stop.Exe)
		}()
		select {
		case <-done:
		case <-time.After(lieDeadline):
			t.Fatalf("lie %d (answer %d, %s): no answer within %v", i, l.index, lieKinds[l.kind], lieDeadline)
		}
		p.mu.Lock()
		what := p.done
		p.mu.Unlock()
		if len(problems) > 0 {
			if failed++; failed <= 20 {
				if len(problems) > 6 {
					problems = append(problems[:6], fmt.Sprintf("... and %d more", len(problems)-6))
				}
				t.Errorf("lie %d (answer %d: %s):\n\t%s", i, l.index, what, strings.Join(problems, "\n\t"))
			}
		}
	}
}
