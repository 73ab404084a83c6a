package delverpc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/rpc"
	"net/rpc/jsonrpc"
	"regexp"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Errors of the connection to the Delve server. Target methods wrap them, so
// that callers can test with errors.Is.
var (
	// ErrTimeout reports a server that did not answer in time (see
	// WithTimeout): it is hung, stopped, busy running the process for
	// another client, or not a Delve server at all. Later calls fail fast
	// with it until Update gets an answer again.
	ErrTimeout = errors.New("delve server did not answer in time")
	// ErrDisconnected reports a connection that is gone: the server
	// exited, closed the connection, or sent something that is not
	// Delve's JSON-RPC.
	ErrDisconnected = errors.New("connection to the delve server lost")
	// ErrAPIVersion reports a server that does not speak version 2 of
	// Delve's JSON-RPC API (start it with --api-version 2).
	ErrAPIVersion = errors.New("delve server speaks another API version")
	// ErrNotMulticlient reports a server started without
	// --accept-multiclient: it serves one client, and ends (killing a
	// program it started) when that client disconnects.
	ErrNotMulticlient = errors.New("delve server does not accept several clients")
	// ErrRunning reports that the process is running: the user's debugger
	// resumed it. Stop it there (a breakpoint, or an interrupt) and call
	// Update.
	ErrRunning = errors.New("process is running")
	// ErrExited reports that the debugged process has exited.
	ErrExited = errors.New("process has exited")
)

// ServerError is an error the Delve server returned for one request.
type ServerError struct {
	Method string // e.g. "ExamineMemory"
	Msg    string // the server's message
	// Err is ErrExited when the message says the process exited, or nil.
	Err error
}

// Error gives the method and the server's message.
func (e *ServerError) Error() string { return fmt.Sprintf("delve server: %s: %s", e.Method, e.Msg) }

// Unwrap returns Err.
func (e *ServerError) Unwrap() error { return e.Err }

// exitedMsg is how Delve's proc.ErrProcessExited reads.
var exitedMsg = regexp.MustCompile(`^Process \d+ has exited with status -?\d+$`)

// conn is a JSON-RPC connection to a Delve server whose every call is
// bounded by a timeout. net/rpc matches answers to requests by sequence
// number, so an abandoned call (time-out, cancelled context) does not
// disturb later ones; its answer, if it ever comes, is dropped.
type conn struct {
	addr    string
	nc      *limitConn
	rc      *rpc.Client
	timeout time.Duration

	calls atomic.Uint64 // requests sent

	mu     sync.Mutex
	broken error // ErrDisconnected once the connection is gone
	stuck  error // ErrTimeout after a call timed out, until an answer
}

// dial connects to addr; one answer may be at most limit bytes.
func dial(ctx context.Context, addr string, timeout time.Duration, limit int64) (*conn, error) {
	d := net.Dialer{Timeout: timeout}
	nc, err := d.DialContext(ctx, "tcp", addr)
	if errors.Is(err, syscall.ECONNREFUSED) {
		return nil, fmt.Errorf("delverpc: connect to %s: %w (nothing listens there; a headless dlv started without --accept-multiclient stops listening once its first client connected)", addr, err)
	}
	if err != nil {
		return nil, fmt.Errorf("delverpc: connect to %s: %w", addr, err)
	}
	lc := &limitConn{Conn: nc, limit: limit}
	return &conn{addr: addr, nc: lc, rc: jsonrpc.NewClient(lc), timeout: timeout}, nil
}

// maxAnswer bounds what the server may send for one request (the biggest
// answers, State with thousands of threads, take a few MiB), so that a
// broken or hostile server cannot make the client allocate without bound.
const maxAnswer = 64 << 20

// errTooLarge reports an answer larger than the limit.
var errTooLarge = errors.New("answer larger than the limit")

// limitConn fails reads once more than limit bytes arrived since the last
// reset (at the end of each call).
type limitConn struct {
	net.Conn
	limit int64
	n     atomic.Int64
}

// Read reads, failing once the answer under way is over the limit.
func (c *limitConn) Read(b []byte) (int, error) {
	if c.n.Load() > c.limit {
		return 0, fmt.Errorf("%w (%d MiB)", errTooLarge, c.limit>>20)
	}
	n, err := c.Conn.Read(b)
	c.n.Add(int64(n))
	return n, err
}

