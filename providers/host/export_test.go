package host

// DryRunDirect is dryRunDirect for the tests of package host_test.
var DryRunDirect = dryRunDirect
