// Command nodeconfd-osfake is the test bed's fake of rpm-ostree and bootc
// (see package osfake); it is installed in a node as those two names.
package main

import (
	"os"

	"github.com/nodeconfd/nodeconfd/test/testbed/osfake"
)

func main() {
	os.Exit(osfake.Main("/", os.Args, os.Stdout, os.Stderr))
}