// call calls RPCServer.method. Unless probe is set, it fails at once while
// an earlier call has timed out without the server answering since.
func (c *conn) call(ctx context.Context, probe bool, method string, args, reply any) error {
	if err := c.ready(probe); err != nil {
		return err
	}
	done := make(chan *rpc.Call, 1)
	c.send(method, args, reply, done)
	call, err := c.wait(ctx, method, done)
	if err != nil {
		return err
	}
	return c.result(method, call)
}

// pipeline is how many requests callEach keeps under way: the server
// answers them in order, and the round trip is paid once per window.
const pipeline = 32

// callEach makes n calls of RPCServer.method, args(i) and reply(i) giving
// each one's, without waiting for each answer before the next request, so
// that a server far away costs one round trip rather than n. It returns
// the first error.
func (c *conn) callEach(ctx context.Context, method string, n int, args, reply func(int) any) error {
	if err := c.ready(false); err != nil {
		return err
	}
	done := make(chan *rpc.Call, pipeline)
	var first error
	for sent, got := 0, 0; got < n; got++ {
		for ; sent < n && sent-got < pipeline; sent++ {
			c.send(method, args(sent), reply(sent), done)
		}
		call, err := c.wait(ctx, method, done)
		if err != nil {
			return err
		}
		if err := c.result(method, call); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// ready fails if the connection is gone or, unless probe, stuck.
func (c *conn) ready(probe bool) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.broken != nil {
		return c.broken
	}
	if c.stuck != nil && !probe {
		return c.stuck
	}
	return nil
}

// send sends a request; its answer goes to done.
func (c *conn) send(method string, args, reply any, done chan *rpc.Call) {
	c.calls.Add(1)
	c.rc.Go("RPCServer."+method, args, reply, done)
}

// wait waits for the next answer on done, at most the timeout.
func (c *conn) wait(ctx context.Context, method string, done chan *rpc.Call) (*rpc.Call, error) {
	timer := time.NewTimer(c.timeout)
	defer timer.Stop()
	select {
	case call := <-done:
		c.mu.Lock()
		c.stuck = nil
		c.mu.Unlock()
		c.nc.n.Store(0)
		return call, nil
	case <-timer.C:
		err := fmt.Errorf("delverpc: %s: %s: %w (%v)", c.addr, method, ErrTimeout, c.timeout)
		c.mu.Lock()
		c.stuck = err
		c.mu.Unlock()
		return nil, err
	case <-ctx.Done():
		return nil, fmt.Errorf("delverpc: %s: %s: %w", c.addr, method, ctx.Err())
	}
}

// result classifies the error of a call that completed.
func (c *conn) result(method string, call *rpc.Call) error {
	if call.Error == nil {
		return nil
	}
	var se rpc.ServerError
	if errors.As(call.Error, &se) {
		e := &ServerError{Method: method, Msg: string(se)}
		if exitedMsg.MatchString(e.Msg) {
			e.Err = ErrExited
		}
		return e
	}
	// Anything else is the transport: EOF, a reset, or an answer that is
	// not JSON-RPC. net/rpc shuts the client down after it.
	err := fmt.Errorf("delverpc: %s: %s: %w: %v", c.addr, method, ErrDisconnected, call.Error)
	if errors.Is(call.Error, rpc.ErrShutdown) || errors.Is(call.Error, io.EOF) || errors.Is(call.Error, io.ErrUnexpectedEOF) {
		err = fmt.Errorf("delverpc: %s: %s: %w (the server closed the connection)", c.addr, method, ErrDisconnected)
	}
	c.mu.Lock()
	c.broken = err
	c.mu.Unlock()
	_ = c.rc.Close()
	return err
}

// close closes the connection; the server and the process stay as they
// are (this is not Delve's Detach).
func (c *conn) close() error {
	c.mu.Lock()
	if c.broken == nil {
		c.broken = fmt.Errorf("delverpc: %s: %w (closed)", c.addr, ErrDisconnected)
	}
	c.mu.Unlock()
	err := c.rc.Close()
	if errors.Is(err, rpc.ErrShutdown) {
		err = nil
	}
	return err
}
