// Package reflecttest helps tests that must cover every field of a type,
// now and as it grows: Fill sets each one to a value that is not its zero
// value, so that an encoder or decoder that loses a field shows.
package reflecttest
