#!/usr/bin/env bash
# make-testdata-core.sh: make the small real cores of testdata/cores, which
# the tests of every package that reads cores check against their truth
# without clang, gcc, gdb or a runtime build (internal/shipped).
#
# Usage: scripts/make-testdata-core.sh KIND...
#   libomp          the nested fixture on LLVM's runtime 19.1.7 with OMPD
#                   support (scripts/build-runtime.sh), OMP_DEBUG=enabled
#   libomp-noompd   the same program on the runtime built without OMPD
#                   support: read through its DWARF
#   libgomp12       the nested fixture compiled with gcc, on libgomp 12.2.0
#   libgomp14       the same on libgomp 14.2.0 (scripts/build-gomp.sh)
#
# Each KIND goes to testdata/cores/KIND-nested/. The program is built in a
# neutral directory with a clean environment (no paths or variables of this
# machine end up in the core), stopped under gdb at stopme, and its core
# written; then the script keeps what the tests need, compressed with zstd
# (testdata/cores/libomp-nested, made before, with gzip):
#   nested.zst       the program, with its debug information
#   LIB.zst          the runtime (libomp.so or libgomp.so.1) without its
#                    debug information (and, where that is shipped apart,
#                    without its symbol table, as distributions ship it)
#                    and with its code (.text) zeroed: the library reads
#                    symbols, headers, data and call-frame information,
#                    never the runtime's code, and the core must match the
#                    file's headers
#   LIB.debug.zst    (libomp-noompd, libgomp*) the runtime's debug
#                    information, which the library's .gnu_debuglink names:
#                    a test finds it next to the library, or leaves it out
#                    to read the runtime as distributions ship it. Only the
#                    compile units that define what the library reads are
#                    kept (internal/shipped/dwarfcut), without line tables
#                    and location lists: a tenth of the size (so a
#                    runtime's frames have no file and line)
#   core.zst         gdb's core, as written
#   truth.json       what the program recorded at the stop
#   display.txt      its OMP_DISPLAY_ENV block
#   core.json        what the tests need to know: see internal/shipped
# and the system libraries the program ran with (the C library, the dynamic
# linker), their code zeroed, in testdata/cores/system-x86_64/BUILD-ID/
# (shared by the cores made with them).
# Run it again after changing the fixtures or the runtime builds (the
# truth changes with them: commit both).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
work=/tmp/ompd-go-testdata
fixture=nested

