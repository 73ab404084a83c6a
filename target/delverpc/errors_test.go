package delverpc_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/rpc"
	"net/rpc/jsonrpc"
	"sync"
	"testing"
	"time"

	"github.com/go-delve/delve/service/api"
	"github.com/go-delve/delve/service/rpc2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ompd-go/ompd/target"
	"github.com/ompd-go/ompd/target/delverpc"
)

// listen starts a TCP server on 127.0.0.1 handling each connection with
// serve, closed at the end of the test.
func listen(t *testing.T, serve func(net.Conn)) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			wg.Add(1)
			go func() { defer wg.Done(); serve(c) }()
		}
	}()
	t.Cleanup(func() {
		l.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return l.Addr().String()
}

// fakeServer answers Delve's JSON-RPC methods the way a Delve server of
// the given API version does, for a stopped process with one thread; with
// dieOnRead it drops the connection when asked for memory.
type fakeServer struct {
	apiVersion int
	dieOnRead  bool
	single     bool          // not --accept-multiclient
	threads    int           // threads 1..threads instead of thread 42
	dumping    bool          // a core dump is under way: DumpWait says so, State waits
	dumped     chan struct{} // closed when the dump under way ends
	conn       net.Conn
	mu         sync.Mutex
	calls      []string
}

// RPCServer is the service name Delve registers.
type RPCServer struct{ f *fakeServer }

func (s *RPCServer) note(m string) {
	s.f.mu.Lock()
	s.f.calls = append(s.f.calls, m)
	s.f.mu.Unlock()
}

func (s *RPCServer) GetVersion(_ api.GetVersionIn, out *api.GetVersionOut) error {
	s.note("GetVersion")
	out.APIVersion, out.DelveVersion, out.Backend = s.f.apiVersion, "fake", "native"
	return nil
}

func (s *RPCServer) SetApiVersion(_ api.SetAPIVersionIn, _ *api.SetAPIVersionOut) error {
	s.note("SetApiVersion")
	return nil
}

func (s *RPCServer) IsMulticlient(_ rpc2.IsMulticlientIn, out *rpc2.IsMulticlientOut) error {
	s.note("IsMulticlient")
	out.IsMulticlient = !s.f.single
	return nil
}

func (s *RPCServer) DumpWait(_ rpc2.DumpWaitIn, out *rpc2.DumpWaitOut) error {
	s.note("DumpWait")
	s.f.mu.Lock()
	out.State.Dumping = s.f.dumping
	s.f.mu.Unlock()
	return nil
}

// State answers as Delve's does: while a dump is under way, a State
// asked to wait waits for its end; one asked not to wait is noted apart
// (it would wedge Delve 1.27's server).
func (s *RPCServer) State(in rpc2.StateIn, out *rpc2.StateOut) error {
	if in.NonBlocking {
		s.note("State(NonBlocking)")
	} else {
		s.note("State")
	}
	s.f.mu.Lock()
	dumping, dumped := s.f.dumping, s.f.dumped
	s.f.mu.Unlock()
	if dumping && !in.NonBlocking {
		<-dumped
	}
	th := &api.Thread{ID: 42, PC: 0x401000}
	out.State = &api.DebuggerState{Pid: 42, Threads: []*api.Thread{th}, CurrentThread: th}
	if s.f.threads > 0 {
		out.State.Threads = nil
		for i := 1; i <= s.f.threads; i++ {
			out.State.Threads = append(out.State.Threads, &api.Thread{ID: i, PC: 0x401000})
		}
		out.State.CurrentThread = out.State.Threads[0]
	}
	return nil
}

// ListRegisters gives thread i the thread pointer i*0x1000, except thread
// 7, whose registers it cannot read.
func (s *RPCServer) ListRegisters(in rpc2.ListRegistersIn, out *rpc2.ListRegistersOut) error {
	s.note("ListRegisters")
	if in.ThreadID == 7 {
		return errors.New("could not get registers")
	}
	out.Regs = api.Registers{
		{Name: "Rip", Value: "0x401000", DwarfNumber: 16},
		{Name: "Fs_base", Value: fmt.Sprintf("%#x", in.ThreadID*0x1000), DwarfNumber: 58},
	}
	return nil
}

func (s *RPCServer) ListBreakpoints(_ rpc2.ListBreakpointsIn, out *rpc2.ListBreakpointsOut) error {
	s.note("ListBreakpoints")
	return nil
}

func (s *RPCServer) ExamineMemory(in rpc2.ExamineMemoryIn, out *rpc2.ExaminedMemoryOut) error {
	s.note("ExamineMemory")
	if s.f.dieOnRead {
		s.f.conn.Close()
		return errors.New("gone")
	}
	out.Mem = make([]byte, in.Length)
	return nil
}

func (f *fakeServer) serve(c net.Conn) {
	f.conn = c
	srv := rpc.NewServer()
	if err := srv.Register(&RPCServer{f}); err != nil {
		panic(err)
	}
	srv.ServeCodec(jsonrpc.NewServerCodec(c))
}

func TestDialWrongAddress(t *testing.T) {
	ctx := context.Background()
	// Nothing listens: refused at once.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	l.Close()
	_, err = delverpc.Dial(ctx, addr, delverpc.WithTimeout(2*time.Second))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "connect to "+addr)
	assert.Contains(t, err.Error(), "--accept-multiclient")

	// Something that accepts and never answers: a time-out.
	silent := listen(t, func(c net.Conn) { _, _ = io.Copy(io.Discard, c) })
	start := time.Now()
	_, err = delverpc.Dial(ctx, silent, delverpc.WithTimeout(500*time.Millisecond))
	assert.ErrorIs(t, err, delverpc.ErrTimeout)
	assert.Contains(t, err.Error(), "Delve headless server")
	assert.Less(t, time.Since(start), 30*time.Second)

	// Something that answers but not in JSON-RPC (an SSH server, say).
	chatty := listen(t, func(c net.Conn) { _, _ = c.Write([]byte("SSH-2.0-OpenSSH_9.2\r\n")); time.Sleep(time.Second) })
	_, err = delverpc.Dial(ctx, chatty, delverpc.WithTimeout(5*time.Second))
	assert.ErrorIs(t, err, delverpc.ErrDisconnected)

	// A cancelled context.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	_, err = delverpc.Dial(cctx, silent)
	assert.ErrorIs(t, err, context.Canceled)
}

