# apt-src.sh: sourced by the build scripts. Installs missing packages, and
# fetches Debian source packages
# through a private apt configuration whose deb-src entries are derived from
# this machine's own deb entries (one-line and deb822 formats), so that no
# mirror is ever named in the project.

# apt_install_missing PACKAGE...
#   Installs (apt-get) those of the packages that are not installed yet.
apt_install_missing() {
	local p need=()
	for p in "$@"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || need+=("$p")
	done
	if ((${#need[@]})); then
		echo "apt-src: installing ${need[*]}" >&2
		export DEBIAN_FRONTEND=noninteractive
		apt-get update -qq || true
		apt-get install -y -qq "${need[@]}" >/dev/null
	fi
}

# apt_src_config DIR [SUITE [TYPE]]
#   Writes a private apt configuration under DIR (sources/, lists/). Without
#   SUITE it holds a deb-src entry for every deb entry of the machine. With
#   SUITE (for instance trixie) it holds only the entries of the machine's
#   own release suite (VERSION_CODENAME of /etc/os-release, exactly: not its
#   -updates or -security suites), renamed to SUITE. With TYPE deb, the
#   entries are for binary packages instead of source packages.
apt_src_config() {
	local aptdir="$1" suite="${2:-}" kind="${3:-deb-src}" own="" f
	if [[ -n "$suite" ]]; then
		own=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
		[[ -n "$own" ]] || { echo "apt-src: no VERSION_CODENAME in /etc/os-release" >&2; return 1; }
	fi
	mkdir -p "$aptdir/sources" "$aptdir/lists/partial" "$aptdir/archives/partial"
	: >"$aptdir/sources/src.list"
	: >"$aptdir/sources/src.sources"
	shopt -s nullglob
	for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
		[[ -f "$f" ]] || continue
		if [[ -z "$suite" ]]; then
			grep -E '^[[:space:]]*deb[[:space:]]' "$f" | sed -E "s/^[[:space:]]*deb[[:space:]]/$kind /" >>"$aptdir/sources/src.list" || true
		else
			# deb [options] URI SUITE COMPONENTS...
			awk -v own="$own" -v suite="$suite" -v kind="$kind" '
				$1 == "deb" {
					i = 2
					if ($i ~ /^\[/) { while (i <= NF && $i !~ /\]$/) i++; i++ }
					if ($(i+1) != own) next
					$1 = kind; $(i+1) = suite; print
				}' "$f" >>"$aptdir/sources/src.list"
		fi
	done
	for f in /etc/apt/sources.list.d/*.sources; do
		if [[ -z "$suite" ]]; then
			sed -E "s/^Types:.*/Types: $kind/" "$f" >>"$aptdir/sources/src.sources"
		else
			awk -v own="$own" -v suite="$suite" -v kind="$kind" '
				BEGIN { RS = ""; ORS = "\n\n" }
				{
					n = split($0, lines, "\n"); keep = 0; out = ""
					for (j = 1; j <= n; j++) {
						l = lines[j]
						if (l ~ /^Suites:/) {
							m = split(substr(l, 8), s, /[[:space:]]+/)
							for (k = 1; k <= m; k++) if (s[k] == own) keep = 1
							l = "Suites: " suite
						} else if (l ~ /^Types:/) {
							l = "Types: " kind
						}
						out = out l "\n"
					}
					if (keep) print out
				}' "$f" >>"$aptdir/sources/src.sources"
		fi
		printf '\n' >>"$aptdir/sources/src.sources"
	done
	shopt -u nullglob
}

# apt_bin_config DIR [SUITE]
#   Like apt_src_config, but the entries are binary (deb) ones: for
#   `apt-get download` of packages of the machine's suites, or of SUITE,
#   without touching the machine's own apt state.
apt_bin_config() {
	apt_src_config "$@"
	sed -i -E 's/^deb-src /deb /' "$1/sources/src.list"
	sed -i -E 's/^Types: deb-src/Types: deb/' "$1/sources/src.sources"
}

# apt_src_opts DIR: prints nothing; sets the array APT_SRC_OPTS for apt-get
# to use the configuration apt_src_config wrote under DIR.
apt_src_opts() {
	local aptdir="$1"
	APT_SRC_OPTS=(-o "Dir::Etc::SourceParts=$aptdir/sources" -o "Dir::Etc::SourceList=/dev/null"
		-o "Dir::State::Lists=$aptdir/lists" -o "Dir::Cache::archives=$aptdir/archives")
}

# apt_src_fetch DIR WORKDIR PACKAGE[/SUITE]
#   Updates the configuration's lists and downloads the source package into
#   WORKDIR (apt-get source --download-only).
apt_src_fetch() {
	local aptdir="$1" work="$2" pkg="$3"
	apt_src_opts "$aptdir"
	apt-get "${APT_SRC_OPTS[@]}" update -qq
	(cd "$work" && apt-get "${APT_SRC_OPTS[@]}" source --download-only "$pkg" >/dev/null)
}

# apt_src_verify FILE SHA256
#   Checks that the downloaded source tarball FILE is there and has the
#   pinned SHA-256; if not, says why (through the caller's log function),
#   removes FILE and fails.
apt_src_verify() {
	local file="$1" want="$2" got
	[[ -f "$file" ]] || { log "source tarball ${file##*/} not found after download"; return 1; }
	got=$(sha256sum "$file" | cut -d' ' -f1)
	if [[ "$got" != "$want" ]]; then
		log "checksum mismatch for ${file##*/}: got $got, want $want"
		rm -f "$file"
		return 1
	fi
	log "source checksum ok ($got)"
}
