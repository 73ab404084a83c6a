#!/usr/bin/env bash
# make-arch-cores.sh: make cores of the fixture programs on other machines
# (aarch64, ppc64le, s390x), for the tests of internal/arch's machines.
#
# Usage: scripts/make-arch-cores.sh OUT [--testdata DIR] [ARCH...]
#
# For each machine (Go's names: arm64, ppc64le, s390x; all three by
# default) it builds the programs with Debian's cross compilers against
# GCC's libgomp as Debian ships it (stripped; libgomp1-*-cross) and against
# LLVM's libomp 19.1.7 cross-built with OMPD support from the source
# scripts/build-runtime.sh keeps (clang-19 --target; cached next to that
# build), runs each under qemu-user until the program's stopme aborts it
# (OMPD_FIXTURE_ABORT=1), and keeps the core qemu writes. Its notes are
# qemu's: one NT_PRSTATUS per thread, NT_AUXV, no NT_FILE and no
# NT_ARM_TLS; the program copies its /proc/self/maps beside it, from
# which the tests make the cores a kernel would write (see
# fixtures.AugmentQemuCore). gdb-multiarch's backtraces of every thread
# of those are kept for the tests to compare frame for frame.
#
# It writes, for machine ARCH and case CASE (libgomp-nested,
# libgomp-waits, libgomp-tasks, libomp-nested, libomp-tasks):
#   OUT/ARCH/root/          the machine's files as the program saw them:
#                           lib/ (the C library, the dynamic linker,
#                           libgomp), opt/ompd-go/lib/libomp.so,
#                           opt/ompd-go/bin/CASE (the programs)
#   OUT/ARCH/CASE/core      qemu's core
#   OUT/ARCH/CASE/maps.txt  the program's /proc/self/maps at the stop
#   OUT/ARCH/CASE/truth.json, display.txt   what the program recorded
#   OUT/ARCH/CASE/gdb.txt   gdb-multiarch's "thread apply all bt"
# With --testdata DIR it also writes the small copy checked in under DIR
# (internal/fixtures/testdata/arch): cores, programs and libraries
# compressed with zstd, the libraries without their debug information (but
# their .debug_frame, the only call-frame information of some) and
# with the code that no thread of the cores stopped in zeroed (only the
# libraries' symbols, headers, data and call-frame information are read,
# and the code where a thread stopped, to tell a system call).
#
# Everything is made under /tmp/ompd-go-arch (a neutral path, which the
# cores and the programs' debug information name) from a clean
# environment. It installs what it needs with apt-get. About a minute per
# machine, plus a minute for each libomp the first time.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
# shellcheck source=apt-src.sh
. scripts/apt-src.sh

log() { echo "make-arch-cores: $*" >&2; }

out=""
testdata=""
archs=()
while (($#)); do
	case "$1" in
	--testdata) testdata="$2"; shift 2 ;;
	-*) log "unknown option $1"; exit 2 ;;
	*) if [[ -z "$out" ]]; then out="$1"; else archs+=("$1"); fi; shift ;;
	esac
