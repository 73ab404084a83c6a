package delverpc

import (
	"context"
	"encoding/json"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestAnswerLimit: an answer larger than the limit breaks the connection
// with an error saying so, instead of being read whole.
func TestAnswerLimit(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	go func() {
		c, err := l.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		dec, enc := json.NewDecoder(c), json.NewEncoder(c)
		for {
			var req struct {
				ID json.RawMessage `json:"id"`
			}
			if dec.Decode(&req) != nil {
				return
			}
			big := strings.Repeat("A", 1<<20)
			if enc.Encode(map[string]any{"id": req.ID, "result": map[string]any{"Mem": big}, "error": nil}) != nil {
				return
			}
		}
	}()
	c, err := dial(context.Background(), l.Addr().String(), 5*time.Second, 64<<10)
	require.NoError(t, err)
	defer c.close()
	var out struct{ Mem []byte }
	err = c.call(context.Background(), false, "ExamineMemory", struct{}{}, &out)
	require.ErrorIs(t, err, ErrDisconnected)
	assert.Contains(t, err.Error(), "larger than the limit")
}
