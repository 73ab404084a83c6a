package objfile

import (
	"debug/dwarf"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"

	"github.com/ompd-go/ompd/target"
)

// typeEntry is where the index found a named type.
type typeEntry struct {
	off  dwarf.Offset
	decl bool // only a declaration (incomplete type)
}

// maxTypeDepth bounds how many typedefs, qualifiers and anonymous members
// are followed: real programs need a handful, corrupt DWARF may loop.
const maxTypeDepth = 64

// ErrNoDWARF reports an object without debug information.
var ErrNoDWARF = errors.New("no DWARF debug information")

// loadDWARF reads the object's DWARF once and prepares its type index. The
// index maps "struct x", "union x", "class x", "enum x" and plain typedef
// and base type names to the entry that defines them, the first complete
// definition in .debug_info order winning over a declaration. Types local
// to functions are not indexed. It is filled lazily (see dwarfscan.go):
// lookups scan on until the name they need has a complete definition.
func (o *Object) loadDWARF() {
	o.dw.once.Do(func() {
		f, where := o.f, o.path
		if !o.ownDWARF() {
			// Stripped: the DWARF is in the separate debug file.
			df, err := o.separate()
			if err != nil {
				o.dw.err = fmt.Errorf("%s: %w, and no usable separate debug file: %w", o.path, ErrNoDWARF, err)
				return
			}
			if !hasSection(df, ".debug_info", ".zdebug_info") {
				o.dw.err = fmt.Errorf("%s: %w in it or in its debug file %s", o.path, ErrNoDWARF, o.dbgPath)
				return
			}
			f, where = df, o.dbgPath
		}
		o.dw.where = where
		o.dw.index = make(map[string]typeEntry)
		build, secs, ok, err := loadSections(f)
		if err != nil {
			o.dw.err = fmt.Errorf("%s: %w: %v", where, ErrNoDWARF, err)
			return
		}
		if ok {
			o.dw.build = build
			o.dw.scan = &dieScanner{secs: secs, order: f.ByteOrder}
			return
		}
		d, err := f.DWARF()
		if err != nil {
			o.dw.err = fmt.Errorf("%s: %w: %v", where, ErrNoDWARF, err)
			return
		}
		o.dw.data = d
		o.indexAll()
	})
}

// data returns the dwarf.Data over all of the object's DWARF, made on
// first use, or nil, o.dw.err saying why. Callers hold o.dw.mu.
func (o *Object) data() *dwarf.Data {
	if o.dw.data == nil && o.dw.build != nil {
		d, err := o.dw.build(-1)
		o.dw.build, o.dw.quick = nil, nil
		if err != nil {
			o.dw.err = fmt.Errorf("%s: %w: %v", o.dw.where, ErrNoDWARF, err)
			return nil
		}
		o.dw.data = d
	}
	return o.dw.data
}

// quickData returns a dwarf.Data over at least the units the index has
// scanned: the whole DWARF once made, or else one over the units before
// the scanner's position (made again, further, when the scanner went on).
// Entries read from it are those of the whole DWARF; a reference past its
// end fails to read. Callers hold o.dw.mu.
func (o *Object) quickData() *dwarf.Data {
	if o.dw.data != nil || o.dw.build == nil || o.dw.scan == nil {
		return o.data()
	}
	end := o.dw.scan.u.end
	if o.dw.quick != nil && o.dw.quickEnd >= end {
		return o.dw.quick
	}
	d, err := o.dw.build(end)
	if err != nil {
		return o.data()
	}
	o.dw.quick, o.dw.quickEnd = d, end
	return d
}

// addIndex records a named type entry, a complete definition replacing a
// declaration.
func (o *Object) addIndex(key string, off dwarf.Offset, decl bool, tag dwarf.Tag) {
	add := func(key string) {
		if old, ok := o.dw.index[key]; !ok || (old.decl && !decl) {
			o.dw.index[key] = typeEntry{off: off, decl: decl}
		}
	}
	add(key)
	if tag == dwarf.TagClassType {
		add("struct " + strings.TrimPrefix(key, "class "))
	}
}