done
[[ -n "$out" ]] || { log "usage: $0 OUT [--testdata DIR] [ARCH...]"; exit 2; }
((${#archs[@]})) || archs=(arm64 ppc64le s390x)
mkdir -p "$out"
out=$(cd "$out" && pwd)
if [[ -n "$testdata" ]]; then
	mkdir -p "$testdata"
	testdata=$(cd "$testdata" && pwd)
fi

# triplet, qemu's name and Debian's architecture of each machine.
declare -A triplet=([arm64]=aarch64-linux-gnu [ppc64le]=powerpc64le-linux-gnu [s390x]=s390x-linux-gnu)
declare -A qemu=([arm64]=aarch64 [ppc64le]=ppc64le [s390x]=s390x)
declare -A debarch=([arm64]=arm64 [ppc64le]=ppc64el [s390x]=s390x)
# The host's SYS_futex, which /proc shows for a guest thread asleep in one.
host_futex=$(printf '#include <sys/syscall.h>\nSYS_futex\n' | cpp -P | tail -1)

pkgs=(qemu-user gdb-multiarch zstd clang-19 cmake ninja-build)
for a in "${archs[@]}"; do
	[[ -n "${triplet[$a]:-}" ]] || { log "unknown machine $a (arm64, ppc64le, s390x)"; exit 2; }
	pkgs+=("gcc-${triplet[$a]}" "g++-${triplet[$a]}" "libgomp1-${debarch[$a]}-cross")
done
apt_install_missing "${pkgs[@]}"

# LLVM's OpenMP source, as scripts/build-runtime.sh keeps it.
rt=$(bash scripts/build-runtime.sh --print-dir)
bash scripts/build-runtime.sh
src="$rt/work/src/openmp"
[[ -d "$src/runtime" ]] || { log "no LLVM OpenMP source in $src"; exit 1; }

# cross_libomp ARCH: builds (once) LLVM's libomp for ARCH with OMPD and
# OMPT support and debug information; prints its directory.
cross_libomp() {
	local a=$1 t=${triplet[$1]} dir="$rt-cross/$1"
	if [[ -f "$dir/stamp" && -f "$dir/lib/libomp.so" ]]; then
		echo "$dir"
		return
	fi
	log "cross-building libomp for $a (about a minute)"
	rm -rf "$dir"
	mkdir -p "$dir/lib" "$dir/include"
	cat >"$dir/toolchain.cmake" <<-EOF
		set(CMAKE_SYSTEM_NAME Linux)
		set(CMAKE_SYSTEM_PROCESSOR ${t%%-*})
		set(CMAKE_C_COMPILER clang-19)
		set(CMAKE_CXX_COMPILER clang++-19)
		set(CMAKE_ASM_COMPILER clang-19)
		set(CMAKE_C_COMPILER_TARGET $t)
		set(CMAKE_CXX_COMPILER_TARGET $t)
		set(CMAKE_ASM_COMPILER_TARGET $t)
		set(CMAKE_FIND_ROOT_PATH /usr/$t)
		set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
		set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
		set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
	EOF
	cmake -S "$src" -B "$dir/build" -G Ninja -DCMAKE_TOOLCHAIN_FILE="$dir/toolchain.cmake" \
		-DCMAKE_BUILD_TYPE=RelWithDebInfo -DLIBOMP_OMPT_SUPPORT=ON -DLIBOMP_OMPD_SUPPORT=ON \
		-DOPENMP_ENABLE_LIBOMPTARGET=OFF -DLIBOMP_USE_HWLOC=OFF -DOPENMP_ENABLE_TESTING=OFF \
		>"$dir/cmake.log" 2>&1 || { tail -30 "$dir/cmake.log" >&2; exit 1; }
	ninja -C "$dir/build" omp >"$dir/ninja.log" 2>&1 || { tail -30 "$dir/ninja.log" >&2; exit 1; }
	cp -L "$dir/build/runtime/src/libomp.so" "$dir/lib/"
	cp "$dir/build/runtime/src/omp.h" "$dir/include/"
	rm -rf "$dir/build"
	echo "19.1.7 $t" >"$dir/stamp"
	echo "$dir"
}

# needed LIB...: the shared objects the given ones need, from the
# machine's cross directory, recursively (base names).
needed() {
	local t=$1
	shift
	local todo=("$@") seen=() n f
	while ((${#todo[@]})); do
		f=${todo[0]}
		todo=("${todo[@]:1}")
		for n in "${seen[@]}"; do [[ "$n" == "$(basename "$f")" ]] && continue 2; done
		seen+=("$(basename "$f")")
		while read -r n; do
			[[ -e "/usr/$t/lib/$n" ]] && todo+=("/usr/$t/lib/$n")
		done < <(readelf -dW "$f" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
	done
	printf '%s\n' "${seen[@]}"
}

work=/tmp/ompd-go-arch
exec 9>"$work.lock"
flock 9
fixtures=internal/fixtures/testdata
for a in "${archs[@]}"; do
	t=${triplet[$a]}
	omp=$(cross_libomp "$a")
	w="$work/$a"
	sysroot="$w/root"
	rm -rf "$w" "$out/$a"
	mkdir -p "$w/src/llvm" "$sysroot/lib" "$sysroot/opt/ompd-go/lib" "$sysroot/opt/ompd-go/bin" "$out/$a"
	cp "$fixtures"/{fixture.h,nested.c,waits.c,tasks.c} "$w/src/"
	cp "$omp/include/omp.h" "$w/src/llvm/"
	cp -L "$omp/lib/libomp.so" "$sysroot/opt/ompd-go/lib/"
	cases=()
	# The programs, built in $w/src so that their debug information
	# names no path of this machine.
	for p in nested waits tasks; do
		(cd "$w/src" && "$t-gcc" -g -O0 -fopenmp -Wall -I. "$p.c" -o "$sysroot/opt/ompd-go/bin/libgomp-$p")
		cases+=("libgomp-$p")
	done
	for p in nested tasks; do
		(cd "$w/src" && clang-19 --target="$t" -g -O0 -fopenmp -Wall -I. -Illvm "$p.c" \
			-L"$sysroot/opt/ompd-go/lib" -Wl,-rpath,/opt/ompd-go/lib -o "$sysroot/opt/ompd-go/bin/libomp-$p")
		cases+=("libomp-$p")
	done
	# What they load, from the cross directory.
	for n in $(needed "$t" "$sysroot"/opt/ompd-go/bin/* "$sysroot/opt/ompd-go/lib/libomp.so" /usr/"$t"/lib/libc.so.6); do
		[[ -e "/usr/$t/lib/$n" ]] && cp -L "/usr/$t/lib/$n" "$sysroot/lib/"
	done
	interp=$(readelf -lW "$sysroot/opt/ompd-go/bin/libgomp-nested" | sed -n 's/.*Requesting program interpreter: \(.*\)\]/\1/p')
	mkdir -p "$sysroot$(dirname "$interp")"
	[[ -e "$sysroot$interp" ]] || cp -L "/usr/$t/lib/$(basename "$interp")" "$sysroot$interp"

	for c in "${cases[@]}"; do
		d="$w/$c"
		mkdir -p "$d"
		log "$a: $c"
		(
			cd "$d"
			ulimit -c unlimited
			# qemu writes the guest's core, then re-raises the signal:
			# no core of qemu itself.
			echo 0 >/proc/self/coredump_filter
			env -i PATH=/usr/bin:/bin OMP_DEBUG=enabled OMP_DISPLAY_ENV=verbose OMP_STACKSIZE=256K \
				QEMU_STACK_SIZE=1048576 MALLOC_ARENA_MAX=1 OMPD_FIXTURE_ABORT=1 OMPD_FIXTURE_MAPS="$d/maps.txt" \
				OMPD_FIXTURE_HOST_FUTEX="$host_futex" OMPD_FIXTURE_TRUTH="$d/truth.json" \
				OMPD_FIXTURE_STDERR="$d/stderr.txt" OMPD_FIXTURE_TIMEOUT=120 \
				"qemu-${qemu[$a]}" -L "$sysroot" "$sysroot/opt/ompd-go/bin/$c" || true
		) 2>"$d/qemu.txt"
		core=$(ls "$d"/qemu_*.core 2>/dev/null | head -1)
		[[ -n "$core" && -s "$d/truth.json" && -s "$d/maps.txt" ]] || { log "$a $c: no core"; cat "$d/stderr.txt" >&2 || true; exit 1; }
		mv "$core" "$d/core"
		# The files as the program saw them: without the sysroot.
		sed -i "s# $sysroot/# /#" "$d/maps.txt"
		sed -n '/OPENMP DISPLAY ENVIRONMENT BEGIN/,/OPENMP DISPLAY ENVIRONMENT END/p' "$d/stderr.txt" >"$d/display.txt"
		# gdb reads the core a kernel would have written (with NT_FILE,
		# which it needs to relocate the program and find its libraries).
		go run ./internal/fixtures/augment -sysroot "$sysroot" "$d/core" "$d/maps.txt" "$d/truth.json" "$d/core.kernel"
		gdb-multiarch -nx -batch -ex "set sysroot $sysroot" -ex 'set pagination off' \
			-ex 'set backtrace past-main on' -ex 'set backtrace past-entry on' -ex 'set print frame-arguments none' \
			-ex "file $sysroot/opt/ompd-go/bin/$c" -ex "core $d/core.kernel" -ex 'thread apply all bt' \
			>"$d/gdb.txt" 2>&1 </dev/null
		grep -q '^Thread ' "$d/gdb.txt" || { log "$a $c: gdb gave no backtraces"; cat "$d/gdb.txt" >&2; exit 1; }
		mkdir -p "$out/$a/$c"
		cp "$d"/{core,maps.txt,truth.json,display.txt,gdb.txt} "$out/$a/$c/"
	done
	cp -a "$sysroot" "$out/$a/root"

	if [[ -n "$testdata" ]]; then
		td="$testdata/$a"
		rm -rf "$td"
		mkdir -p "$td"
		# The libraries without debug information and with the code no
		# thread stopped in zeroed; the programs as they are.
		go run ./internal/fixtures/augment -trim -sysroot "$sysroot" -out "$w/trimmed" "${cases[@]/#/$w/}"
		find "$w/trimmed/lib" "$w/trimmed/opt/ompd-go/lib" -type f -exec "$t-strip" --strip-debug --keep-section=.debug_frame {} +
		(cd "$w/trimmed" && find . -type f | sort | while read -r f; do
			mkdir -p "$td/root/$(dirname "$f")"
			zstd -q -19 --no-progress "$f" -o "$td/root/$f.zst"
		done)
		for c in "${cases[@]}"; do
			mkdir -p "$td/$c"
			zstd -q -19 --no-progress "$w/$c/core" -o "$td/$c/core.zst"
			cp "$w/$c"/{maps.txt,truth.json,display.txt,gdb.txt} "$td/$c/"
		done
	fi
	log "$a: done"
done
