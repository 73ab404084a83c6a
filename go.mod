module github.com/ompd-go/ompd

go 1.25.0

require (
	github.com/go-delve/delve v1.27.2
	github.com/ianlancetaylor/demangle v0.0.0-20260724033716-83e58baca724
	github.com/klauspost/compress v1.18.0
	github.com/stretchr/testify v1.12.1
	golang.org/x/arch v0.28.0
	golang.org/x/sys v0.46.0
)

require (
	github.com/cilium/ebpf v0.22.0 // indirect
	github.com/mattn/go-isatty v0.0.20 // indirect
	go.yaml.in/yaml/v3 v3.0.5 // indirect
	golang.org/x/telemetry v0.0.0-20241106142447-58a1122356f5 // indirect
)