// indexed returns the index entry for key, scanning on until key has a
// complete definition or everything is indexed. Callers hold o.dw.mu.
func (o *Object) indexed(key string) (typeEntry, bool) {
	for {
		e, ok := o.dw.index[key]
		if ok && !e.decl || o.dw.scan == nil {
			return e, ok
		}
		for o.dw.scan != nil {
			s, more, err := o.dw.scan.next()
			if err != nil {
				// Data the scanner cannot read: index everything
				// with debug/dwarf's Reader instead.
				o.dw.scan = nil
				clear(o.dw.index)
				if o.data() != nil {
					o.indexAll()
				}
				break
			}
			if !more {
				o.dw.scan = nil
				break
			}
			o.addIndex(s.key, s.off, s.decl, s.tag)
			if !s.decl && strings.HasSuffix(key, s.key[strings.IndexByte(s.key, ' ')+1:]) {
				if e, ok := o.dw.index[key]; ok && !e.decl {
					break
				}
			}
		}
	}
}

// indexAll indexes every named type with debug/dwarf's Reader, for DWARF
// the scanner does not read. An error keeps what was indexed and is
// reported with lookups that fail.
func (o *Object) indexAll() {
	r := o.dw.data.Reader()
	for {
		e, err := r.Next()
		if err != nil {
			o.dw.err = fmt.Errorf("%s: reading DWARF: %w", o.dw.where, err)
			return
		}
		if e == nil {
			return
		}
		if skipsChildren(e.Tag) {
			if e.Children {
				r.SkipChildren()
			}
			continue
		}
		prefix, ok := indexPrefix(e.Tag)
		if !ok {
			continue
		}
		name, _ := e.Val(dwarf.AttrName).(string)
		if name == "" {
			continue
		}
		decl, _ := e.Val(dwarf.AttrDeclaration).(bool)
		o.addIndex(prefix+name, e.Offset, decl, e.Tag)
	}
}

// typeKeys are the index keys tried for a type name as a user writes it.
func typeKeys(name string) []string {
	name = strings.Join(strings.Fields(name), " ")
	for _, p := range []string{"struct ", "union ", "class ", "enum "} {
		if strings.HasPrefix(name, p) {
			return []string{name}
		}
	}
	return []string{name, "struct " + name, "union " + name, "class " + name, "enum " + name}
}

// findType returns the named type (not yet stripped of typedefs). Callers
// hold o.dw.mu.
func (o *Object) findType(name string) (dwarf.Type, bool, error) {
	if o.data() == nil {
		return nil, false, o.dw.err
	}
	best, ok := o.typeEntry(name)
	if !ok {
		return nil, false, o.dw.err
	}
	t, err := o.dw.data.Type(best.off)
	if err != nil {
		return nil, false, fmt.Errorf("%s: type %q: %w", o.path, name, err)
	}
	return t, true, nil
}

// typeEntry returns the index entry of the named type: its first complete
// definition under any of its keys, or else a declaration. Callers hold
// o.dw.mu.
func (o *Object) typeEntry(name string) (typeEntry, bool) {
	var best *typeEntry
	for _, k := range typeKeys(name) {
		if e, ok := o.indexed(k); ok {
			if best == nil || (best.decl && !e.decl) {
				e := e
				best = &e
			}
			if !e.decl {
				break
			}
		}
	}
	if best == nil {
		return typeEntry{}, false
	}
	return *best, true
}

// strip follows typedefs and qualifiers to the underlying type, and
// replaces an incomplete struct, union or class by its complete definition
// when the object has one.
func (o *Object) strip(t dwarf.Type) dwarf.Type {
	for i := 0; i < maxTypeDepth && t != nil; i++ {
		switch tt := t.(type) {
		case *dwarf.TypedefType:
			t = tt.Type
		case *dwarf.QualType:
			t = tt.Type
		case *dwarf.StructType:
			if tt.Incomplete && tt.StructName != "" {
				if e, ok := o.indexed(tt.Kind + " " + tt.StructName); ok && !e.decl {
					if full, err := o.dw.data.Type(e.off); err == nil {
						if st, ok := full.(*dwarf.StructType); ok && !st.Incomplete {
							return st
						}
					}
				}
			}
			return t
		default:
			return t
		}
	}
	return t
}

