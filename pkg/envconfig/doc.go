// Package envconfig is the one mechanism of Ebb's binaries that read their
// settings from flags and environment variables: a table of Settings (a
// flag, its environment variable, its default, its documentation and a
// parser), Load to apply it with one order of precedence (flag, then
// environment, then default) and one error form, and the parsers the
// tables share.
//
// A Setting's default is the only default of its field: a package that
// owns the options struct also owns its table, and its defaults are the
// table's (Defaults), so a program and a test cannot disagree.
//
// It is pure: the standard library only, no I/O (the environment comes in
// as a function), no state.
package envconfig