// TestDialAPIVersion: a server of another API version is refused before
// anything else is asked, and without changing its version.
func TestDialAPIVersion(t *testing.T) {
	f := &fakeServer{apiVersion: 1}
	addr := listen(t, f.serve)
	_, err := delverpc.Dial(context.Background(), addr, delverpc.WithTimeout(5*time.Second))
	require.ErrorIs(t, err, delverpc.ErrAPIVersion)
	assert.Contains(t, err.Error(), "--api-version 2")
	f.mu.Lock()
	defer f.mu.Unlock()
	assert.Equal(t, []string{"GetVersion"}, f.calls, "no SetApiVersion, nothing else")
}

// TestServerDropsConnection: the server goes away in the middle of an
// answer; the read fails with ErrDisconnected, and so does everything
// after it, at once.
func TestServerDropsConnection(t *testing.T) {
	f := &fakeServer{apiVersion: 2, dieOnRead: true}
	addr := listen(t, f.serve)
	tgt, err := delverpc.Dial(context.Background(), addr, delverpc.WithTimeout(5*time.Second))
	require.NoError(t, err)
	defer tgt.Close()
	err = tgt.ReadMemory(make([]byte, 8), 0x1000)
	require.ErrorIs(t, err, delverpc.ErrDisconnected)
	var re *target.ReadError
	assert.True(t, errors.As(err, &re))
	start := time.Now()
	_, err = tgt.Update(context.Background())
	assert.ErrorIs(t, err, delverpc.ErrDisconnected)
	_, err = tgt.LookupSymbol("__kmp_threads")
	assert.ErrorIs(t, err, delverpc.ErrDisconnected)
	assert.Less(t, time.Since(start), time.Second, "fails fast")
}

// TestServerHangs: a server that stops answering times out once; later
// calls fail at once with the same error instead of each waiting.
func TestServerHangs(t *testing.T) {
	f := &fakeServer{apiVersion: 2}
	hang := make(chan struct{})
	addr := listen(t, func(c net.Conn) {
		f.conn = c
		srv := rpc.NewServer()
		if err := srv.RegisterName("RPCServer", &hangingServer{RPCServer{f}, hang}); err != nil {
			panic(err)
		}
		srv.ServeCodec(jsonrpc.NewServerCodec(c))
	})
	t.Cleanup(func() { close(hang) }) // before the listener's cleanup
	tgt, err := delverpc.Dial(context.Background(), addr, delverpc.WithTimeout(300*time.Millisecond))
	require.NoError(t, err)
	defer tgt.Close()
	err = tgt.ReadMemory(make([]byte, 8), 0x1000)
	require.ErrorIs(t, err, delverpc.ErrTimeout)
	start := time.Now()
	for i := 0; i < 10; i++ {
		err = tgt.ReadMemory(make([]byte, 8), 0x2000)
		require.ErrorIs(t, err, delverpc.ErrTimeout)
	}
	assert.Less(t, time.Since(start), 250*time.Millisecond, "later reads fail fast")
}

