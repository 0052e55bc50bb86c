package main

// version is the release this binary was built from, set at build time by
// the Makefile (-ldflags "-X main.version=$(cat VERSION)"); the DaemonSet's
// image tag is the same release.
var version = "dev"

// revision is the source commit, set at build time by the Makefile
// (-X main.revision); see buildRevision.
var revision = ""
