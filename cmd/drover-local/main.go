// Command drover-local runs drover's local cluster: `up`/`down` in the background (make local-up,
// make local-down), `run` in the foreground (make run). See internal/localcluster.
package main

import (
	"os"

	"github.com/drover-dev/drover/internal/localcluster/cli"
)

func main() { os.Exit(cli.Main(os.Args[1:])) }