// hangingServer never answers ExamineMemory.
type hangingServer struct {
	RPCServer
	hang chan struct{}
}

func (s *hangingServer) ExamineMemory(in rpc2.ExamineMemoryIn, out *rpc2.ExaminedMemoryOut) error {
	<-s.hang
	return errors.New("late")
}

// TestDialSingleClient: a server that serves one client only is refused
// with an error that says what happened.
func TestDialSingleClient(t *testing.T) {
	f := &fakeServer{apiVersion: 2, single: true}
	addr := listen(t, f.serve)
	_, err := delverpc.Dial(context.Background(), addr, delverpc.WithTimeout(5*time.Second))
	require.ErrorIs(t, err, delverpc.ErrNotMulticlient)
	assert.Contains(t, err.Error(), "--accept-multiclient")
	f.mu.Lock()
	defer f.mu.Unlock()
	assert.Equal(t, []string{"GetVersion", "IsMulticlient"}, f.calls)
}

// TestManyThreadsPipelined: the registers of many threads are asked for
// without waiting for each answer, come back to the right threads, and a
// thread whose registers the server cannot read keeps an unknown (zero)
// thread pointer instead of failing the list.
func TestManyThreadsPipelined(t *testing.T) {
	f := &fakeServer{apiVersion: 2, threads: 300}
	addr := listen(t, f.serve)
	tgt, err := delverpc.Dial(context.Background(), addr, delverpc.WithTimeout(5*time.Second))
	require.NoError(t, err)
	defer tgt.Close()
	ths, err := tgt.Threads()
	require.NoError(t, err)
	require.Len(t, ths, 300)
	for _, th := range ths {
		if th.ID == 7 {
			assert.Zero(t, th.Pointer)
			continue
		}
		assert.Equal(t, th.ID*0x1000, th.Pointer, "thread %d", th.ID)
	}
	_, err = tgt.ThreadRegisters(7)
	assert.ErrorIs(t, err, target.ErrNoMemory)
	r, err := tgt.ThreadRegisters(8)
	require.NoError(t, err)
	pc, ok := r.PC()
	assert.True(t, ok)
	assert.Equal(t, uint64(0x401000), pc)
	_, err = tgt.LookupThreadLocal(7, "x")
	assert.ErrorIs(t, err, target.ErrUnsupported)
}

// TestNoStateWhileDumping: while the server writes a core dump, Update
// answers ErrRunning, saying why, without ever asking State with
// NonBlocking, which would leave Delve 1.27's dump mutex locked and the
// server wedged (dumpstate.md); once the dump is done it reads the stop
// again.
func TestNoStateWhileDumping(t *testing.T) {
	f := &fakeServer{apiVersion: 2}
	addr := listen(t, f.serve)
	ctx := context.Background()
	tgt, err := delverpc.Dial(ctx, addr, delverpc.WithTimeout(5*time.Second))
	require.NoError(t, err)
	defer tgt.Close()

	f.mu.Lock()
	f.dumping, f.dumped, f.calls = true, make(chan struct{}), nil
	f.mu.Unlock()
	for range 2 {
		_, err = tgt.Update(ctx)
		require.ErrorIs(t, err, delverpc.ErrRunning)
		assert.Contains(t, err.Error(), "dumping a core")
	}
	f.mu.Lock()
	assert.Equal(t, []string{"State", "DumpWait", "DumpWait"}, f.calls,
		"one State waiting for the dump's end, no State that does not wait")
	f.dumping, f.calls = false, nil
	close(f.dumped)
	f.mu.Unlock()

	_, err = tgt.Update(ctx)
	require.NoError(t, err)
	_, err = tgt.Threads()
	require.NoError(t, err)
	f.mu.Lock()
	defer f.mu.Unlock()
	assert.NotContains(t, f.calls, "State(NonBlocking)")
}