// typeSize is TypeSize for one object; found false if the object does not
// have the type.
func (o *Object) typeSize(name string) (size uint64, found bool, err error) {
	o.loadDWARF()
	o.dw.mu.Lock()
	defer o.dw.mu.Unlock()
	t, ok, err := o.findType(name)
	if !ok {
		return 0, false, err
	}
	s := o.strip(t)
	if s == nil || s.Size() < 0 {
		return 0, false, nil // declared only, or void
	}
	return uint64(s.Size()), true, nil
}

// TypeSize returns the size in bytes of the named type as the object's
// DWARF describes it. name is a typedef or base type name ("kmp_info_t",
// "int") or "struct x", "union x", "class x", "enum x"; a bare name also
// matches a struct, union, class or enum tag. A missing type is a
// *target.LookupError wrapping target.ErrNotFound.
func (o *Object) TypeSize(name string) (uint64, error) {
	n, ok, err := o.typeSize(name)
	if ok {
		return n, nil
	}
	return 0, notFound("type", name, err)
}

// field is a member located in an object.
type fieldLoc struct {
	byteOff uint64             // offset of the member's containing struct, plus its own byte offset
	base    uint64             // offset of the struct that directly contains the member
	f       *dwarf.StructField // the member
}

// locate finds the member path (dot-separated) in the named type. found
// false means the object lacks the type; a missing member is an error
// wrapping target.ErrNotFound. Callers hold o.dw.mu.
func (o *Object) locate(typeName, path string) (loc fieldLoc, found bool, err error) {
	t, ok, err := o.findType(typeName)
	if !ok {
		return loc, false, err
	}
	cur := o.strip(t)
	if st, ok := cur.(*dwarf.StructType); !ok || st.Incomplete {
		return loc, false, nil
	}
	parts := strings.Split(path, ".")
	var total uint64
	for i, p := range parts {
		st, ok := cur.(*dwarf.StructType)
		if !ok || st.Incomplete {
			return loc, true, fmt.Errorf("%s: %q is not a complete struct or union: %w", o.path, strings.Join(parts[:i], "."), target.ErrNotFound)
		}
		off, f, ok := o.member(st, p, 0)
		if !ok {
			return loc, true, fmt.Errorf("%s: %s has no member %q: %w", o.path, typeName, strings.Join(parts[:i+1], "."), target.ErrNotFound)
		}
		loc.base = total + off - fieldByteOffset(f)
		total += off
		loc.f = f
		cur = o.strip(f.Type)
	}
	loc.byteOff = total
	return loc, true, nil
}

// fieldByteOffset is the byte offset of a member in its struct; for a
// bit-field, of the byte holding its first bit.
func fieldByteOffset(f *dwarf.StructField) uint64 {
	if f.BitSize > 0 && f.ByteSize == 0 && f.BitOffset == 0 && f.DataBitOffset > 0 {
		return uint64(f.DataBitOffset) / 8
	}
	if f.ByteOffset < 0 {
		return 0
	}
	return uint64(f.ByteOffset)
}

// member finds the named member of st, directly or inside anonymous struct
// or union members, and returns its byte offset from the start of st.
func (o *Object) member(st *dwarf.StructType, name string, depth int) (uint64, *dwarf.StructField, bool) {
	if depth > maxTypeDepth {
		return 0, nil, false
	}
	for _, f := range st.Field {
		if f != nil && f.Name == name && f.ByteOffset >= 0 {
			return fieldByteOffset(f), f, true
		}
	}
	for _, f := range st.Field {
		if f == nil || f.Name != "" || f.ByteOffset < 0 {
			continue
		}
		if inner, ok := o.strip(f.Type).(*dwarf.StructType); ok {
			if off, g, ok := o.member(inner, name, depth+1); ok {
				return uint64(f.ByteOffset) + off, g, true
			}
		}
	}
	return 0, nil, false
}

// FieldOffset returns the byte offset of the named member within the named
// struct or union type (see TypeSize for type names). field may be a
// member of an anonymous struct or union member, or a dotted path
// "a.b.c" whose offsets are summed. A bit-field gives the offset of the
// byte holding its first bit.
func (o *Object) FieldOffset(typeName, field string) (uint64, error) {
	off, ok, err := o.fieldOffset(typeName, field)
	if ok && err == nil {
		return off, nil
	}
	if ok {
		return 0, &target.LookupError{Kind: "field", Name: typeName + "." + field, Err: err}
	}
	return 0, notFound("type", typeName, err)
}