# zero_sections FILE SECTION...: overwrite the sections' contents with
# zeros, keeping every offset and header.
zero_sections() {
	local file=$1 sec off size
	shift
	for sec in "$@"; do
		read -r off size < <(readelf -SW "$file" | awk -v s="$sec" '$2 == s { print $5, $6 }')
		dd if=/dev/zero of="$file" bs=64K count=$((16#$size)) iflag=count_bytes seek=$((16#$off)) oflag=seek_bytes conv=notrunc status=none
	done
}

# ship_system_lib PATH: put a copy of the system library at PATH, its code
# and read-only data zeroed, in testdata/cores/system-x86_64/BUILD-ID/, and
# print its path relative to a core's directory.
ship_system_lib() {
	local lib=$1 id name dir
	id=$(readelf -n "$lib" | awk '/Build ID:/ { print $3 }')
	name=$(basename "$lib")
	dir=$root/testdata/cores/system-x86_64/$id
	if [[ ! -f $dir/$name.zst ]]; then
		mkdir -p "$dir"
		cp "$lib" "$work/$name.shipped"
		zero_sections "$work/$name.shipped" .text .rodata
		zstd -q -19 -c "$work/$name.shipped" >"$dir/$name.zst"
	fi
	echo "../system-x86_64/$id/$name"
}

make_core() {
	local kind=$1
	# layout: where the library takes the runtime's layout from with the
	# debug file; nodebug: without it ("" when it cannot read the runtime).
	# units: the compile units of the debug file kept.
	# zerocode: whether to zero the runtime's code (libgomp's is read: the
	# instruction a thread waits at tells a futex wait).
	local cc lib libname rtdir inc version runtime layout nodebug="" cflags=() keepdebug=false units=() zerocode=true
	case $kind in
	libomp | libomp-noompd)
		rtdir=$(bash scripts/build-runtime.sh --print-dir)
		cc=clang-19 libname=libomp.so runtime=libomp version=19.1.7 layout="OMPD tables"
		if [[ $kind == libomp-noompd ]]; then
			rtdir=$rtdir/noompd layout=DWARF keepdebug=true
			units=(kmp_runtime.cpp kmp_global.cpp kmp_affinity.cpp kmp_tasking.cpp)
			# As fixtures.BuildWith builds for this variant: no OMPT tool.
			cflags=(-DFX_NO_OMPT_TOOL)
		fi
		lib=$rtdir/lib/libomp.so inc=$rtdir/include
		;;
	libgomp12 | libgomp14)
		rtdir=$(bash scripts/build-gomp.sh --print-dir)
		version=12.2.0
		[[ $kind == libgomp14 ]] && version=14.2.0
		rtdir=$rtdir/$version
		cc=gcc libname=libgomp.so.1 runtime=libgomp layout=DWARF nodebug="known layout table" keepdebug=true zerocode=false
		units=(team.c task.c env.c icv.c)
		lib=$rtdir/lib/libgomp.so.1 inc=$rtdir/include
		;;
	*)
		echo "make-testdata-core: unknown kind $kind" >&2
		exit 2
		;;
	esac
	[[ -f $lib ]] || { echo "make-testdata-core: $lib is not built" >&2; exit 1; }
	local out=$root/testdata/cores/$kind-$fixture
	rm -rf "$work"
	mkdir -p "$work/lib" "$work/src"
	# The runtime as a distribution ships it: its debug information in a
	# file of its own that the library names.
	objcopy --only-keep-debug "$lib" "$work/$libname.debug"
	if $keepdebug; then
		# Stripped as Debian strips libraries: its symbol table is in the
		# debug file too.
		strip --remove-section=.comment --strip-unneeded -o "$work/lib/$libname" "$lib"
		# Cut before the link: it holds the debug file's CRC.
		go run ./internal/shipped/dwarfcut -o "$work/info" "$work/$libname.debug" "${units[@]}"
		objcopy --update-section .debug_info="$work/info" \
			--remove-section=.debug_aranges --remove-section=.debug_names \
			--remove-section=.debug_loclists \
			--remove-section=.debug_line \
			"$work/$libname.debug"
		(cd "$work" && objcopy --add-gnu-debuglink="$libname.debug" "lib/$libname")
	else
		strip --strip-debug -o "$work/lib/$libname" "$lib"
	fi
	[[ $runtime == libgomp ]] && ln -s "$libname" "$work/lib/libgomp.so"
	cp internal/fixtures/testdata/$fixture.c internal/fixtures/testdata/fixture.h "$inc/omp.h" "$work/src/"
	(cd "$work/src" && "$cc" -g -O0 -fopenmp -Wall "${cflags[@]}" -I. $fixture.c \
		-L"$work/lib" -Wl,-rpath,"$work/lib" -o "$work/$fixture")
	(cd "$work" && env -i PATH=/usr/bin:/bin \
		OMP_DEBUG=enabled OMP_DISPLAY_ENV=verbose MALLOC_ARENA_MAX=1 OMP_STACKSIZE=256K \
		OMPD_FIXTURE_TRUTH="$work/truth.json" OMPD_FIXTURE_STDERR="$work/stderr.txt" \
		gdb -nx -batch -ex "set pagination off" -ex "set confirm off" \
		-ex "set startup-with-shell off" -ex "break stopme" -ex run \
		-ex "gcore $work/core" -ex kill ./$fixture >"$work/gdb.txt" 2>&1) || { cat "$work/gdb.txt"; exit 1; }
	rm -rf "$out"
	mkdir -p "$out"
	cp "$work/lib/$libname" "$work/lib.shipped"
	$zerocode && zero_sections "$work/lib.shipped" .text
	zstd -q -19 -c "$work/$fixture" >"$out/$fixture.zst"
	zstd -q -19 -c "$work/lib.shipped" >"$out/$libname.zst"
	if $keepdebug; then
		zstd -q -19 -c "$work/$libname.debug" >"$out/$libname.debug.zst"
	fi
	zstd -q -19 -c "$work/core" >"$out/core.zst"
	cp "$work/truth.json" "$out/truth.json"
	# libgomp prints its block from its constructor, before the program
	# redirects stderr: then it is in gdb's output.
	local from=$work/stderr.txt
	grep -q "OPENMP DISPLAY ENVIRONMENT BEGIN" "$from" || from=$work/gdb.txt
	sed -n '/OPENMP DISPLAY ENVIRONMENT BEGIN/,/OPENMP DISPLAY ENVIRONMENT END/p' "$from" |
		sed 's/[ \t\r]*$//' >"$out/display.txt"
	local debug="" nodebugline=""
	if $keepdebug; then
		debug="\"$libname.debug\""
		nodebugline=$(printf ',\n  "no_debug_layout": "%s"' "$nodebug")
	fi
	# The system libraries the program loaded (the C library and the
	# dynamic linker), shared by the cores made with them: their code
	# zeroed, but the threads' stacks unwind through them with their
	# call-frame information, their functions are named, and with every
	# object there no answer is left open.
	local files="    \"$work/lib/$libname\": \"$libname\"" sys shipped
	for sys in $(ldd "$work/$fixture" | awk '$2 == "=>" && $3 ~ /^\/(usr\/)?lib/ { print $3 } $1 ~ /^\/.*ld-linux/ { print $1 }'); do
		shipped=$(ship_system_lib "$sys")
		files+=$(printf ',\n    "%s": "%s",\n    "%s": "%s"' "$sys" "$shipped" "$(realpath "$sys")" "$shipped")
	done
	cat >"$out/core.json" <<-EOF
		{
		  "fixture": "$fixture",
		  "machine": "x86_64",
		  "runtime": "$runtime",
		  "runtime_version": "$version",
		  "program": "$fixture",
		  "files": {
		$files
		  },
		  "debug_files": [$debug],
		  "layout": "$layout"$nodebugline
		}
	EOF
	du -b "$out"/*
}

[[ $# -gt 0 ]] || { sed -n '2,/^set -e/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 2; }
for kind in "$@"; do
	make_core "$kind"
done
