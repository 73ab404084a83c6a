package startenv

import (
	"encoding/binary"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// mem is memory from base up.
type mem struct {
	base uint64
	b    []byte
}

func (m *mem) ReadMemory(buf []byte, addr uint64) error {
	if addr < m.base || addr+uint64(len(buf)) > m.base+uint64(len(m.b)) {
		return errors.New("unmapped")
	}
	copy(buf, m.b[addr-m.base:])
	return nil
}

// stack lays out an initial stack as execve does: argc, argv, envp,
// auxv, then the strings, the program's name last; it returns the memory
// and the auxiliary vector.
func stack(argv, envp []string) (*mem, map[uint64]uint64) {
	const base = 0x7ff000000000
	m := &mem{base: base, b: make([]byte, 3*page)}
	le := binary.LittleEndian
	strs := 2 * page
	put := func(s string) uint64 {
		a := base + uint64(strs)
		copy(m.b[strs:], s+"\x00")
		strs += len(s) + 1
		return a
	}
	var ptrs []uint64
	for _, s := range append(append([]string(nil), argv...), envp...) {
		ptrs = append(ptrs, put(s))
	}
	execfn := put("/bin/prog")
	auxv := map[uint64]uint64{6: page, 25: base + 2*page - 16, atExecfn: execfn, 9: 0x401000}
	w := 0x100
	word := func(v uint64) { le.PutUint64(m.b[w:], v); w += 8 }
	word(uint64(len(argv)))
	for _, p := range ptrs[:len(argv)] {
		word(p)
	}
	word(0)
	for _, p := range ptrs[len(argv):] {
		word(p)
	}
	word(0)
	for _, k := range []uint64{6, 25, atExecfn, 9} {
		word(k)
		word(auxv[k])
	}
	word(atNull)
	word(0)
	return m, auxv
}

// TestFromStack: the environment under the auxiliary vector, in order;
// with an argv holding NAME=VALUE strings too.
func TestFromStack(t *testing.T) {
	m, auxv := stack([]string{"prog", "A=argv"}, []string{"OMP_NUM_THREADS=4", "EMPTY=", "X=a=b"})
	env, err := FromStack(m, binary.LittleEndian, auxv)
	require.NoError(t, err)
	assert.Equal(t, []string{"OMP_NUM_THREADS=4", "EMPTY=", "X=a=b"}, env)

	m, auxv = stack([]string{"prog"}, nil)
	env, err = FromStack(m, binary.LittleEndian, auxv)
	require.NoError(t, err)
	assert.Empty(t, env)
}

// TestFromStackBad: no AT_EXECFN, an AT_EXECFN the stack does not hold, a
// vector with no null below it: errors, not a guess.
func TestFromStackBad(t *testing.T) {
	m, auxv := stack([]string{"prog"}, []string{"A=1"})
	delete(auxv, atExecfn)
	_, err := FromStack(m, binary.LittleEndian, auxv)
	assert.ErrorIs(t, err, ErrNotFound)

	m, auxv = stack([]string{"prog"}, []string{"A=1"})
	auxv[atExecfn] = m.base + 2*page + 1
	_, err = FromStack(m, binary.LittleEndian, auxv)
	assert.ErrorIs(t, err, ErrNotFound, "no vector entry for that name")

	m, auxv = stack([]string{"prog"}, []string{"A=1"})
	// The envp null overwritten: the pointers run into argv's.
	binary.LittleEndian.PutUint64(m.b[0x100+8*3:], 0xdead)
	_, err = FromStack(m, binary.LittleEndian, auxv)
	assert.Error(t, err)
}