func (o *Object) fieldOffset(typeName, field string) (uint64, bool, error) {
	o.loadDWARF()
	o.dw.mu.Lock()
	defer o.dw.mu.Unlock()
	if off, ok := o.quickField(typeName, field); ok {
		return off, true, nil
	}
	loc, ok, err := o.locate(typeName, field)
	if !ok || err != nil {
		return 0, ok, err
	}
	return loc.byteOff, true, nil
}

// BitField returns the position of the named member (see FieldOffset) of
// the named struct type: its offset in bits from the start of the type as
// DW_AT_data_bit_offset counts it, and its width in bits. For a member that
// is not a bit-field it returns its byte offset and size times eight.
func (o *Object) BitField(typeName, field string) (bitOffset, bitSize uint64, err error) {
	bo, bs, ok, err := o.bitField(typeName, field)
	if ok && err == nil {
		return bo, bs, nil
	}
	if ok {
		return 0, 0, &target.LookupError{Kind: "field", Name: typeName + "." + field, Err: err}
	}
	return 0, 0, notFound("type", typeName, err)
}

func (o *Object) bitField(typeName, field string) (uint64, uint64, bool, error) {
	o.loadDWARF()
	o.dw.mu.Lock()
	defer o.dw.mu.Unlock()
	if bit, size, ok := o.quickBitField(typeName, field); ok {
		return bit, size, true, nil
	}
	return o.bitFieldOf(typeName, field)
}

// bitFieldOf is bitField through debug/dwarf's types. Callers hold
// o.dw.mu.
func (o *Object) bitFieldOf(typeName, field string) (uint64, uint64, bool, error) {
	loc, ok, err := o.locate(typeName, field)
	if !ok || err != nil {
		return 0, 0, ok, err
	}
	f := loc.f
	if f.BitSize <= 0 {
		size := int64(0)
		if f.Type != nil {
			size = f.Type.Size()
		}
		if size < 0 {
			size = 0
		}
		return loc.byteOff * 8, uint64(size) * 8, true, nil
	}
	var bit uint64
	switch {
	case f.BitOffset != 0 || f.ByteSize != 0:
		// DWARF 2/3 DW_AT_bit_offset: counted from the most significant
		// bit of a storage unit of ByteSize bytes at ByteOffset.
		storage := f.ByteSize
		if storage == 0 && f.Type != nil {
			storage = f.Type.Size()
		}
		if f.ByteOffset < 0 || storage <= 0 || f.BitOffset < 0 || f.BitOffset+f.BitSize > storage*8 {
			return 0, 0, true, fmt.Errorf("%s: bit-field %s.%s has an invalid position", o.path, typeName, field)
		}
		if o.f.ByteOrder == binary.ByteOrder(binary.BigEndian) {
			bit = uint64(f.ByteOffset)*8 + uint64(f.BitOffset)
		} else {
			bit = uint64(f.ByteOffset)*8 + uint64(storage*8-f.BitOffset-f.BitSize)
		}
	default:
		if f.DataBitOffset < 0 {
			return 0, 0, true, fmt.Errorf("%s: bit-field %s.%s has an invalid position", o.path, typeName, field)
		}
		bit = uint64(f.DataBitOffset)
	}
	return loc.base*8 + bit, uint64(f.BitSize), true, nil
}

func notFound(kind, name string, cause error) error {
	err := target.ErrNotFound
	if cause != nil {
		err = fmt.Errorf("%w (%v)", target.ErrNotFound, cause)
	}
	return &target.LookupError{Kind: kind, Name: name, Err: err}
}

// quickField is fieldOffset for the usual case, read from the entries of
// the types on the path alone: a member named directly in its struct or
// union, at a constant offset, not a bit-field. debug/dwarf's Type reads
// the whole graph of types a struct reaches (for LLVM's team or global
// structs, most of the runtime's types: the better part of a first
// snapshot's work); the member's offset needs only the struct's children.
// ok false leaves the lookup to locate, which also says why it fails.
// Callers hold o.dw.mu.
func (o *Object) quickField(typeName, path string) (off uint64, ok bool) {
	base, m, parent, ok := o.quickLocate(typeName, path)
	if !ok {
		return 0, false
	}
	loc, ok := memberOffset(m, parent)
	return base + loc, ok
}

