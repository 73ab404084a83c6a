package fakeruntime

import (
	"encoding/binary"
	"errors"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ompd-go/ompd/target"
)

var configs = []Config{
	{ByteOrder: binary.LittleEndian, Sizes: target.LP64},
	{ByteOrder: binary.BigEndian, Sizes: target.LP64},
	{ByteOrder: binary.LittleEndian, Sizes: target.ILP32},
	{ByteOrder: binary.BigEndian, Sizes: target.ILP32, Tiny: true},
}

func TestTargetMemory(t *testing.T) {
	for _, cfg := range configs {
		t.Run(cfg.Name(), func(t *testing.T) {
			tg := NewTarget(cfg)
			a := tg.Alloc(10)
			if !cfg.Tiny {
				assert.Zero(t, a%PageSize, "page aligned")
				// The whole page reads, the guard page after it does not.
				require.NoError(t, tg.ReadMemory(make([]byte, PageSize), a))
				var re *target.ReadError
				err := tg.ReadMemory(make([]byte, 1), a+PageSize)
				require.ErrorAs(t, err, &re)
				assert.ErrorIs(t, err, target.ErrNoMemory)
			} else {
				assert.NotZero(t, a%PageSize, "tiny regions are not page aligned")
				assert.Error(t, tg.ReadMemory(make([]byte, PageSize), a&^(PageSize-1)), "a whole page of tiny regions does not read")
				assert.Error(t, tg.ReadMemory(make([]byte, 11), a), "one byte past a tiny region")
				assert.Error(t, tg.ReadMemory(make([]byte, 1), a-1), "one byte before a tiny region")
			}
			if cfg.Sizes.Pointer == 4 {
				assert.Less(t, a, uint64(1)<<32)
			}
			tg.PutUint(a, 4, 0x01020304)
			b, err := tg.Peek(a, 4)
			require.NoError(t, err)
			want := make([]byte, 4)
			cfg.ByteOrder.PutUint32(want, 0x01020304)
			assert.Equal(t, want, b)
			assert.Equal(t, uint64(0x01020304), tg.Uint(a, 4))

			tg.ResetCounters()
			buf := make([]byte, 8)
			require.NoError(t, tg.ReadMemory(buf, a))
			_ = tg.ReadMemory(buf, 8) // unmapped
			assert.Equal(t, int64(2), tg.Reads())
			assert.Equal(t, int64(16), tg.BytesRead())

			// Overflowing and zero-length reads.
			assert.ErrorIs(t, tg.ReadMemory(make([]byte, 16), ^uint64(7)), target.ErrNoMemory)
			assert.NoError(t, tg.ReadMemory(nil, 0))

			// Writes: read-only, unmapped, all or nothing.
			require.NoError(t, tg.WriteMemory(a, []byte{9}))
			tg.SetReadOnly(true)
			err = tg.WriteMemory(a, []byte{1})
			assert.ErrorIs(t, err, target.ErrReadOnly)
			assert.NoError(t, tg.Poke(a, []byte{7}), "Poke ignores read-only")
			tg.SetReadOnly(false)
			assert.ErrorIs(t, tg.WriteMemory(8, []byte{1}), target.ErrNoMemory)
			assert.Equal(t, byte(7), must(tg.Peek(a, 1))[0])
		})
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

func TestTargetMapSpansRegions(t *testing.T) {
	tg := NewTarget(Config{})
	require.NoError(t, tg.Map(0x1000, 0x1000))
	require.NoError(t, tg.Map(0x2000, 0x1000))
	assert.Error(t, tg.Map(0x2800, 16), "overlap")
	require.NoError(t, tg.Poke(0x1ffe, []byte{1, 2, 3, 4}))
	b := make([]byte, 4)
	require.NoError(t, tg.ReadMemory(b, 0x1ffe), "adjacent regions read as one")
	assert.Equal(t, []byte{1, 2, 3, 4}, b)
	assert.True(t, tg.Unmap(0x2000))
	assert.False(t, tg.Mapped(0x1ffe, 4))
	assert.ErrorIs(t, tg.ReadMemory(b, 0x1ffe), target.ErrNoMemory)
}

func TestTargetSymbolsThreadsTypes(t *testing.T) {
	tg := NewTarget(Config{})
	_, err := tg.LookupSymbol("nope")
	var le *target.LookupError
	require.ErrorAs(t, err, &le)
	assert.ErrorIs(t, err, target.ErrNotFound)
	tg.SetSymbol("x", 42)
	assert.Equal(t, uint64(42), must(tg.LookupSymbol("x")))
	assert.True(t, tg.DeleteSymbol("x"))
	_, err = tg.LookupSymbol("x")
	assert.ErrorIs(t, err, target.ErrNotFound)

	tg.AddThread(target.Thread{ID: 1, Pointer: 0x100})
	tg.AddThread(target.Thread{ID: 2, Pointer: 0x200})
	tg.SetThreadLocal(1, "v", 0x1234)
	assert.Equal(t, uint64(0x1234), must(tg.LookupThreadLocal(1, "v")))
	_, err = tg.LookupThreadLocal(2, "v")
	assert.ErrorIs(t, err, target.ErrNoMemory)
	_, err = tg.LookupThreadLocal(3, "v")
	assert.ErrorIs(t, err, target.ErrNoThread)
	_, err = tg.LookupThreadLocal(1, "w")
	assert.ErrorIs(t, err, target.ErrNotFound)
	tg.RemoveThread(2)
	assert.Len(t, must(tg.Threads()), 1)

	_, err = tg.TypeSize("kmp_info_t")
	assert.ErrorIs(t, err, target.ErrNotFound)
	tg.SetTypeSize("kmp_info_t", 99)
	tg.SetFieldOffset("kmp_info_t", "th", 16)
	tg.SetBitField("f", "b", 3, 1)
	assert.Equal(t, uint64(99), must(tg.TypeSize("kmp_info_t")))
	assert.Equal(t, uint64(16), must(tg.FieldOffset("kmp_info_t", "th")))
	bit, width, err := tg.BitField("f", "b")
	require.NoError(t, err)
	assert.Equal(t, [2]uint64{3, 1}, [2]uint64{bit, width})
	_, err = tg.FieldOffset("kmp_info_t", "nope")
	assert.ErrorIs(t, err, target.ErrNotFound)

	f := tg.AddFunction("fn", 10)
	name, ok := tg.SymbolAt(f + 9)
	assert.True(t, ok)
	assert.Equal(t, "fn", name)
	_, ok = tg.SymbolAt(f + 10)
	assert.False(t, ok)
	assert.Equal(t, f, must(tg.LookupSymbol("fn")))

	fault := errors.New("injected")
	a := tg.Alloc(8)
	tg.SetReadFault(func(addr uint64, size int) error { return fault })
	assert.ErrorIs(t, tg.ReadMemory(make([]byte, 8), a), fault)
	tg.SetReadFault(nil)
	assert.NoError(t, tg.ReadMemory(make([]byte, 8), a))
}

// The layout must differ from LLVM's, keep every member inside its struct,
// and put the frame flags where OMPD readers expect them.
func TestLayout(t *testing.T) {
	for _, ptr := range []int{4, 8} {
		l := NewLayout(ptr)
		for name, s := range l.Structs {
			for f, fl := range s.Fields {
				assert.LessOrEqual(t, fl.Off+fl.Size, s.Size, "%s.%s", name, f)
			}
		}
		assert.NotZero(t, l.Off("kmp_info_t", "th"), "th is not first, unlike LLVM")
		assert.NotZero(t, l.Off("kmp_team_p", "t"))
		ex, en := l.Field("ompt_frame_t", "exit_frame"), l.Field("ompt_frame_t", "enter_frame")
		assert.Equal(t, max(ex.Off+ex.Size, en.Off+en.Size), l.Off("ompt_frame_t", "exit_frame_flags"))
		assert.Equal(t, l.Off("ompt_frame_t", "exit_frame_flags")+4, l.Off("ompt_frame_t", "enter_frame_flags"))
		assert.Equal(t, uint64(ptr), l.Field("kmp_info_t", "th.th_info.ds.ds_thread").Size)
		tabs := l.Tables(binary.BigEndian)
		assert.Equal(t, l.Off("kmp_base_info_t", "th_team"), tabs["ompd_access__kmp_base_info_t__th_team"])
		assert.Equal(t, l.Size("kmp_info_t"), tabs["ompd_sizeof__kmp_info_t"])
		assert.Equal(t, uint64(8), tabs["ompd_sizeof__ompd_state"])
		assert.Contains(t, tabs, "ompd_bitfield__kmp_tasking_flags_t__freed")
	}
}

func TestRuntimeBuilders(t *testing.T) {
	for _, cfg := range configs {
		t.Run(cfg.Name(), func(t *testing.T) {
			s := Nested(cfg)
			rt := s.RT
			// Tables are in the target's byte order and symbols point at them.
			for _, n := range rt.TableNames() {
				a, err := s.T.LookupSymbol(n)
				require.NoError(t, err, n)
				assert.Equal(t, rt.L.Tables(cfg.ByteOrder)[n], s.T.Uint(a, 8), n)
			}
			// The bitfield tables hold the memory image of the flag.
			img, err := s.T.Peek(rt.TableAddr("ompd_bitfield__kmp_tasking_flags_t__final"), 4)
			require.NoError(t, err)
			assert.Equal(t, rt.L.FlagMask("final", cfg.ByteOrder), img)

			assert.Equal(t, Explicit|Included|Final|Started|Executing, s.TaskB.Flags())
			assert.Equal(t, Explicit|Untied|Started|Executing, s.TaskA.Flags())
			s.TaskA.SetFreed(true)
			assert.True(t, s.TaskA.Flags()&Freed != 0)
			assert.Equal(t, s.TaskBICVs, s.TaskB.ICVs())
			assert.Equal(t, s.InitialICVs, s.Outer.Implicit[3].ICVs())

			assert.Equal(t, int64(16), rt.Global("__kmp_threads_capacity"))
			assert.Equal(t, uint64(1), rt.OMPDState())
			rt.SetOMPDState(0)
			assert.Equal(t, uint64(0), rt.OMPDState())
			assert.Equal(t, s.Threads[2].Addr, s.T.Ptr(rt.ThreadsArray()+2*uint64(rt.Ptr())))
			assert.Equal(t, s.Serial.Addr, s.Threads[2].Get("th_team"))
			assert.Equal(t, uint64(5), s.Serial.Get("t_level"))
			assert.Equal(t, s.Serial.LWT[0], s.Serial.Get("ompt_serialized_team_info"))
			s.Serial.PopLevel()
			assert.Equal(t, uint64(4), s.Serial.Get("t_level"))
			assert.Equal(t, s.Serial.LWT[0], s.Serial.Get("ompt_serialized_team_info"))
			assert.Len(t, s.Serial.LWT, 1)

			gv, err := s.T.LookupThreadLocal(LWPOf(3), "__kmp_gtid")
			require.NoError(t, err)
			assert.Equal(t, uint64(3), s.T.Uint(gv, 4))

			// Growing the thread table keeps the entries.
			th := rt.NewThread(40, 0x1000, 0)
			assert.GreaterOrEqual(t, rt.Global("__kmp_threads_capacity"), int64(41))
			assert.Equal(t, th.Addr, s.T.Ptr(rt.ThreadsArray()+40*uint64(rt.Ptr())))
			assert.Equal(t, s.Threads[1].Addr, s.T.Ptr(rt.ThreadsArray()+uint64(rt.Ptr())))

			for _, o := range rt.Objects() {
				assert.True(t, s.T.Mapped(o.Addr, o.Size), "%s at %#x", o.Kind, o.Addr)
			}
			rt.DropTables()
			_, err = s.T.LookupSymbol("ompd_sizeof__kmp_info_t")
			assert.ErrorIs(t, err, target.ErrNotFound)
			rt.RegisterDWARF()
			off, err := s.T.FieldOffset("kmp_base_team_t", "t_level")
			require.NoError(t, err)
			assert.Equal(t, rt.L.Off("kmp_base_team_t", "t_level"), off)
		})
	}
}

func TestTargetConcurrent(t *testing.T) {
	s := Nested(Config{})
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			buf := make([]byte, 64)
			for i := 0; i < 200; i++ {
				for _, o := range s.RT.Objects() {
					_ = s.T.ReadMemory(buf[:min(len(buf), o.Size)], o.Addr)
				}
				if g == 0 {
					s.Threads[1].SetState(int64(i), 0)
					s.T.AddThread(target.Thread{ID: 9000, Pointer: uint64(i)})
				}
				_, _ = s.T.Threads()
				_, _ = s.T.LookupSymbol("__kmp_threads")
			}
		}(g)
	}
	wg.Wait()
	assert.Positive(t, s.T.Reads())
}
