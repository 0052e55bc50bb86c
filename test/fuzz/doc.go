// Package fuzz holds the native Go fuzz targets that run the daemon's
// parse, prepare and write code together on hostile input (issue 10). It
// has no code of its own: see fuzz_test.go and testdata/fuzz/.
package fuzz