// quickBitField is bitField for a bit-field placed as DWARF 4 and later
// place them (DW_AT_data_bit_offset), read as quickField reads members.
// Callers hold o.dw.mu.
func (o *Object) quickBitField(typeName, path string) (bit, size uint64, ok bool) {
	base, m, _, ok := o.quickLocate(typeName, path)
	if !ok || m.Val(dwarf.AttrBitOffset) != nil || m.Val(dwarf.AttrByteSize) != nil || m.Val(dwarf.AttrDataMemberLoc) != nil {
		return 0, 0, false
	}
	bs, ok1 := m.Val(dwarf.AttrBitSize).(int64)
	dbo, ok2 := m.Val(dwarf.AttrDataBitOffset).(int64)
	if !ok1 || !ok2 || bs <= 0 || dbo < 0 {
		return 0, 0, false
	}
	return base*8 + uint64(dbo), uint64(bs), true
}

// quickLocate follows the member path from the entries alone and returns
// the offset of the struct that directly contains its last member, that
// member's entry, and the tag of that struct. Callers hold o.dw.mu.
func (o *Object) quickLocate(typeName, path string) (base uint64, m *dwarf.Entry, parent dwarf.Tag, ok bool) {
	e, ok := o.typeEntry(typeName)
	if !ok || e.decl {
		return 0, nil, 0, false
	}
	d := o.quickData()
	if d == nil {
		return 0, nil, 0, false
	}
	r := d.Reader()
	at := e.off
	for {
		name, rest, more := strings.Cut(path, ".")
		st, ok := quickStruct(r, at)
		if !ok {
			return 0, nil, 0, false
		}
		if m, ok = quickMember(r, st, name); !ok {
			return 0, nil, 0, false
		}
		if !more {
			return base, m, st.Tag, true
		}
		loc, ok := memberOffset(m, st.Tag)
		if !ok {
			return 0, nil, 0, false
		}
		base += loc
		if at, ok = m.Val(dwarf.AttrType).(dwarf.Offset); !ok {
			return 0, nil, 0, false
		}
		path = rest
	}
}

// memberOffset is the constant byte offset of member m in its struct or
// union (parent), which a union's members may leave out; ok false for a
// bit-field or a location expression.
func memberOffset(m *dwarf.Entry, parent dwarf.Tag) (uint64, bool) {
	if m.Val(dwarf.AttrBitSize) != nil || m.Val(dwarf.AttrDataBitOffset) != nil || m.Val(dwarf.AttrBitOffset) != nil {
		return 0, false
	}
	switch loc := m.Val(dwarf.AttrDataMemberLoc).(type) {
	case int64:
		return uint64(loc), loc >= 0
	case nil:
		return 0, parent == dwarf.TagUnionType
	}
	return 0, false
}

// quickStruct follows typedefs and qualifiers from the entry at off to a
// complete struct, union or class definition, and returns its entry.
func quickStruct(r *dwarf.Reader, off dwarf.Offset) (*dwarf.Entry, bool) {
	for range maxTypeDepth {
		r.Seek(off)
		e, err := r.Next()
		if err != nil || e == nil {
			return nil, false
		}
		switch e.Tag {
		case dwarf.TagTypedef, dwarf.TagConstType, dwarf.TagVolatileType, dwarf.TagRestrictType:
			next, ok := e.Val(dwarf.AttrType).(dwarf.Offset)
			if !ok {
				return nil, false
			}
			off = next
		case dwarf.TagStructType, dwarf.TagUnionType, dwarf.TagClassType:
			decl, _ := e.Val(dwarf.AttrDeclaration).(bool)
			return e, !decl && e.Children
		default:
			return nil, false
		}
	}
	return nil, false
}

// quickMember returns the first member named name among the children of
// the struct entry st, which r has just read.
func quickMember(r *dwarf.Reader, st *dwarf.Entry, name string) (*dwarf.Entry, bool) {
	for {
		e, err := r.Next()
		if err != nil || e == nil || e.Tag == 0 {
			return nil, false
		}
		if e.Tag == dwarf.TagMember {
			if n, _ := e.Val(dwarf.AttrName).(string); n == name {
				return e, true
			}
		}
		if e.Children {
			r.SkipChildren()
		}
	}
}
