module github.com/tetherlm/tether

go 1.24

tool (
	github.com/go-python/gopy
	golang.org/x/tools/cmd/goimports
)

require (
	github.com/daulet/tokenizers v1.22.1
	github.com/go-python/gopy v0.4.10
	github.com/stretchr/testify v1.12.1
)

require (
	github.com/gonuts/commander v0.1.0 // indirect
	github.com/gonuts/flag v0.1.0 // indirect
	github.com/pkg/errors v0.9.1 // indirect
	go.yaml.in/yaml/v3 v3.0.5 // indirect
	golang.org/x/mod v0.23.0 // indirect
	golang.org/x/sync v0.11.0 // indirect
	golang.org/x/tools v0.30.0 // indirect
)
