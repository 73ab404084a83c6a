package delve

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ompd-go/ompd"
	"github.com/ompd-go/ompd/internal/fixtures"
	"github.com/ompd-go/ompd/internal/kmp"
	"github.com/ompd-go/ompd/internal/ompdtest"
	"github.com/ompd-go/ompd/target"
)

// stockCheck is a live process whose symbol lookups also find the
// indirect locks' table the checks need of a stripped runtime, as package
// kmp finds hidden names (see the root package's stock tests).
type stockCheck struct {
	*Process
	rt *kmp.Runtime
}

func (s stockCheck) LookupSymbol(name string) (uint64, error) {
	a, err := s.Process.LookupSymbol(name)
	if err != nil && name == "__kmp_i_lock_table" && errors.Is(err, target.ErrNotFound) {
		return s.rt.LookupHidden(name)
	}
	return a, err
}

// TestLaunchStock runs the nested fixture live on each of Debian's stock
// runtimes (stripped, no debug information), started with and without
// OMP_DEBUG=enabled, and reads it right through its release's table:
// recorded states, or states read from the stacks.
func TestLaunchStock(t *testing.T) {
	for _, info := range fixtures.StockRuntimes(t) {
		for _, tracked := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s-%d/tracked=%v", info.Stock.Suite, info.Stock.Major, tracked), func(t *testing.T) {
				in := info
				var extra []string
				if !tracked {
					in = info.WithoutOMPDebug()
					extra = in.Env
				}
				r := newRunOf(t, fixtures.BuildWith(t, fixtures.Nested, in), fixtures.Nested, extra...)
				p := r.launch(t)
				ctx := testContext(t)
				_, err := p.RunToFunction(ctx, "stopme")
				require.NoError(t, err)
				tr := r.truth(t)
				rt, err := kmp.Open(p)
				require.NoError(t, err)
				as, err := ompd.Open(stockCheck{p, rt.(*kmp.Runtime)})
				require.NoError(t, err)
				defer as.Close()
				assert.Equal(t, ompd.LayoutKnownTable, as.Runtime().Layout)
				checkLive(t, p, as, tr)
				if tracked {
					ompdtest.CheckTruth(t, as, tr)
				} else {
					ompdtest.CheckUntracked(t, as, tr)
				}
			})
		}
	}
}
