// Package fuzz holds the native Go fuzz targets that run the daemon's
// parse, prepare, write and validate code together on hostile input
// (issue 10): FuzzApply on raw Ignition bytes, FuzzApplyFields on a
// well-formed config built from fuzzed fields. It has no code of its own.
//
// testdata/fuzz/<target>/ is the committed corpus, run by every `go test`;
// each file is one input in the `go test fuzz v1` format, so adding a case
// is adding a file (a failing input the fuzzer saved there is one). Every
// input the fuzzer found while issue 10 was fixed (hostile paths, owners,
// unit names, NAME_MAX temp names, symlinks) is in that corpus and passes.
package fuzz
