// Package fuzz holds the native Go fuzz targets that run the daemon's
// parse, prepare, write and validate code together on hostile input
// (issue 10): FuzzApply on raw Ignition bytes, FuzzApplyFields on a
// well-formed config built from fuzzed fields. It has no code of its own.
//
// testdata/fuzz/<target>/ is the committed corpus, run by every `go test`;
// each file is one input in the `go test fuzz v1` format, so adding a case
// is adding a file (a failing input the fuzzer saved there is one). The
// inputs in testdata/failing-on-main/<target>/ still fail where the fix of
// their class has not landed; move them into testdata/fuzz/ once it has.
package fuzz
